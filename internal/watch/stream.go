package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	clientmetrics "k8s.io/client-go/tools/metrics"

	"github.com/hook-operator/hook-operator/internal/jq"
)

// streams opens watch requests itself and decodes their JSON stream in one
// pass per event, straight into the unstructured objects the informers
// transform into entries.
//
// client-go's own watch decoding reads each event about ten times: a framer
// finds the event's end, a decoder reads the event envelope (after sniffing
// its apiVersion and kind, and validating it), then the embedded object the
// same way again. With every object of a binding arriving through the watch
// (start-up lists stream as watch events too), that decoding was the largest
// single cost of a Synchronization and of each event. Here a json.Decoder
// scans each event once to find its end and decodes it once.
type streams struct {
	// own opens a watch on a connection of its own (kube.Clients.Watches,
	// HTTP/1.1), while fewer than ownConnections of them are open; shared
	// opens the rest on the connection every other request shares
	// (kube.Clients.Unversioned, HTTP/2).
	own, shared *rest.RESTClient
	// owned counts the open watches on connections of their own.
	owned atomic.Int32
	// log receives the warnings the API server sends with a watch's answer.
	log logrus.FieldLogger
}

// ownConnections is how many watches may have a connection of their own at
// once. A connection of its own saves a watch the HTTP/2 read loop's work
// for each event (docs/design/api-server.md,
// "Watches over HTTP/1.1"), and costs a TLS connection, its
// buffers and goroutines (some 30 KB) and a handshake: an operator whose
// bindings fan out over hundreds of namespaces keeps all but the first 16
// of its watches on the shared connection.
const ownConnections = 16

// Reasons a watch stream ended (watch_restarts_total).
const (
	endTimeout = "timeout"
	endIdle    = "idle"
	endExpired = "expired"
	endError   = "error"
)

// versionV1 is the version of the list options' query parameters.
var versionV1 = schema.GroupVersion{Version: "v1"}

// parameterCodec encodes metav1.ListOptions as query parameters, as the
// dynamic client does.
var parameterCodec = func() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, versionV1)
	return runtime.NewParameterCodec(s)
}()

// newStreams returns the watch opener over own (kube.Clients.Watches)
// and shared (kube.Clients.Unversioned), or nil without them (then
// watches go through the dynamic client).
func newStreams(own, shared *rest.RESTClient, log logrus.FieldLogger) *streams {
	if own == nil || shared == nil {
		return nil
	}
	return &streams{own: own, shared: shared, log: log}
}

// client returns the client of the next watch, and what the watch calls,
// once, when it has ended.
func (s *streams) client() (*rest.RESTClient, func()) {
	if s.owned.Add(1) > ownConnections {
		s.owned.Add(-1)
		return s.shared, func() {}
	}
	var once sync.Once
	return s.own, func() { once.Do(func() { s.owned.Add(-1) }) }
}

// errWatchCut is wrapped by the error of a watch whose connection ended
// before the server answered.
var errWatchCut = errors.New("the watch request's connection ended before an answer")

// streamHooks tell a watch's owner what happens to its stream; each may be
// nil.
type streamHooks struct {
	// failed is told the error of each ERROR event.
	failed func(error)
	// ended is told why the stream ended.
	ended func(reason string)
	// received is called for each event decoded, bookmarks included, with
	// the time it was decoded.
	received func(at time.Time)
	// idle, when above zero, ends a stream that delivers no event and no
	// bookmark for that long, with an ERROR event saying that the
	// resourceVersion expired: the reflector then lists again. It is the
	// stale threshold of the bindings on the watch (informer.idle).
	idle time.Duration
	// lean, when set, has objects decoded lean: only these top-level keys,
	// apiVersion, kind and the metadata the runtime reads (see lean.go);
	// nil: whole.
	lean leanKeep
}

