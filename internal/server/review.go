package server

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/listen"
)

// How the secure metrics listener spares the API server: each answer is
// remembered (an authenticated token for authenticatedTTL, or less when
// the token expires sooner; a user allowed to get a path for allowedTTL;
// any refusal for deniedTTL), at most reviewCacheSize answers of each
// kind, and the reviews not answered from memory are sent at reviewRate a
// second at most (a burst of reviewBurst), shared among the callers'
// sources (see reviewBudget): a request over its source's share or the
// whole is answered 429 without asking. A caller repeating one token,
// good or bad, costs one TokenReview per TTL; callers with ever new
// tokens cost reviewRate reviews a second. The price: a token revoked, or a ClusterRoleBinding
// removed, still reads /metrics for up to authenticatedTTL or allowedTTL,
// as with kube-apiserver's own webhook authenticator and authorizer
// caches (2 and 5 minutes by default).
const (
	authenticatedTTL = 2 * time.Minute
	allowedTTL       = time.Minute
	deniedTTL        = 10 * time.Second
	reviewCacheSize  = 4096
	reviewRate       = 10
	reviewBurst      = 20
)

// errThrottled is the answer to a review over the rate limit.
var errThrottled = errors.New("too many reviews to ask the API server for")

// reviewer checks the callers of the secure metrics listener (see
// SecureMetrics): each token with a TokenReview, and its user's right to
// the path with a SubjectAccessReview, answers remembered and reviews
// rate-limited as the constants above say, warnings sampled.
type reviewer struct {
	client dynamic.Interface
	tokens *reviewCache[tokenAnswer]
	access *reviewCache[bool]
	budget *reviewBudget
	// reviewed is SecureMetrics.Reviewed.
	reviewed func(review, result string)
	// warn samples the warnings of refused callers: a flood of bad
	// tokens makes a few lines, with the count of those held back.
	warn *listen.Sampler
	log  logrus.FieldLogger
	now  func() time.Time
}

func newReviewer(client dynamic.Interface, reviewed func(review, result string), log logrus.FieldLogger) *reviewer {
	return &reviewer{
		client:   client,
		tokens:   newReviewCache[tokenAnswer](reviewCacheSize),
		access:   newReviewCache[bool](reviewCacheSize),
		budget:   newReviewBudget(time.Now),
		reviewed: reviewed,
		warn:     listen.NewSampler(5, 10*time.Second),
		log:      log,
		now:      time.Now,
	}
}

