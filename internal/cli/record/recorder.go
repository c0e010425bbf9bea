package record

import (
	"sync"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/fixture"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// recorder is the watch.Sink of a recording. It keeps the objects of every
// binding's Synchronization, and once every binding has synchronized, the
// events that follow, each change once however many bindings see it.
type recorder struct {
	log logrus.FieldLogger

	mu sync.Mutex
	// pending are the bindings whose Synchronization has not come yet.
	pending map[*watch.Binding]bool
	// synced is closed when pending becomes empty; events count from then.
	synced    chan struct{}
	recording bool
	stopped   bool
	objects   map[objectKey]*unstructured.Unstructured
	events    []fixture.Event
	// seen holds the changes recorded: uid, resourceVersion and type.
	seen map[string]bool
}

type objectKey struct{ apiVersion, kind, namespace, name string }

func keyOf(u *unstructured.Unstructured) objectKey {
	return objectKey{u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()}
}

var _ watch.Sink = (*recorder)(nil)

func newRecorder(log logrus.FieldLogger) *recorder {
	return &recorder{
		log:     log,
		pending: map[*watch.Binding]bool{},
		synced:  make(chan struct{}),
		objects: map[objectKey]*unstructured.Unstructured{},
		seen:    map[string]bool{},
	}
}

// expect sets the bindings whose Synchronization starts the recording of
// events. Call it once, before the watch starts.
func (r *recorder) expect(bindings []*watch.Binding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range bindings {
		r.pending[b] = true
	}
	r.checkSynced()
}

func (r *recorder) checkSynced() {
	if len(r.pending) == 0 && !r.recording {
		r.recording = true
		close(r.synced)
	}
}

// Synchronization keeps the binding's objects; a later binding's copy of
// an object replaces an earlier one, being more recent.
func (r *recorder) Synchronization(b *watch.Binding, objects []binding.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recording || r.stopped {
		return
	}
	for _, o := range objects {
		if u := r.copyOf(o); u != nil {
			r.objects[keyOf(u)] = u
		}
	}
	delete(r.pending, b)
	r.checkSynced()
}

// Event records one change, unless another binding already recorded it.
func (r *recorder) Event(_ *watch.Binding, watchEvent string, obj binding.Object) {
	if watchEvent != hook.Added && watchEvent != hook.Modified && watchEvent != hook.Deleted {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.recording || r.stopped {
		return
	}
	u := r.copyOf(obj)
	if u == nil {
		return
	}
	id := string(u.GetUID()) + "/" + u.GetResourceVersion() + "/" + watchEvent
	if r.seen[id] {
		return
	}
	r.seen[id] = true
	r.events = append(r.events, fixture.Event{Type: watchEvent, Object: u})
}

// EnsureFinalizer is never called: recorded bindings have no finalizer.
func (r *recorder) EnsureFinalizer(*watch.Binding, string, string) {}

// add keeps an object read outside the watch (a Namespace, a
// CustomResourceDefinition).
func (r *recorder) add(u *unstructured.Unstructured) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.objects[keyOf(u)] = u
}

// stop ends the recording: later calls change nothing.
func (r *recorder) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
}

// fixture returns what was recorded.
func (r *recorder) fixture() *fixture.Fixture {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := &fixture.Fixture{Events: append([]fixture.Event(nil), r.events...)}
	for _, u := range r.objects {
		f.Objects = append(f.Objects, u)
	}
	return f
}

// copyOf returns the object of a binding as an unstructured object of its
// own, decoded from the JSON the watch cache keeps.
func (r *recorder) copyOf(o binding.Object) *unstructured.Unstructured {
	if o.Raw == nil {
		r.log.WithField("object", o.Namespace+"/"+o.Name).Warn("the watch delivered no object; not recorded")
		return nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal(o.Raw, &m); err != nil {
		r.log.WithError(err).WithField("object", o.Namespace+"/"+o.Name).Warn("object is not JSON; not recorded")
		return nil
	}
	return &unstructured.Unstructured{Object: m}
}
