package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// applyVia applies a ValidatingWebhookConfiguration through a dynamic
// client of cfg and returns the client's error, as registration gets it.
func applyVia(t *testing.T, cfg *rest.Config) error {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": map[string]any{"name": "hooks"},
	}}
	_, err = dyn.Resource(configurationResources[false]).Apply(context.Background(), "hooks", u, metav1.ApplyOptions{FieldManager: FieldManager})
	if err == nil {
		t.Fatal("the apply succeeded; the test wants its error")
	}
	return err
}

// answering returns a client config for an API server that answers every
// request with a Status of code.
func answering(t *testing.T, code int) *rest.Config {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: int32(code), Reason: metav1.StatusReason(http.StatusText(code)), Message: fmt.Sprintf("answered %d", code)})
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}} // a test server
}

// Which registration errors are tried again: those of an API server out
// of reach, failing, overloaded or in a race, made by a real client
// against a real listener; not a certificate that is not trusted, RBAC,
// a configuration refused, or the operator's own checks.
func TestTransientClassifiesRegistrationErrors(t *testing.T) {
	// A listener that takes connections and closes them at once, and one
	// that takes them and never answers.
	closing := acceptEach(t, func(c net.Conn) { c.Close() })
	var held []net.Conn
	var mu sync.Mutex
	silent := acceptEach(t, func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, c)
	})
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	untrusted := httptest.NewTLSServer(http.NotFoundHandler())
	defer untrusted.Close()

	insecure := rest.TLSClientConfig{Insecure: true} // test servers
	for _, c := range []struct {
		name  string
		err   error
		retry bool
		asked time.Duration
	}{
		{"connection refused", applyVia(t, &rest.Config{Host: "https://" + freeAddress(t), TLSClientConfig: insecure}), true, 0},
		{"connection closed", applyVia(t, &rest.Config{Host: "https://" + closing, TLSClientConfig: insecure}), true, 0},
		{"timeout", applyVia(t, &rest.Config{Host: "https://" + silent, TLSClientConfig: insecure, Timeout: 200 * time.Millisecond}), true, 0},
		{"500", applyVia(t, answering(t, 500)), true, 0},
		{"503", applyVia(t, answering(t, 503)), true, 0},
		{"504", applyVia(t, answering(t, 504)), true, 0},
		{"409", applyVia(t, answering(t, 409)), true, 0},
		{"429", applyVia(t, answering(t, 429)), true, 0},
		{"429 with Retry-After", apierrors.NewTooManyRequests("slow down", 7), true, 7 * time.Second},
		{"wrapped", fmt.Errorf("apply ValidatingWebhookConfiguration hooks: %w", apierrors.NewServiceUnavailable("etcd")), true, 0},
		{"untrusted certificate", applyVia(t, &rest.Config{Host: untrusted.URL}), false, 0},
		{"401", applyVia(t, answering(t, 401)), false, 0},
		{"403", applyVia(t, answering(t, 403)), false, 0},
		{"404", applyVia(t, answering(t, 404)), false, 0},
		{"422", applyVia(t, answering(t, 422)), false, 0},
		{"400", applyVia(t, answering(t, 400)), false, 0},
		{"listen", &net.OpError{Op: "listen", Net: "tcp", Err: errors.New("bind: address already in use")}, false, 0},
		{"missing CA file", missingFile(t), false, 0},
		{"configuration missing in existing mode", errors.New("ValidatingWebhookConfiguration hooks does not exist: with --webhook-configuration-mode=existing ..."), false, 0},
		{"nil", nil, false, 0},
	} {
		retry, asked := transient(c.err)
		if retry != c.retry || asked != c.asked {
			t.Errorf("%s (%v): transient %v, asked %s; want %v, %s", c.name, c.err, retry, asked, c.retry, c.asked)
		}
	}
}

// acceptEach listens on a new port until the test ends, and hands each
// connection it accepts to handle; it returns the address.
func acceptEach(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			handle(c)
		}
	}()
	return ln.Addr().String()
}

// missingFile returns the error of reading a file that does not exist.
func missingFile(t *testing.T) error {
	_, err := os.ReadFile(filepath.Join(t.TempDir(), "ca.crt"))
	return fmt.Errorf("the CA bundle for the webhook registrations (--webhook-ca, or --conversion-webhook-ca): %w", err)
}

// The wait before the next attempt: the backoff, or the API server's
// Retry-After when longer, never past the time allowed.
func TestNextWait(t *testing.T) {
	for _, c := range []struct{ backoff, asked, left, want time.Duration }{
		{time.Second, 0, time.Minute, time.Second},
		{time.Second, 7 * time.Second, time.Minute, 7 * time.Second},
		{8 * time.Second, 2 * time.Second, time.Minute, 8 * time.Second},
		{8 * time.Second, 0, 3 * time.Second, 3 * time.Second},
		{time.Second, 30 * time.Second, 5 * time.Second, 5 * time.Second},
	} {
		if got := nextWait(c.backoff, c.asked, c.left); got != c.want {
			t.Errorf("nextWait(%s, %s, %s) = %s, want %s", c.backoff, c.asked, c.left, got, c.want)
		}
	}
}

