// Package recorder writes Kubernetes Events (core/v1, type Warning) about
// objects, as client-go's tools/record does, through the dynamic client:
// the operator's Events about failed runs, failed conversions and its own
// troubles. Recording never blocks its caller; repeats are folded into one
// Event and each object's Events are rate-limited (see Recorder).
package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// The recorder's limits are client-go's (tools/record), so that Events
// behave as they did when we used its recorder.
const (
	// eventBurst Events per object may be written at once; after that one
	// per eventRefill.
	eventBurst  = 25
	eventRefill = 5 * time.Minute
	// maxQueuedEvents bounds the Events waiting to be written.
	maxQueuedEvents = 1000
	// eventCacheSize bounds the Event series and per-object limits kept.
	eventCacheSize = 4096
	// maxEventTries bounds the attempts to write an Event while the API
	// server cannot be reached; eventRetryDelay is the pause between them.
	maxEventTries   = 12
	eventRetryDelay = 10 * time.Second
	// eventFlushTimeout bounds how long Stop writes the queued Events.
	eventFlushTimeout = 5 * time.Second
	// eventComponent is the source.component and reportingComponent of
	// the Events.
	eventComponent = "hook-operator"
)

var eventsGVR = schema.GroupVersionResource{Version: "v1", Resource: "events"}

// ObjectRef names the object an Event is about: its involvedObject.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
}

// String names the object in the log: its kind and namespace/name.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Recorder writes Warning Events (core/v1) about objects through the
// dynamic client, as client-go's EventRecorder does, but without the typed
// clientset it needs, which links every built-in API group into the binary
// (see docs/design/api-server.md, "Discovery, kind
// resolution and Events"). Like client-go's:
//   - Record never blocks: Events wait in a queue of maxQueuedEvents and
//     are dropped (with a debug log) when it is full;
//   - repeats of an Event (same object, reason and message) are folded into
//     the first one, whose count and lastTimestamp are patched;
//   - each object gets eventBurst Events at once, then one per eventRefill;
//     the repeats in between are counted in the next one written;
//   - an Event the API server rejects is logged and dropped; one it cannot
//     be reached for is tried again, up to maxEventTries times;
//   - Events about cluster-scoped objects go to the namespace "default".
type Recorder struct {
	client     dynamic.NamespaceableResourceInterface
	log        logrus.FieldLogger
	correlator *eventCorrelator // only run's goroutine uses it
	retryDelay time.Duration
	// count, when not nil, is told what became of each Event: sent,
	// limited (folded into the next one sent) or dropped.
	count func(result string)

	queue    chan queuedEvent
	stopping chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	// ctx ends eventFlushTimeout after Stop, which ends the writes still
	// going then.
	ctx    context.Context
	cancel context.CancelFunc
}

// queuedEvent is one occurrence of an Event, waiting to be written.
type queuedEvent struct {
	ref             ObjectRef
	reason, message string
	at              time.Time
}

