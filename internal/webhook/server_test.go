package webhook

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// fakeHooks is a hook set the test changes, as a reload does.
type fakeHooks struct {
	mu       sync.Mutex
	bindings Bindings
	changed  chan struct{}
}

func newFakeHooks(b Bindings) *fakeHooks {
	return &fakeHooks{bindings: b, changed: make(chan struct{})}
}

func (f *fakeHooks) set(b Bindings) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bindings = b
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeHooks) WebhookBindings() (Bindings, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bindings, nil
}

func (f *fakeHooks) WebhooksChanged() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// Admit denies with the name of the hook bound to path, as the set is now.
func (f *fakeHooks) Admit(_ context.Context, path string, _ json.RawMessage) (*AdmissionResponse, Admission, error) {
	b, _ := f.WebhookBindings()
	for _, a := range append(b.Validating, b.Mutating...) {
		if Path(a.Binding.Name) == path {
			return &AdmissionResponse{Message: "denied by " + a.Hook}, a, nil
		}
	}
	return nil, Admission{}, NotServed("no admission binding is served at %s", path)
}

func (f *fakeHooks) Convert(_ context.Context, crd string, _ ConversionRequest) ([]json.RawMessage, error) {
	return nil, NotServed("no hook converts %s", crd)
}

func validating(hookName, binding string) Bindings {
	return Bindings{Validating: []Admission{{Hook: hookName, Binding: hook.WebhookBinding{Common: hook.Common{Name: binding}}}}}
}

// startServer runs s until the test ends.
func startServer(t *testing.T, s *Server) (errc chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc = make(chan error, 1)
	go func() { errc <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-errc
	})
	return errc
}

// Without a listen address, the server says which hooks' bindings will
// not run, at start and again when a change adds some.
func TestServerWarnsOfUnservedBindings(t *testing.T) {
	log, logs := jsonLog()
	hooks := newFakeHooks(validating("a.sh", "a.example.com"))
	s, err := NewServer(Options{Log: log}, hooks)
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, s)
	unserved := func(h string) bool {
		return strings.Contains(logs.String(), `"hook":"`+h+`","level":"warning","msg":"the hook has 1 admission binding(s), and the webhook server does not serve them`)
	}
	waitFor(t, "the warning about a.sh", func() bool { return unserved("a.sh") }, logs.String)
	b := validating("a.sh", "a.example.com")
	b.Conversions = []Conversion{{Hook: "b.sh", Binding: "b", CRD: "things.example.com"}}
	hooks.set(b)
	waitFor(t, "the warning about b.sh", func() bool {
		return strings.Contains(logs.String(), `"hook":"b.sh","level":"warning","msg":"the hook has 1 conversion binding(s), and the webhook server does not serve them`)
	}, logs.String)
}