// authorize answers 401 without a token the API server accepts, 403 when
// its user may not GET the path, 429 when the answer is not remembered and
// the API server has had its share of reviews, and passes the request to
// h otherwise.
func (rv *reviewer) authorize(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			http.Error(w, "Unauthorized: send a ServiceAccount token as Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
		defer cancel()
		// The token is never logged, only a short hash to tell callers apart.
		log := rv.log.WithField("token", tokenID(token))
		source := sourceOf(r.RemoteAddr)
		ans, err := rv.authenticate(ctx, source, token)
		switch {
		case errors.Is(err, errThrottled):
			rv.throttled(w, log)
			return
		case err != nil:
			rv.warn.Log(log.WithError(err), logrus.WarnLevel, "metrics: the TokenReview failed")
			http.Error(w, "could not authenticate the request", http.StatusInternalServerError)
			return
		case !ans.Authenticated:
			rv.warn.Log(log.WithField("error", ans.Why), logrus.WarnLevel, "metrics: a token was not authenticated")
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		log = log.WithField("user", ans.User.Username)
		allowed, err := rv.authorized(ctx, source, ans.User, r.URL.Path)
		switch {
		case errors.Is(err, errThrottled):
			rv.throttled(w, log)
			return
		case err != nil:
			rv.warn.Log(log.WithError(err), logrus.WarnLevel, "metrics: the SubjectAccessReview failed")
			http.Error(w, "could not authorize the request", http.StatusInternalServerError)
			return
		case !allowed:
			http.Error(w, fmt.Sprintf("Forbidden: user %q may not get %s (bind it to a ClusterRole with nonResourceURLs [%s], verbs [get])", ans.User.Username, r.URL.Path, r.URL.Path), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (rv *reviewer) throttled(w http.ResponseWriter, log logrus.FieldLogger) {
	rv.warn.Log(log, logrus.WarnLevel, "metrics: too many reviews to ask the API server for; answered 429")
	w.Header().Set("Retry-After", "1")
	http.Error(w, "Too Many Requests: too many tokens to review at once; try again", http.StatusTooManyRequests)
}

// tokenAnswer is what a TokenReview said of a token.
type tokenAnswer struct {
	Authenticated bool
	User          userInfo
	// Why the token was not authenticated.
	Why string
}

// authenticate returns what the API server says of token: remembered, or
// asked with a TokenReview charged to source's budget.
func (rv *reviewer) authenticate(ctx context.Context, source, token string) (tokenAnswer, error) {
	result := "cached"
	ans, _, err := rv.tokens.lookup(ctx, sha256.Sum256([]byte(token)), func() (tokenAnswer, time.Duration, error) {
		if !rv.budget.allow(source) {
			return tokenAnswer{}, 0, errThrottled
		}
		// The answer is remembered for every caller: the one asking
		// going away does not cancel it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reviewTimeout)
		defer cancel()
		ans, err := rv.tokenReview(ctx, token)
		switch {
		case err != nil:
			result = "error"
			return ans, 0, err
		case !ans.Authenticated:
			result = "denied"
			return ans, deniedTTL, nil
		}
		result = "allowed"
		return ans, authenticatedTTLOf(token, rv.now()), nil
	})
	if errors.Is(err, errThrottled) {
		result = "throttled"
	}
	rv.count("token", result)
	return ans, err
}

// authorized says whether user may GET path: remembered, or asked with a
// SubjectAccessReview charged to source's budget.
func (rv *reviewer) authorized(ctx context.Context, source string, user userInfo, path string) (bool, error) {
	result := "cached"
	allowed, _, err := rv.access.lookup(ctx, accessKey(user, path), func() (bool, time.Duration, error) {
		if !rv.budget.allow(source) {
			return false, 0, errThrottled
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reviewTimeout)
		defer cancel()
		allowed, err := rv.accessReview(ctx, user, path)
		switch {
		case err != nil:
			result = "error"
			return false, 0, err
		case !allowed:
			result = "denied"
			return false, deniedTTL, nil
		}
		result = "allowed"
		return true, allowedTTL, nil
	})
	if errors.Is(err, errThrottled) {
		result = "throttled"
	}
	rv.count("access", result)
	return allowed, err
}

func (rv *reviewer) count(review, result string) {
	if rv.reviewed != nil {
		rv.reviewed(review, result)
	}
}

func (rv *reviewer) tokenReview(ctx context.Context, token string) (tokenAnswer, error) {
	var tr tokenReview
	err := rv.create(ctx, tokenReviews, &tokenReview{
		APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview",
		Spec: tokenReviewSpec{Token: token},
	}, &tr)
	if err != nil {
		return tokenAnswer{}, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		why := tr.Status.Error
		if why == "" {
			why = "not authenticated"
		}
		return tokenAnswer{Why: why}, nil
	}
	return tokenAnswer{Authenticated: true, User: tr.Status.User}, nil
}

func (rv *reviewer) accessReview(ctx context.Context, user userInfo, path string) (bool, error) {
	var res subjectAccessReview
	err := rv.create(ctx, accessReviews, &subjectAccessReview{
		APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview",
		Spec: subjectAccessReviewSpec{
			User: user.Username, UID: user.UID, Groups: user.Groups, Extra: user.Extra,
			NonResourceAttributes: &nonResourceAttributes{Path: path, Verb: "get"},
		},
	}, &res)
	if err != nil {
		return false, err
	}
	return res.Status.Allowed, nil
}

var (
	tokenReviews  = schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "tokenreviews"}
	accessReviews = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}
)

// create creates the review in and reads the answer into out.
func (rv *reviewer) create(ctx context.Context, gvr schema.GroupVersionResource, in, out any) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		return err
	}
	got, err := rv.client.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, out)
}

// accessKey is the key of a SubjectAccessReview's answer: the SHA-256 of
// everything the review asks about, each field prefixed with its length
// so that no two different users and paths make the same key.
func accessKey(user userInfo, path string) [32]byte {
	h := sha256.New()
	field := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s)) + ":" + s))
	}
	field(user.Username)
	field(user.UID)
	field(strconv.Itoa(len(user.Groups)))
	for _, g := range user.Groups {
		field(g)
	}
	keys := make([]string, 0, len(user.Extra))
	for k := range user.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field(k)
		field(strconv.Itoa(len(user.Extra[k])))
		for _, v := range user.Extra[k] {
			field(v)
		}
	}
	field(path)
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// authenticatedTTLOf is how long the answer for an authenticated token
// may be remembered: authenticatedTTL, or less where the token says it
// expires sooner. ServiceAccount tokens are JWTs with an exp claim; the
// API server has just vouched for the token, so its claims are read
// without checking the signature, only to forget the answer in time.
func authenticatedTTLOf(token string, now time.Time) time.Duration {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return authenticatedTTL
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return authenticatedTTL
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return authenticatedTTL
	}
	return min(authenticatedTTL, time.Unix(int64(*claims.Exp), 0).Sub(now))
}
