package watch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/metrics"
)

// events reads every event of w until its channel closes.
func events(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	var out []watch.Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return out
			}
			out = append(out, e)
		case <-timeout:
			t.Fatalf("the watch did not end; events so far: %v", out)
		}
	}
}

// startStream returns a started watch over body.
func startStream(body string, failed func(error)) *streamWatch {
	w := newStreamWatch(io.NopCloser(strings.NewReader(body)))
	w.failed = failed
	w.start()
	return w
}

func TestStreamWatchDecodesEachType(t *testing.T) {
	body := `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"7","generation":9007199254740993},"data":{"k":"v"}}}
{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"8"},"spec":{"ratio":0.5}}}
{"type":"DELETED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"9"}}}
{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"10","annotations":{"k8s.io/initial-events-end":"true"}}}}
{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (10)","reason":"Expired","code":410}}
`
	var failures []error
	got := events(t, startStream(body, func(err error) { failures = append(failures, err) }))
	if len(failures) != 1 || !apierrors.IsResourceExpired(failures[0]) {
		t.Errorf("failures reported: %v; want the ERROR event's expired resource version", failures)
	}
	if len(got) != 5 {
		t.Fatalf("got %d events, want 5: %v", len(got), got)
	}
	wantTypes := []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error}
	for i, e := range got {
		if e.Type != wantTypes[i] {
			t.Errorf("event %d: type %s, want %s", i, e.Type, wantTypes[i])
		}
	}
	added := got[0].Object.(*unstructured.Unstructured)
	if added.GetName() != "a" || added.GetNamespace() != "ns" || added.GetResourceVersion() != "7" {
		t.Errorf("ADDED object identity: %s/%s rv %s", added.GetNamespace(), added.GetName(), added.GetResourceVersion())
	}
	// Integers beyond float64's precision survive decoding exactly.
	e := newEntry(added, nil, true, false)
	var back map[string]any
	dec := json.NewDecoder(strings.NewReader(string(e.full())))
	dec.UseNumber()
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	if g := back["metadata"].(map[string]any)["generation"].(json.Number).String(); g != "9007199254740993" {
		t.Errorf("generation after decoding and encoding = %s, want 9007199254740993", g)
	}
	if a := got[3].Object.(*unstructured.Unstructured).GetAnnotations()["k8s.io/initial-events-end"]; a != "true" {
		t.Errorf("BOOKMARK lost its annotation: %q", a)
	}
	status, ok := got[4].Object.(*metav1.Status)
	if !ok {
		t.Fatalf("ERROR event object is %T, want *metav1.Status", got[4].Object)
	}
	if err := apierrors.FromObject(status); !apierrors.IsResourceExpired(err) || status.Code != 410 {
		t.Errorf("ERROR event: %v (code %d); want an expired resource version, 410", err, status.Code)
	}
}