// watch starts a watch of resource gvr (in namespace, or all when "") with
// opts. Like client-go's, it is not rate-limited. A connection that ends
// before the server answers gives an error wrapping errWatchCut: unless
// the API server is away, the informer gives the reflector an empty watch,
// and it simply watches again. So does a request the server has not
// answered within hooks.idle, which ends as idle. hooks are told what
// happens to the stream.
func (s *streams) watch(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions, hooks streamHooks) (watch.Interface, error) {
	opts.Watch = true
	path := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		path = []string{"/api", gvr.Version}
	}
	if namespace != "" {
		path = append(path, "namespaces", namespace)
	}
	path = append(path, gvr.Resource)
	client, release := s.client()
	handed := false // release is the stream's to call once it ends
	defer func() {
		if !handed {
			release()
		}
	}()
	u := client.Get().AbsPath(path...).SpecificallyVersionedParams(&opts, parameterCodec, versionV1).URL()

	// A watch the server does not even answer is as silent as one that
	// stops delivering: after the idle period it is given up the same way.
	// The request's context lives as long as the stream (Stop cancels it).
	cancel := context.CancelFunc(func() {})
	var unanswered *time.Timer
	if hooks.idle > 0 {
		ctx, cancel = context.WithCancel(ctx)
		unanswered = time.AfterFunc(hooks.idle, cancel)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	// No gzip (Go's transport would ask for it and inflate the answer):
	// from 1.37 (WatchListCompression) the API server compresses a
	// streaming list and the watch it turns into, and it flushes each
	// event of that watch as a gzip stream of its own. Every event then
	// costs the server a compressor's reset and the operator a
	// decompressor's, for little saved on a small event; the start-up
	// list, the one part that shrinks, crosses the cluster's network
	// once (docs/design/api-server.md).
	req.Header.Set("Accept-Encoding", "identity")
	start := time.Now()
	resp, err := client.Client.Do(req)
	s.observe(ctx, u, resp, err, start)
	if unanswered != nil && !unanswered.Stop() {
		if err == nil {
			_ = resp.Body.Close()
		}
		if hooks.ended != nil {
			hooks.ended(endIdle)
		}
		return nil, fmt.Errorf("%w: no answer for %s", errWatchCut, hooks.idle)
	}
	if err != nil {
		cancel()
		if utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) {
			return nil, fmt.Errorf("%w: %w", errWatchCut, err)
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		return nil, responseError(resp, u.Redacted())
	}
	w := newStreamWatch(resp.Body)
	w.streamHooks, w.cancel, w.release, w.proto = hooks, cancel, release, resp.Proto
	w.compressed = resp.Uncompressed || resp.Header.Get("Content-Encoding") != ""
	handed = true
	w.start()
	return w, nil
}

// observe reports a watch request as client-go reports the requests it
// makes (kube_requests_total, kube_request_duration_seconds: the time to
// the answer's headers), and logs the warnings the answer carries, as
// client-go's warning handler would.
func (s *streams) observe(ctx context.Context, u *url.URL, resp *http.Response, err error, start time.Time) {
	code := "<error>"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	clientmetrics.RequestLatency.Observe(ctx, http.MethodGet, *u, time.Since(start))
	clientmetrics.RequestResult.Increment(ctx, code, http.MethodGet, u.Host)
	if resp == nil || s.log == nil {
		return
	}
	warnings, _ := utilnet.ParseWarningHeaders(resp.Header.Values("Warning"))
	for _, w := range warnings {
		s.log.WithField("watch", u.Path).Warnf("the API server warns: %s", w.Text)
	}
}

// responseError turns a failed watch request's answer into the API error it
// carries (a Status), so that the reflector can tell "too old resource
// version" and the like from other failures.
func responseError(resp *http.Response, url string) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var status metav1.Status
	if json.Unmarshal(body, &status) == nil && status.Kind == "Status" {
		return &apierrors.StatusError{ErrStatus: status}
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, http.MethodGet, schema.GroupResource{}, "", strings.TrimSpace(string(body)), 0, false)
}

// streamWatch is a watch.Interface over one watch response body.
type streamWatch struct {
	body   io.ReadCloser
	result chan watch.Event
	done   chan struct{}
	once   sync.Once
	// streamHooks, set before start, are told what happens; their idle
	// period ends a silent stream.
	streamHooks
	idleFired atomic.Bool
	// cancel, when set, ends the request's context: Stop calls it.
	cancel context.CancelFunc
	// release, when set, is called once the stream has ended: its
	// connection is no longer the watch's (streams.client).
	release func()
	// proto is the answer's protocol ("HTTP/1.1" on a connection of the
	// watch's own).
	proto string
	// compressed is whether the answer came compressed (inflated by the
	// transport, or not): never, since the watch asks for no encoding.
	compressed bool
	// begun is when the stream started, and last when it last delivered,
	// as time since begun: an event stores a number, and only the idle
	// timer, once a period, reads it (no timer is reset per event).
	begun time.Time
	last  atomic.Int64
}

