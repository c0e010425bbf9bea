package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// One source spending its budget leaves the others theirs: a source gets
// its burst, then sourceReviewRate a second; another source still gets
// reviews at once.
func TestReviewBudgetIsPerSource(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := newReviewBudget(func() time.Time { return now })
	got := 0
	for range 100 {
		if b.allow("10.0.0.2") {
			got++
		}
	}
	if got != sourceReviewBurst {
		t.Errorf("one source got %d reviews at once, want its burst of %d", got, sourceReviewBurst)
	}
	if !b.allow("10.0.0.1") {
		t.Error("another source was refused its first review")
	}
	now = now.Add(time.Second)
	got = 0
	for range 100 {
		if b.allow("10.0.0.2") {
			got++
		}
	}
	if got != sourceReviewRate {
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
	spray := func() int {
		sent := 0
		for range 10 {
			for s := range 10 {
				if b.allow(fmt.Sprintf("10.0.0.%d", 10+s)) {
					sent++
				}
			}
		}
		return sent
	}
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
	fresh := 0
	for i := range 20 {
		if b.allow(fmt.Sprintf("10.0.1.%d", i)) {
			fresh++
		}
	}
	if fresh != reviewReserve {
		t.Errorf("new sources got %d reviews, want the reserve's %d", fresh, reviewReserve)
	}
	now = now.Add(10 * time.Second)
	total := 0
	for i := range 1000 {
		if b.allow(fmt.Sprintf("10.0.2.%d", i)) {
			total++
		}
	}
	if total != reviewBurst {
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
	get := func(from, token string) int {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.RemoteAddr = from
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
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