func TestStreamWatchReportsUndecodableStreams(t *testing.T) {
	for name, body := range map[string]string{
		"bad JSON":     `{"type":"ADDED","object":{"metadata":{"name":"a"}}}` + "\n" + `{"type": nope}`,
		"unknown type": `{"type":"RENAMED","object":{"metadata":{"name":"a"}}}`,
		"no object":    `{"type":"ADDED"}`,
		"bad Status":   `{"type":"ERROR","object":{"kind":"Status","code":"four hundred"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			got := events(t, startStream(body, nil))
			last := got[len(got)-1]
			status, ok := last.Object.(*metav1.Status)
			if last.Type != watch.Error || !ok {
				t.Fatalf("last event %s %T, want an ERROR with a Status", last.Type, last.Object)
			}
			if status.Reason != metav1.StatusReasonInternalError || status.Message == "" {
				t.Errorf("Status %+v: want an internal error naming the problem", status)
			}
			t.Logf("reported: %s", status.Message)
		})
	}
}

func TestStreamWatchEndsQuietly(t *testing.T) {
	// A stream cut mid-event is a watch that ended, not an error: the
	// reflector watches again from the last resourceVersion.
	body := `{"type":"ADDED","object":{"metadata":{"name":"a"}}}` + "\n" + `{"type":"ADDED","obj`
	got := events(t, startStream(body, nil))
	if len(got) != 1 || got[0].Type != watch.Added {
		t.Fatalf("got %v, want the one whole event and then the end", got)
	}
}

// blockingBody is a response body that blocks until it is closed.
type blockingBody struct{ closed chan struct{} }

func (b *blockingBody) Read([]byte) (int, error) { <-b.closed; return 0, io.ErrClosedPipe }
func (b *blockingBody) Close() error {
	select {
	case <-b.closed:
	default:
		close(b.closed)
	}
	return nil
}

func TestStreamWatchStop(t *testing.T) {
	body := &blockingBody{closed: make(chan struct{})}
	w := newStreamWatch(body)
	w.start()
	w.Stop()
	w.Stop() // twice is fine
	if got := events(t, w); len(got) != 0 {
		t.Errorf("events after Stop: %v", got)
	}
}

// A stream that stays open but delivers nothing for the idle period ends
// with an expired-resourceVersion ERROR, so that the reflector lists again;
// events and bookmarks each restart the period. Why it ended is reported.
func TestStreamWatchIdle(t *testing.T) {
	r, pw := io.Pipe()
	w := newStreamWatch(r)
	w.idle = 300 * time.Millisecond
	var reasons []string
	var failures []error
	var received atomic.Int32
	w.ended = func(reason string) { reasons = append(reasons, reason) }
	w.failed = func(err error) { failures = append(failures, err) }
	w.received = func(time.Time) { received.Add(1) }
	w.start()
	go func() {
		// Three lines 200ms apart: each comes within the period.
		for _, line := range []string{
			`{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1"}}}`,
			`{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"2"}}}`,
			`{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"3"}}}`,
		} {
			time.Sleep(200 * time.Millisecond)
			if _, err := io.WriteString(pw, line+"\n"); err != nil {
				return
			}
		}
		// Then nothing, with the connection open.
	}()
	got := events(t, w)
	if len(got) != 4 {
		t.Fatalf("got %d events, want 3 and the idle ERROR: %v", len(got), got)
	}
	for i, typ := range []watch.EventType{watch.Added, watch.Bookmark, watch.Modified, watch.Error} {
		if got[i].Type != typ {
			t.Errorf("event %d: %s, want %s", i, got[i].Type, typ)
		}
	}
	if err := apierrors.FromObject(got[3].Object); !apierrors.IsResourceExpired(err) || !strings.Contains(err.Error(), "no event and no bookmark for 300ms") {
		t.Errorf("idle ERROR = %v, want an expired resourceVersion naming the period", err)
	}
	if len(failures) != 1 || len(reasons) != 1 || reasons[0] != endIdle {
		t.Errorf("failures %v, reasons %v; want one failure and reason idle", failures, reasons)
	}
	if n := received.Load(); n != 3 {
		t.Errorf("received told of %d events, want 3 (the bookmark included)", n)
	}
}

// Why a stream ended: the server closing it is a timeout, an ERROR about
// an expired resourceVersion is expired, another ERROR is error.
func TestStreamWatchEndReasons(t *testing.T) {
	for body, want := range map[string]string{
		`{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}` + "\n":                                                                    endTimeout,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (10)","reason":"Expired","code":410}}` + "\n": endExpired,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"boom","reason":"InternalError","code":500}}` + "\n":                       endError,
	} {
		w := newStreamWatch(io.NopCloser(strings.NewReader(body)))
		var reason string
		w.ended = func(r string) { reason = r }
		w.start()
		events(t, w)
		if reason != want {
			t.Errorf("stream %s ended with reason %q, want %q", body, reason, want)
		}
	}
}

// A watch that went idle is named by Broken (readiness) until it delivers
// again, without asking the API server.
func TestIdleWatchIsReportedUntilItDelivers(t *testing.T) {
	key := informerKey{resource: "/v1, Resource=configmaps", namespace: "ns"}
	inf := &informer{key: key, idle: 3 * time.Minute}
	w := &Watcher{informers: map[informerKey]*informer{key: inf}}
	if got := w.Broken(t.Context()); len(got) != 0 {
		t.Fatalf("Broken = %v before anything happened", got)
	}
	inf.ended(endIdle)
	got := w.Broken(t.Context())
	if len(got) != 1 || !strings.Contains(got[0], "no event and no bookmark for 3m0s") {
		t.Fatalf("Broken = %v, want the idle watch named", got)
	}
	inf.ended(endTimeout) // the server ending a watch says nothing about it
	if len(w.Broken(t.Context())) != 1 {
		t.Fatal("a timeout cleared the idle report")
	}
	inf.touch(time.Now()) // what a received event or bookmark does
	if got := w.Broken(t.Context()); len(got) != 0 {
		t.Fatalf("Broken = %v after the watch delivered again", got)
	}
}

// A watch request the server never answers (no status, no headers) is
// given up after the idle period, as a silent stream is: it ends as idle,
// with an error the informer turns into an empty watch, and the request's
// connection is closed.
func TestStreamWatchUnanswered(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
		close(gone)
	}))
	defer srv.Close()
	clients, err := kube.NewClients(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := newStreams(clients.Watches, clients.Unversioned, discardLog())
	var reasons []string
	_, err = s.watch(context.Background(), cmGVR, "ns", metav1.ListOptions{}, streamHooks{
		idle:  200 * time.Millisecond,
		ended: func(r string) { reasons = append(reasons, r) },
	})
	if !errors.Is(err, errWatchCut) || !strings.Contains(err.Error(), "no answer for 200ms") {
		t.Fatalf("error %v, want errWatchCut saying no answer came for 200ms", err)
	}
	if len(reasons) != 1 || reasons[0] != endIdle {
		t.Errorf("ended %v, want [idle]", reasons)
	}
	<-gone // the server saw the request go
}