// fakeClock is the Server's clock in a test: sleeping moves it on at once
// and records the wait.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	waits []time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.t = c.t.Add(d)
	return ctx.Err()
}

func (c *fakeClock) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// withClock gives s a fake clock.
func withClock(s *Server) *fakeClock {
	c := &fakeClock{t: time.Unix(1_000_000, 0)}
	s.now, s.sleep = c.now, c.sleep
	return c
}

// opsHooksServer is a server, with no hooks, of the configuration
// ops-hooks, for the tests of its registration at start; it returns the
// server and its log.
func opsHooksServer(t *testing.T) (*Server, *testoperator.Buffer) {
	t.Helper()
	log, logs := jsonLog()
	s, err := NewServer(Options{Log: log, ConfigurationName: "ops-hooks"}, newFakeHooks(Bindings{}))
	if err != nil {
		t.Fatal(err)
	}
	return s, logs
}

// script returns an attempt that fails with errs in turn, then succeeds,
// and counts its calls.
func script(calls *int, errs ...error) func(context.Context) error {
	return func(context.Context) error {
		*calls++
		if *calls <= len(errs) {
			return errs[*calls-1]
		}
		return nil
	}
}

// Transient errors at start are tried again with a doubling wait (or the
// API server's Retry-After), each failed attempt logged once with its
// number, error and wait, until the registration succeeds.
func TestSyncAtStartRetriesTransientErrors(t *testing.T) {
	s, logs := opsHooksServer(t)
	clock := withClock(s)
	calls := 0
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	err := s.syncAtStart(context.Background(), script(&calls,
		apierrors.NewServiceUnavailable("etcd is away"), refused, apierrors.NewTooManyRequests("slow down", 9), apierrors.NewConflict(schema.GroupResource{}, "ops-hooks", errors.New("raced"))))
	if err != nil {
		t.Fatal(err)
	}
	if calls != 5 {
		t.Errorf("%d attempts, want 5", calls)
	}
	if got, want := fmt.Sprint(clock.recorded()), "[1s 2s 9s 8s]"; got != want {
		t.Errorf("waits %s, want %s (doubling, Retry-After when longer)", got, want)
	}
	for n, wait := range []string{"1s", "2s", "9s", "8s"} {
		line := fmt.Sprintf(`"attempt":%d,"configuration":"ops-hooks"`, n+1)
		if strings.Count(logs.String(), line) != 1 || !strings.Contains(logs.String(), `"retryIn":"`+wait+`"`) {
			t.Errorf("attempt %d is not logged once with its wait %s:\n%s", n+1, wait, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "connection refused") || !strings.Contains(logs.String(), `"attempts":5`) {
		t.Errorf("the log lacks an attempt's error or the success after 5 attempts:\n%s", logs.String())
	}
}

// A transient error that lasts past Options.StartRetry fails start with
// an error naming the configuration and the last error; the waits never
// go past the time allowed.
func TestSyncAtStartGivesUp(t *testing.T) {
	s, _ := opsHooksServer(t)
	clock := withClock(s)
	calls := 0
	last := apierrors.NewServiceUnavailable("etcd is away")
	err := s.syncAtStart(context.Background(), func(context.Context) error { calls++; return last })
	if !errors.Is(err, last) || !strings.Contains(err.Error(), "configuration ops-hooks") || !strings.Contains(err.Error(), "failed 10 times in 1m0s") {
		t.Errorf("the error after the time allowed: %v", err)
	}
	if got, want := fmt.Sprint(clock.recorded()), "[1s 2s 4s 8s 10s 10s 10s 10s 5s]"; got != want {
		t.Errorf("waits %s, want %s (the default 60 s in all)", got, want)
	}
	if calls != 10 {
		t.Errorf("%d attempts, want 10", calls)
	}

	// A shorter time allowed, as Options.StartRetry.
	s.o.StartRetry = 5 * time.Second
	clock = withClock(s)
	_ = s.syncAtStart(context.Background(), func(context.Context) error { return last })
	if got, want := fmt.Sprint(clock.recorded()), "[1s 2s 2s]"; got != want {
		t.Errorf("with StartRetry 5s: waits %s, want %s", got, want)
	}
	// Less than 0: one attempt.
	s.o.StartRetry = -1
	clock = withClock(s)
	if err := s.syncAtStart(context.Background(), func(context.Context) error { return last }); !errors.Is(err, last) || len(clock.recorded()) != 0 {
		t.Errorf("with StartRetry < 0: %v after waits %v, want the error at once", err, clock.recorded())
	}
}

// Errors another attempt cannot fix end start at once, as they are.
func TestSyncAtStartFailsAtOnceOnPermanentErrors(t *testing.T) {
	s, logs := opsHooksServer(t)
	gr := schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}
	for _, permanent := range []error{
		apierrors.NewForbidden(gr, "ops-hooks", errors.New(`User "system:serviceaccount:ops:op" cannot patch resource "validatingwebhookconfigurations"`)),
		apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "ValidatingWebhookConfiguration"}, "ops-hooks", nil),
		apierrors.NewUnauthorized("token expired"),
		errors.New("ValidatingWebhookConfiguration ops-hooks does not exist: with --webhook-configuration-mode=existing the operator only fills in configurations made beforehand"),
		errors.New("the CA bundle for the webhook registrations (--webhook-ca, or --conversion-webhook-ca): open ca.crt: no such file or directory"),
	} {
		clock := withClock(s)
		calls := 0
		if err := s.syncAtStart(context.Background(), func(context.Context) error { calls++; return permanent }); err != permanent {
			t.Errorf("%v: returned %v, want the error itself", permanent, err)
		}
		if calls != 1 || len(clock.recorded()) != 0 {
			t.Errorf("%v: %d attempts, waits %v; want one attempt", permanent, calls, clock.recorded())
		}
	}
	if strings.Contains(logs.String(), "trying again") {
		t.Errorf("a permanent error was logged as tried again:\n%s", logs.String())
	}
}

