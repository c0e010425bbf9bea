package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// SecureMetrics serves /metrics (and /metrics/hooks) over HTTPS to callers
// that the API server vouches for, as kubebuilder's scaffolds do with
// controller-runtime's filters: the bearer token is checked by a
// TokenReview, and its user's right to GET the path (a non-resource URL)
// by a SubjectAccessReview. docs/decisions.md says why the reviews are
// written here rather than taken from k8s.io/apiserver.
type SecureMetrics struct {
	// Address is host:port of the HTTPS listener (":8443").
	Address string
	// CertFile and KeyFile are the serving certificate and key (PEM);
	// empty makes a self-signed certificate when the listener starts.
	CertFile, KeyFile string
	// Client asks the API server for the reviews (the dynamic client the
	// operator has: the typed clientset would add every API group's types
	// to the binary for two requests).
	Client dynamic.Interface
}

// reviewTimeout bounds the two reviews of one request.
const reviewTimeout = 10 * time.Second

// startSecure serves the metrics routes of opts on sm's HTTPS listener
// until ctx ends, and returns its address.
func startSecure(ctx context.Context, sm *SecureMetrics, opts Options, log logrus.FieldLogger) (string, error) {
	cert, err := sm.certificate()
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", sm.Address)
	if err != nil {
		return "", fmt.Errorf("--metrics-secure-address %s: %w", sm.Address, err)
	}
	mux := http.NewServeMux()
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", sm.authorize(opts.Metrics, log))
	}
	if opts.HookMetrics != nil {
		mux.Handle("GET /metrics/hooks", sm.authorize(opts.HookMetrics, log))
	}
	tlsLn := tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	serve(ctx, tlsLn, mux, limits(opts, false), log)
	return ln.Addr().String(), nil
}

func (sm *SecureMetrics) certificate() (tls.Certificate, error) {
	if sm.CertFile != "" || sm.KeyFile != "" {
		if sm.CertFile == "" || sm.KeyFile == "" {
			return tls.Certificate{}, errors.New("--metrics-cert and --metrics-key go together: set both, or neither for a self-signed certificate")
		}
		cert, err := tls.LoadX509KeyPair(sm.CertFile, sm.KeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("--metrics-cert %s, --metrics-key %s: %w", sm.CertFile, sm.KeyFile, err)
		}
		return cert, nil
	}
	return selfSigned()
}

// selfSigned makes a certificate for the listener, valid for a year; a
// scraper that does not pin it sets insecureSkipVerify, as kubebuilder's
// ServiceMonitor does.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "hook-operator metrics"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// authorize answers 401 without a token the API server accepts, 403 when
// its user may not GET the path, and passes the request to h otherwise.
func (sm *SecureMetrics) authorize(h http.Handler, log logrus.FieldLogger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			http.Error(w, "Unauthorized: send a ServiceAccount token as Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
		defer cancel()
		user, err := sm.authenticate(ctx, token)
		if err != nil {
			// The token is never logged, only a short hash to tell callers apart.
			log.WithError(err).WithField("token", tokenID(token)).Warn("metrics: a token was not authenticated")
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		allowed, err := sm.authorized(ctx, user, r.URL.Path)
		if err != nil {
			log.WithError(err).WithField("user", user.Username).Warn("metrics: the SubjectAccessReview failed")
			http.Error(w, "could not authorize the request", http.StatusInternalServerError)
			return
		}
		if !allowed {
			http.Error(w, fmt.Sprintf("Forbidden: user %q may not get %s (bind it to a ClusterRole with nonResourceURLs [%s], verbs [get])", user.Username, r.URL.Path, r.URL.Path), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (sm *SecureMetrics) authenticate(ctx context.Context, token string) (authnv1.UserInfo, error) {
	var tr authnv1.TokenReview
	err := sm.create(ctx, tokenReviews, &authnv1.TokenReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"},
		Spec:     authnv1.TokenReviewSpec{Token: token},
	}, &tr)
	if err != nil {
		return authnv1.UserInfo{}, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		msg := tr.Status.Error
		if msg == "" {
			msg = "not authenticated"
		}
		return authnv1.UserInfo{}, errors.New(msg)
	}
	return tr.Status.User, nil
}

func (sm *SecureMetrics) authorized(ctx context.Context, user authnv1.UserInfo, path string) (bool, error) {
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	var res authzv1.SubjectAccessReview
	err := sm.create(ctx, accessReviews, &authzv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
		Spec: authzv1.SubjectAccessReviewSpec{
			User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
			NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: "get"},
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
func (sm *SecureMetrics) create(ctx context.Context, gvr schema.GroupVersionResource, in, out any) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		return err
	}
	got, err := sm.Client.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, out)
}

// tokenID is a short hash of a token, for logs.
func tokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return fmt.Sprintf("sha256:%x", sum[:4])
}