// freeAddress returns a loopback address no one listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// postReview posts an AdmissionReview to path of the server at addr and
// returns its response.
func postReview(t *testing.T, addr, path string) map[string]any {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // a test certificate
	resp, err := client.Post("https://"+addr+path, "application/json", strings.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Response map[string]any `json:"response"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: status %d, not a review: %v", path, resp.StatusCode, err)
	}
	return out.Response
}

// The listener starts with the first admission binding, also one a change
// adds: without a certificate the change fails, says which flags to set,
// and is told to Failed; the next change serves it. A request to a binding
// that went away is allowed (no binding checks it now); one to a path
// never served is answered 404.
func TestServerFollowsChanges(t *testing.T) {
	log, logs := jsonLog()
	dir := t.TempDir()
	addr := freeAddress(t)
	var mu sync.Mutex
	var failed []error
	hooks := newFakeHooks(Bindings{})
	s, err := NewServer(Options{
		ListenAddress: addr, Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"),
		MaxConnections: 8, MaxConcurrent: 2, TLSMinVersion: "1.2", FailurePolicy: "Fail", Log: log,
		Failed: func(err error) { mu.Lock(); defer mu.Unlock(); failed = append(failed, err) },
	}, hooks)
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, s)
	<-s.Started()
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Fatal("the server listens although no hook has a webhook binding")
	}

	hooks.set(validating("a.sh", "a.example.com"))
	waitFor(t, "the failure to be reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(failed) > 0
	}, logs.String)
	mu.Lock()
	if msg := failed[0].Error(); !strings.Contains(msg, "--webhook-cert, --webhook-key") {
		t.Errorf("the error does not say which flags to set: %s", msg)
	}
	mu.Unlock()

	writePair(t, dir, 1)
	hooks.set(validating("b.sh", "a.example.com"))
	waitFor(t, "the listener", func() bool { return strings.Contains(logs.String(), `"msg":"serving webhooks"`) }, logs.String)
	if got := postReview(t, addr, "/hooks/a-example-com"); got["allowed"] != false || !strings.Contains(fmt.Sprint(got["status"]), "denied by b.sh") {
		t.Errorf("a request to a.example.com: %v, want b.sh's denial", got)
	}

	hooks.set(Bindings{})
	if got := postReview(t, addr, "/hooks/a-example-com"); got["allowed"] != true {
		t.Errorf("a request to a binding that went away: %v, want it allowed", got)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // a test certificate
	for _, path := range []string{"/hooks/never-served", "/never-served.example.com"} {
		resp, err := client.Post("https://"+addr+path, "application/json", strings.NewReader(review))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("a request to %s, never served: %d, want 404", path, resp.StatusCode)
		}
	}
}

// A conversion for a CRD whose binding went away is made as strategy
// None makes it: the apiVersion alone changes.
func TestServerConvertsAsNoneAfterItsBindingWent(t *testing.T) {
	log, _ := jsonLog()
	s, err := NewServer(Options{Log: log}, newFakeHooks(Bindings{}))
	if err != nil {
		t.Fatal(err)
	}
	req := ConversionRequest{DesiredAPIVersion: "example.com/v2", Objects: objects("example.com/v1")}
	if _, err := s.convert(context.Background(), "things.example.com", req); !errors.Is(err, ErrNotServed) {
		t.Errorf("a CRD never converted: %v, want ErrNotServed", err)
	}
	s.remember(Bindings{Conversions: []Conversion{{Hook: "c.sh", Binding: "c", CRD: "things.example.com"}}})
	out, err := s.convert(context.Background(), "things.example.com", req)
	if err != nil {
		t.Fatal(err)
	}
	if got := versions(t, out); len(got) != 1 || got[0] != "example.com/v2" {
		t.Errorf("converted to %v, want [example.com/v2]", got)
	}
}

// Options a server cannot run with are refused by NewServer, naming the
// flag.
func TestNewServerChecksOptions(t *testing.T) {
	ok := Options{ListenAddress: ":0", MaxConnections: 1, TLSMinVersion: "1.2", FailurePolicy: "Fail"}
	for flag, change := range map[string]func(*Options){
		"--webhook-max-connections": func(o *Options) { o.MaxConnections = 0 },
		"--webhook-tls-min-version": func(o *Options) { o.TLSMinVersion = "1.1" },
		"--webhook-failure-policy":  func(o *Options) { o.FailurePolicy = "Maybe" },
	} {
		o := ok
		change(&o)
		if _, err := NewServer(o, newFakeHooks(Bindings{})); err == nil || !strings.HasPrefix(err.Error(), flag) {
			t.Errorf("%s: %v, want an error naming the flag", flag, err)
		}
	}
	if _, err := NewServer(ok, newFakeHooks(Bindings{})); err != nil {
		t.Error(err)
	}
}

// A failure to serve the bindings found at start is Start's error, and
// Started is never closed; a change that fails later is tried again
// without another change, once what it lacked is there.
func TestServerFailsAtStartAndRetriesLater(t *testing.T) {
	log, logs := jsonLog()
	dir := t.TempDir()
	o := Options{
		ListenAddress: freeAddress(t), Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"),
		MaxConnections: 8, MaxConcurrent: 2, TLSMinVersion: "1.2", FailurePolicy: "Fail", Log: log,
	}
	s, err := NewServer(o, newFakeHooks(validating("a.sh", "a.example.com")))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "--webhook-cert, --webhook-key") {
		t.Errorf("Start without a certificate: %v, want an error naming the flags", err)
	}
	select {
	case <-s.Started():
		t.Error("Started is closed although the bindings found at start are not served")
	default:
	}

	hooks := newFakeHooks(Bindings{})
	if s, err = NewServer(o, hooks); err != nil {
		t.Fatal(err)
	}
	s.retry = 20 * time.Millisecond
	startServer(t, s)
	<-s.Started()
	hooks.set(validating("a.sh", "a.example.com"))
	waitFor(t, "the failed change", func() bool { return strings.Contains(logs.String(), "serving them failed") }, logs.String)
	writePair(t, dir, 1)
	waitFor(t, "the listener, with no other change", func() bool { return strings.Contains(logs.String(), `"msg":"serving webhooks"`) }, logs.String)
}