// Watch requests count in kube_requests_total like client-go's own
// requests, and the warnings the API server sends with them are logged.
func TestWatchRequestsCountedAndWarningsLogged(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("labelSelector") == "missing" {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
			return
		}
		w.Header().Add("Warning", `299 - "v1 Widget is deprecated; use v2 Widget"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"1"}}}` + "\n"))
	}))
	defer srv.Close()
	m := kubeClientMetrics()
	before := requestCounts(t, m)
	clients, err := kube.NewClients(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	log, hook := logtest.NewNullLogger()
	s := newStreams(clients.Watches, clients.Unversioned, log)

	w, err := s.watch(context.Background(), cmGVR, "ns", metav1.ListOptions{}, streamHooks{failed: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	events(t, w)
	if _, err := s.watch(context.Background(), cmGVR, "ns", metav1.ListOptions{LabelSelector: "missing"}, streamHooks{failed: func(error) {}}); err == nil {
		t.Fatal("a 404 answer started a watch")
	}

	after := requestCounts(t, m)
	for _, series := range []string{`{code="200",method="GET"}`, `{code="404",method="GET"}`} {
		if got := after[series] - before[series]; got != 1 {
			t.Errorf("hook_operator_kube_requests_total%s rose by %v, want 1 (before %v, after %v)", series, got, before, after)
		}
	}
	var warned bool
	for _, e := range hook.AllEntries() {
		warned = warned || e.Level == logrus.WarnLevel && strings.Contains(e.Message, "v1 Widget is deprecated; use v2 Widget")
	}
	if !warned {
		t.Errorf("the API server's warning was not logged: %v", hook.AllEntries())
	}
}

// kubeClientMetrics is the Metrics that client-go reports to in this test
// binary: client-go takes one registration per process, so a test that runs
// twice in one process (-count 2, -cpu 1,2) reads the counters of the first.
var kubeClientMetrics = sync.OnceValue(func() *metrics.Metrics {
	m := metrics.New(metrics.DefaultPrefix)
	m.ObserveKubeClient()
	return m
})

// requestCounts reads hook_operator_kube_requests_total from m's /metrics,
// by its labels as written there.
func requestCounts(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	counts := map[string]float64{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		rest, ok := strings.CutPrefix(line, "hook_operator_kube_requests_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			t.Fatalf("/metrics: cannot read %q", line)
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("/metrics: %q: %v", line, err)
		}
		counts["{"+labels+"}"] = v
	}
	return counts
}
