package server

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// fakeAPI answers TokenReviews (tokens it knows are their user's) and
// SubjectAccessReviews (users it allows), and counts them.
type fakeAPI struct {
	tokens  map[string]string // token: username
	allowed map[string]bool   // username

	tokenReviews, accessReviews atomic.Int32
}

func (f *fakeAPI) client() *fake.FakeDynamicClient {
	c := fake.NewSimpleDynamicClient(runtime.NewScheme())
	c.PrependReactor("create", "tokenreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		f.tokenReviews.Add(1)
		obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		token, _, _ := unstructured.NestedString(obj.Object, "spec", "token")
		if user, ok := f.tokens[token]; ok {
			obj.Object["status"] = map[string]any{"authenticated": true, "user": map[string]any{"username": user, "groups": []any{"g"}}}
		} else {
			obj.Object["status"] = map[string]any{"authenticated": false, "error": "invalid bearer token"}
		}
		return true, obj, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		f.accessReviews.Add(1)
		obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		user, _, _ := unstructured.NestedString(obj.Object, "spec", "user")
		obj.Object["status"] = map[string]any{"allowed": f.allowed[user]}
		return true, obj, nil
	})
	return c
}

// results counts SecureMetrics.Reviewed's calls by "review/result".
type results struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *results) add(review, result string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[review+"/"+result]++
}

func (r *results) get(k string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[k]
}

func newTestReviewer(t *testing.T, api *fakeAPI) (http.Handler, *results, *logtest.Hook) {
	t.Helper()
	log, hook := logtest.NewNullLogger()
	res := &results{n: map[string]int{}}
	rv := newReviewer(api.client(), res.add, log)
	h := rv.authorize(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "m 1") }))
	return h, res, hook
}

// metricsGet asks h for /metrics with token, from httptest's client
// address.
func metricsGet(h http.Handler, token string) *httptest.ResponseRecorder {
	return metricsGetFrom(h, "192.0.2.1:1234", token)
}