// New starts a recorder writing through client; Stop ends it. count (may
// be nil) is told what became of each Event: "sent", "limited" (folded
// into the next one sent) or "dropped".
func New(client dynamic.Interface, log logrus.FieldLogger, count func(result string)) *Recorder {
	r := &Recorder{
		count:      count,
		client:     client.Resource(eventsGVR),
		log:        log,
		correlator: newEventCorrelator(),
		retryDelay: eventRetryDelay,
		queue:      make(chan queuedEvent, maxQueuedEvents),
		stopping:   make(chan struct{}),
		done:       make(chan struct{}),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.run()
	return r
}

// MaxMessage is the most bytes of an Event's message (the API server's
// limit for events.k8s.io is 1 kB).
const MaxMessage = 1024

// Message is message as an Event shows it: every character that a
// terminal would not show as itself (ANSI escapes, newlines, a
// right-to-left override) written as a Go escape (limit.Printable), and
// cut to MaxMessage bytes at a character's boundary. Messages hold text
// from callers (a ConversionReview's desiredAPIVersion) and hooks, and
// `kubectl get events` and `describe` print them raw.
func Message(message string) string {
	message = limit.Printable(message)
	if len(message) <= MaxMessage {
		return message
	}
	const more = "…"
	n := MaxMessage - len(more)
	for n > 0 && !utf8.RuneStart(message[n]) {
		n--
	}
	return message[:n] + more
}

// Record queues a Warning Event about ref, its message made safe to show
// (Message). It never blocks.
func (r *Recorder) Record(ref ObjectRef, reason, message string) {
	ev := queuedEvent{ref: ref, reason: reason, message: Message(message), at: time.Now()}
	select {
	case <-r.stopping:
		r.log.WithField("object", ref.String()).Debug("Event not recorded: stopping")
		r.counted(eventDropped)
		return
	default:
	}
	select {
	case r.queue <- ev:
	default:
		r.log.WithField("object", ref.String()).Debugf("Event dropped: %d are waiting to be written", maxQueuedEvents)
		r.counted(eventDropped)
	}
}

// What became of an Event (the result label of kube_events_total).
const (
	eventSent    = "sent"
	eventLimited = "limited"
	eventDropped = "dropped"
)

func (r *Recorder) counted(result string) {
	if r.count != nil {
		r.count(result)
	}
}

// Stop writes the Events queued so far (for at most eventFlushTimeout),
// then ends the recorder. Later records are dropped.
func (r *Recorder) Stop() {
	r.stopOnce.Do(func() {
		close(r.stopping)
		t := time.AfterFunc(eventFlushTimeout, r.cancel)
		<-r.done
		t.Stop()
		r.cancel()
	})
}

func (r *Recorder) run() {
	defer close(r.done)
	for {
		select {
		case ev := <-r.queue:
			r.handle(ev)
		case <-r.stopping:
			for {
				select {
				case ev := <-r.queue:
					r.handle(ev)
				default:
					return
				}
			}
		}
	}
}

func (r *Recorder) handle(ev queuedEvent) {
	s, write := r.correlator.observe(ev)
	if !write {
		r.counted(eventLimited)
		return // counted in s; the next one written carries the count
	}
	for try := 1; ; try++ {
		err := r.write(ev, s)
		if err == nil {
			r.counted(eventSent)
			return
		}
		log := r.log.WithError(err).WithFields(logrus.Fields{"object": ev.ref.String(), "reason": ev.reason})
		var status apierrors.APIStatus
		if errors.As(err, &status) || try == maxEventTries || r.ctx.Err() != nil {
			log.Warn("cannot write the Event; it is dropped")
			r.counted(eventDropped)
			return
		}
		delay := r.retryDelay
		if try == 1 {
			// Spread the first retry, so that operators that lost the API
			// server together do not come back in step.
			delay = time.Duration(rand.Float64() * float64(delay))
		}
		select {
		case <-r.stopping:
			log.Warn("cannot write the Event, and stopping; it is dropped")
			r.counted(eventDropped)
			return
		case <-time.After(delay):
		}
	}
}

// write creates s's Event, or patches its count and lastTimestamp when it
// was written before. An Event that is gone (the API server keeps them for
// an hour by default) is created again, with the count so far.
func (r *Recorder) write(ev queuedEvent, s *eventSeries) error {
	if s.name != "" {
		patch, err := json.Marshal(map[string]any{"count": s.count, "lastTimestamp": timestamp(s.last)})
		if err != nil {
			return err
		}
		_, err = r.client.Namespace(s.namespace).Patch(r.ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	created, err := r.client.Namespace(eventNamespace(ev.ref)).Create(r.ctx, newEvent(ev, s), metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.namespace, s.name = created.GetNamespace(), created.GetName()
	return nil
}

// eventNamespace is where the Events about ref go: its own namespace, or
// "default" for a cluster-scoped object, as client-go does.
func eventNamespace(ref ObjectRef) string {
	if ref.Namespace == "" {
		return metav1.NamespaceDefault
	}
	return ref.Namespace
}

// newEvent returns the core/v1 Event of s, whose latest occurrence is ev.
func newEvent(ev queuedEvent, s *eventSeries) *unstructured.Unstructured {
	involved := map[string]any{"apiVersion": ev.ref.APIVersion, "kind": ev.ref.Kind, "name": ev.ref.Name}
	if ev.ref.Namespace != "" {
		involved["namespace"] = ev.ref.Namespace
	}
	if ev.ref.UID != "" {
		involved["uid"] = string(ev.ref.UID)
	}
	meta := map[string]any{"namespace": eventNamespace(ev.ref)}
	// client-go's name: the object's, then the time in hex nanoseconds.
	// Names that are not valid for an Event get one from the API server.
	if name := fmt.Sprintf("%s.%x", ev.ref.Name, s.last.UnixNano()); len(validation.IsDNS1123Subdomain(name)) == 0 {
		meta["name"] = name
	} else {
		meta["generateName"] = eventComponent + "."
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion":         "v1",
		"kind":               "Event",
		"metadata":           meta,
		"involvedObject":     involved,
		"type":               "Warning",
		"reason":             ev.reason,
		"message":            ev.message,
		"source":             map[string]any{"component": eventComponent},
		"reportingComponent": eventComponent,
		"firstTimestamp":     timestamp(s.first),
		"lastTimestamp":      timestamp(s.last),
		"count":              s.count,
	}}
}

// timestamp formats t as Events' timestamps are: RFC 3339, in seconds, UTC.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