// watchIdle starts the idle timer and returns what stops it. Each time
// the timer fires it checks how long ago the stream last delivered: less
// than the period, and it waits for the rest of it; the whole period, and
// it closes the body, which ends the pending read.
func (w *streamWatch) watchIdle() (stop func()) {
	w.begun = time.Now()
	var timer *time.Timer
	var mu sync.Mutex // guards timer and stopped: no Reset after stop
	stopped := false
	mu.Lock()
	defer mu.Unlock()
	timer = time.AfterFunc(w.idle, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if quiet := time.Since(w.begun) - time.Duration(w.last.Load()); quiet < w.idle {
			timer.Reset(w.idle - quiet)
			return
		}
		w.idleFired.Store(true)
		_ = w.body.Close()
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		timer.Stop()
	}
}

// resultBuffer is how many decoded events a stream holds for the
// reflector: in a burst the stream decodes a whole read's events while the
// reflector stores them, instead of the two goroutines handing over each
// event (a wake-up each time the other one waits).
const resultBuffer = 128

// newStreamWatch returns the watch of body; start begins reading it.
func newStreamWatch(body io.ReadCloser) *streamWatch {
	return &streamWatch{body: body, result: make(chan watch.Event, resultBuffer), done: make(chan struct{})}
}

func (w *streamWatch) start() { go w.receive() }

func (w *streamWatch) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch: closing the body ends a pending read, and receive
// sends nothing more once done is closed.
func (w *streamWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		_ = w.body.Close()
		if w.cancel != nil {
			w.cancel()
		}
	})
}

func (w *streamWatch) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// event is one line of a watch stream.
type event struct {
	Type   watch.EventType `json:"type"`
	Object map[string]any  `json:"object"`
}

func (w *streamWatch) receive() {
	if w.release != nil {
		defer w.release()
	}
	defer close(w.result)
	defer w.Stop()
	reason := endTimeout
	defer func() {
		if w.ended != nil {
			w.ended(reason)
		}
	}()
	if w.idle > 0 {
		defer w.watchIdle()()
	}
	// The line reader reads the body in large pieces (64 KB): a TLS
	// record's worth or more per read over HTTP/1.1 (kube.Clients.Watches),
	// and over HTTP/2 (a client without it) one WINDOW_UPDATE per read of
	// 4 KB or more, where small reads cost a list of 100,000 objects some
	// 17,000 writes (7% of the operator's CPU in it).
	next := newLeanReader(w.body, w.lean).next
	for {
		e, err := next()
		if err == nil && (w.idle > 0 || w.received != nil) {
			now := time.Now()
			if w.idle > 0 {
				w.last.Store(int64(now.Sub(w.begun)))
			}
			if w.received != nil {
				w.received(now)
			}
		}
		if err != nil && w.idleFired.Load() {
			reason = endIdle
		} else if w.stopped() {
			return
		}
		var out watch.Event
		switch {
		case reason == endIdle:
			out = watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired(
				fmt.Sprintf("no event and no bookmark for %s: listing again", w.idle)).ErrStatus}
		case err == nil:
			out, err = toEvent(e)
			if err != nil {
				out = errorEvent(err)
			}
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), utilnet.IsProbableEOF(err), utilnet.IsTimeout(err):
			return // the server or Stop ended the watch; the reflector watches again
		default:
			out = errorEvent(fmt.Errorf("unable to decode an event from the watch stream: %w", err))
		}
		if out.Type == watch.Error {
			serr := apierrors.FromObject(out.Object)
			if reason != endIdle {
				reason = endError
				if apierrors.IsResourceExpired(serr) || apierrors.IsGone(serr) {
					reason = endExpired
				}
			}
			if w.failed != nil {
				w.failed(serr)
			}
		}
		select {
		case <-w.done:
			return
		case w.result <- out:
		}
		if err != nil || out.Type == watch.Error {
			return
		}
	}
}

// toEvent makes the watch.Event of one decoded line: an ERROR carries a
// Status, every other type an object.
func toEvent(e event) (watch.Event, error) {
	switch e.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		if e.Object == nil {
			return watch.Event{}, fmt.Errorf("watch event %s without an object", e.Type)
		}
		return watch.Event{Type: e.Type, Object: &unstructured.Unstructured{Object: e.Object}}, nil
	case watch.Error:
		jq.Normalize(e.Object) // json.Number is not a number to the converter
		status := &metav1.Status{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(e.Object, status); err != nil {
			return watch.Event{}, fmt.Errorf("watch ERROR event whose object is not a Status: %w", err)
		}
		return watch.Event{Type: watch.Error, Object: status}, nil
	}
	return watch.Event{}, fmt.Errorf("watch event of unknown type %q", e.Type)
}

// errorEvent reports err to the reflector as client-go's stream watcher
// does: an ERROR event with an internal-error Status.
func errorEvent(err error) watch.Event {
	return watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}
}