// Through Start: the API server failing the registration at start is
// tried again, Started stays open (so /readyz is not ready) until the
// configuration is applied; a Forbidden one ends Start at once, naming
// the RBAC the operator needs.
func TestServerStartRetriesRegistration(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, 1)
	addr := freeAddress(t)
	options := func(dyn dynamic.Interface) Options {
		log, _ := jsonLog()
		return Options{ListenAddress: addr, Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"), CA: filepath.Join(dir, "ca.crt"),
			URL: "https://" + addr, ConfigurationName: "ops-hooks", Register: true, Dynamic: dyn, Metadata: metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()),
			MaxConnections: 8, MaxConcurrent: 2, TLSMinVersion: "1.2", FailurePolicy: "Fail", Log: log}
	}
	hooks := newFakeHooks(validating("a.sh", "a.example.com"))

	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{crdResource: "CustomResourceDefinitionList"})
	var s *Server
	patches, startedEarly := 0, false
	dyn.PrependReactor("patch", "validatingwebhookconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
		patches++
		select {
		case <-s.Started():
			startedEarly = true
		default:
		}
		if patches <= 2 {
			return true, nil, apierrors.NewServiceUnavailable("the API server is starting")
		}
		return true, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration"}}, nil
	})
	s, err := NewServer(options(dyn), hooks)
	if err != nil {
		t.Fatal(err)
	}
	withClock(s)
	errc := startServer(t, s)
	select {
	case <-s.Started():
	case err := <-errc:
		errc <- err // for startServer's cleanup
		t.Fatalf("Start: %v, want the registration tried again", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not get past the failed registrations")
	}
	if patches != 3 || startedEarly {
		t.Errorf("%d patches (want 3), Started closed before the registration: %v", patches, startedEarly)
	}

	forbidding := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	forbidding.PrependReactor("patch", "validatingwebhookconfigurations", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}, "ops-hooks",
			errors.New(`User "system:serviceaccount:ops:op" cannot patch resource "validatingwebhookconfigurations"`))
	})
	o := options(forbidding)
	o.ListenAddress = freeAddress(t)
	s, err = NewServer(o, hooks)
	if err != nil {
		t.Fatal(err)
	}
	clock := withClock(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // the listener, started before the registration
	err = s.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "cannot patch resource") || !strings.Contains(err.Error(), "get, patch and delete on validatingwebhookconfigurations named ops-hooks") {
		t.Errorf("Start with a Forbidden registration: %v, want the refused verb and the RBAC needed", err)
	}
	if len(clock.recorded()) != 0 {
		t.Errorf("a Forbidden registration was tried again after %v", clock.recorded())
	}
}

// Stopping (SIGTERM) while the registration is tried again ends the tries
// without an error: the operator stops as asked, not as failed.
func TestSyncAtStartStopsWithItsContext(t *testing.T) {
	s, _ := opsHooksServer(t)
	withClock(s)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := s.syncAtStart(ctx, func(context.Context) error {
		if calls++; calls == 2 {
			cancel()
		}
		return apierrors.NewServiceUnavailable("etcd is away")
	})
	if err != nil || calls != 2 {
		t.Errorf("stopped during the tries: %v after %d attempts, want nil after 2", err, calls)
	}
}