// metricsGetFrom asks h for /metrics with token, from the client address
// from.
func metricsGetFrom(h http.Handler, from, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.RemoteAddr = from
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func warnings(hook *logtest.Hook) int {
	n := 0
	for _, e := range hook.AllEntries() {
		if e.Level <= logrus.WarnLevel {
			n++
		}
	}
	return n
}

// 2,000 requests with one bad token, 20 at a time, cost one TokenReview
// and a few lines of log; a good token's answers are remembered too, the
// SubjectAccessReview's as well.
func TestReviewsAreRemembered(t *testing.T) {
	api := &fakeAPI{tokens: map[string]string{"good": "reader", "other": "nobody"}, allowed: map[string]bool{"reader": true}}
	h, res, hook := newTestReviewer(t, api)
	var wg sync.WaitGroup
	var bad atomic.Int32
	for range 20 {
		wg.Go(func() {
			for range 100 {
				if rec := metricsGet(h, "bad-token"); rec.Code != http.StatusUnauthorized {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Errorf("%d of 2000 requests with a bad token not answered 401", bad.Load())
	}
	if n := api.tokenReviews.Load(); n != 1 {
		t.Errorf("2000 requests with one bad token sent %d TokenReviews, want 1", n)
	}
	if n := warnings(hook); n > 6 {
		t.Errorf("2000 requests with one bad token logged %d warnings, want a few (sampled)", n)
	}
	for _, e := range hook.AllEntries() {
		if s, _ := e.String(); strings.Contains(s, "bad-token") {
			t.Errorf("the token was logged: %s", s)
		}
	}
	if res.get("token/denied") != 1 || res.get("token/cached") != 1999 {
		t.Errorf("counted %v, want token/denied 1 and token/cached 1999", res.n)
	}
	for range 50 {
		if rec := metricsGet(h, "good"); rec.Code != http.StatusOK {
			t.Fatalf("good token: %d %s", rec.Code, rec.Body)
		}
		if rec := metricsGet(h, "other"); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"nobody"`) {
			t.Fatalf("a user without the right: %d %s", rec.Code, rec.Body)
		}
	}
	if tr, sar := api.tokenReviews.Load(), api.accessReviews.Load(); tr != 3 || sar != 2 {
		t.Errorf("100 requests of two users made %d TokenReviews and %d SubjectAccessReviews, want 3 (with the bad one) and 2", tr, sar)
	}
	if res.get("access/allowed") != 1 || res.get("access/denied") != 1 || res.get("access/cached") != 98 {
		t.Errorf("counted %v", res.n)
	}
}

// Ever new tokens cost the API server the rate limit's reviews, no more:
// the others are answered 429 without asking, while a token whose answer
// is remembered is still served.
func TestReviewsAreRateLimited(t *testing.T) {
	api := &fakeAPI{tokens: map[string]string{"good": "reader"}, allowed: map[string]bool{"reader": true}}
	h, res, hook := newTestReviewer(t, api)
	if rec := metricsGet(h, "good"); rec.Code != http.StatusOK {
		t.Fatalf("good token: %d", rec.Code)
	}
	start := time.Now()
	codes := map[int]int{}
	for i := range 500 {
		rec := metricsGet(h, fmt.Sprintf("bad-%d", i))
		codes[rec.Code]++
		if rec.Code == http.StatusTooManyRequests && rec.Header().Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		if i%50 == 0 {
			if rec := metricsGet(h, "good"); rec.Code != http.StatusOK {
				t.Errorf("a remembered good token while throttled: %d", rec.Code)
			}
		}
	}
	elapsed := time.Since(start)
	limit := int32(reviewBurst + reviewRate*elapsed.Seconds() + 1)
	if n := api.tokenReviews.Load(); n > limit {
		t.Errorf("500 new tokens in %s sent %d TokenReviews, want at most %d (burst %d, %d a second)", elapsed, n, limit, reviewBurst, reviewRate)
	}
	if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusTooManyRequests]+codes[http.StatusUnauthorized] != 500 {
		t.Errorf("answers %v, want 401 and 429 only, some 429", codes)
	}
	if res.get("token/throttled") != codes[http.StatusTooManyRequests] {
		t.Errorf("counted %d throttled, answered %d 429", res.get("token/throttled"), codes[http.StatusTooManyRequests])
	}
	if n := warnings(hook); n > 6 {
		t.Errorf("%d warnings, want a few (sampled)", n)
	}
}

func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(claims)) + ".c2ln"
}

// An authenticated token is remembered 2 minutes, or until it expires
// when it says so sooner.
func TestAuthenticatedTTLFollowsTheTokenExpiry(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		token string
		want  time.Duration
	}{
		{"opaque-token", authenticatedTTL},
		{jwt(`{"sub":"x"}`), authenticatedTTL},
		{jwt(`{"exp":1800000030}`), 30 * time.Second},
		{jwt(`{"exp":1800003600}`), authenticatedTTL},
		{jwt(`{"exp":1799999990}`), -10 * time.Second},
		{"a.!!!.c", authenticatedTTL},
	} {
		if got := authenticatedTTLOf(tc.token, now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.token, got, tc.want)
		}
	}
}

// Two reviews share an answer only when they ask the same of the same
// user: name, UID, groups, extra and path all count.
func TestAccessKeyTellsUsersApart(t *testing.T) {
	base := userInfo{Username: "u", UID: "1", Groups: []string{"a", "b"}, Extra: map[string][]string{"k": {"v"}, "l": {"w"}}}
	same := base
	same.Extra = map[string][]string{"l": {"w"}, "k": {"v"}}
	if accessKey(base, "/metrics") != accessKey(same, "/metrics") {
		t.Error("the same user made two keys")
	}
	variants := []userInfo{
		{Username: "u2", UID: "1", Groups: base.Groups, Extra: base.Extra},
		{Username: "u", UID: "2", Groups: base.Groups, Extra: base.Extra},
		{Username: "u", UID: "1", Groups: []string{"a"}, Extra: base.Extra},
		{Username: "u", UID: "1", Groups: []string{"ab"}, Extra: base.Extra},
		{Username: "u", UID: "1", Groups: base.Groups},
	}
	seen := map[[32]byte]bool{accessKey(base, "/metrics"): true, accessKey(base, "/metrics/hooks"): true}
	for _, v := range variants {
		k := accessKey(v, "/metrics")
		if seen[k] {
			t.Errorf("%+v shares a key", v)
		}
		seen[k] = true
	}
}

// allowed asks b n times, the i-th time for source(i), and counts the
// reviews it allows.
func allowed(b *reviewBudget, n int, source func(i int) string) int {
	got := 0
	for i := range n {
		if b.allow(source(i)) {
			got++
		}
	}
	return got
}

// One source spending its budget leaves the others theirs: a source gets
// its burst, then sourceReviewRate a second; another source still gets
// reviews at once.
func TestReviewBudgetIsPerSource(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := newReviewBudget(func() time.Time { return now })
	if got := allowed(b, 100, func(int) string { return "10.0.0.2" }); got != sourceReviewBurst {
		t.Errorf("one source got %d reviews at once, want its burst of %d", got, sourceReviewBurst)
	}
	if !b.allow("10.0.0.1") {
		t.Error("another source was refused its first review")
	}
	now = now.Add(time.Second)
	if got := allowed(b, 100, func(int) string { return "10.0.0.2" }); got != sourceReviewRate {
		t.Errorf("a second later the spent source got %d reviews, want %d", got, sourceReviewRate)
	}
}

// Many sources together get the shared budget, no more, and the last
// reviewReserve of it go to sources that have spent little of their own.
// (The figures below hold for reviewRate 10 and reviewReserve 5.)
func TestReviewBudgetKeepsAReserveForNewSources(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := newReviewBudget(func() time.Time { return now })
	// Ten sprayers, asking again and again for three seconds: past the
	// first second their own budgets are spent, and they stop at the
	// reserve.
	spray := func() int { return allowed(b, 100, func(i int) string { return fmt.Sprintf("10.0.0.%d", 10+i%10) }) }
	if sent := spray(); sent != reviewBurst {
		t.Errorf("new sprayers got %d reviews at once, want the shared burst of %d", sent, reviewBurst)
	}
	// The first second refills the reserve, the next ones go to them.
	for i, want := range []int{reviewRate - reviewReserve, reviewRate} {
		now = now.Add(time.Second)
		if sent := spray(); sent != want {
			t.Errorf("second %d: spent sprayers got %d reviews, want %d", i+1, sent, want)
		}
	}
	if fresh := allowed(b, 20, func(i int) string { return fmt.Sprintf("10.0.1.%d", i) }); fresh != reviewReserve {
		t.Errorf("new sources got %d reviews, want the reserve's %d", fresh, reviewReserve)
	}
	now = now.Add(10 * time.Second)
	if total := allowed(b, 1000, func(i int) string { return fmt.Sprintf("10.0.2.%d", i) }); total != reviewBurst {
		t.Errorf("once refilled, all sources together got %d reviews at once, want the shared burst of %d", total, reviewBurst)
	}
}

// The sources remembered stay within reviewSources however many there
// are; the full ones go first.
func TestReviewBudgetRemembersBoundedSources(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := newReviewBudget(func() time.Time { return now })
	for i := range 3 * reviewSources {
		b.allow(fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255))
		now = now.Add(time.Millisecond)
	}
	if n := len(b.bySource); n > reviewSources {
		t.Errorf("%d sources remembered, want at most %d", n, reviewSources)
	}
}

// The reviewer charges each request's reviews to its client's address:
// a flood of new tokens from one address leaves another's new token its
// review.
func TestReviewsAreChargedToTheSource(t *testing.T) {
	api := &fakeAPI{tokens: map[string]string{"scraper": "reader"}, allowed: map[string]bool{"reader": true}}
	h, _, _ := newTestReviewer(t, api)
	get := func(from, token string) int { return metricsGetFrom(h, from, token).Code }
	codes := map[int]int{}
	for i := range 200 {
		codes[get("10.0.0.2:4000", fmt.Sprintf("bad-%d", i))]++
	}
	if codes[http.StatusTooManyRequests] == 0 {
		t.Fatalf("the sprayer's answers %v: none throttled", codes)
	}
	if code := get("10.0.0.1:5000", "scraper"); code != http.StatusOK {
		t.Errorf("a new scraper from another address after the spray: %d, want 200", code)
	}
}

func TestSourceOf(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.1:80": "10.0.0.1", "[fd00::1]:443": "fd00::1", "@": "@"} {
		if got := sourceOf(in); got != want {
			t.Errorf("sourceOf(%q) = %q, want %q", in, got, want)
		}
	}
}
