package watch

import (
	"fmt"
	"slices"
	"sync"

	"github.com/hook-operator/hook-operator/internal/binding"
)

// Phase is where a binding is on its way from configuration to delivering
// events. The watch is the only owner of it: the operator, readiness and
// the debug routes read it through Binding.Phase and Watcher.Changed.
type Phase int

const (
	// Resolving: the binding has not started; its kind is not looked up yet.
	Resolving Phase = iota
	// Unserved: the API server does not serve the binding's kind (its CRD
	// is not installed). The binding delivers nothing; it keeps retrying
	// and moves on to Listing once the kind is served. The bindings whose
	// contexts carry its snapshot wait for it (see Held): an empty
	// snapshot would tell their hook that the objects are gone. Bindings
	// that only come after it in its hook do not.
	Unserved
	// Listing: the binding's watches are listing its objects.
	Listing
	// Held: listed and synchronized, but its Synchronization and the events
	// after it wait until every binding whose snapshot its contexts carry
	// (group members, includeSnapshotsFrom) is Held or later (has listed),
	// and every earlier binding of its hook is Delivering or later, or
	// Unserved, or held by one that is. Without the hold, a group context
	// could show a member's snapshot empty only because that member had
	// not listed yet, or
	// because its kind is not served yet (a CRD installed later, a typo),
	// and a hook that deletes what it no longer sees would delete it all;
	// and a hook's Synchronizations come in the order of its configuration,
	// as in shell-operator, whichever binding lists first.
	Held
	// Delivering: released; the Synchronization is on its way to the Sink.
	Delivering
	// Synced: the Sink has returned from the binding's Synchronization;
	// the events after it follow as they come.
	Synced
)

var phaseNames = [...]string{"resolving", "unserved", "listing", "held", "delivering", "synced"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// snapshotComplete reports whether a binding in phase p has listed: a
// binding that depends on its snapshot may go on.
func (p Phase) snapshotComplete() bool { return p >= Held }

// delivery is one call to make on the Sink.
type delivery struct {
	b    *Binding
	kind deliveryKind
	// event and obj: an Event; objects: a Synchronization; obj's namespace
	// and name: an EnsureFinalizer.
	event   string
	obj     binding.Object
	objects []binding.Object
}

type deliveryKind int

const (
	deliverSynchronization deliveryKind = iota
	deliverEvent
	deliverEnsureFinalizer
)

// outbox owns every binding's Phase and hands what the bindings observe to
// the Sink: in the order they observed it, one call at a time, and never
// while any lock is held, so that a Sink may call back into the watch.
//
// Bindings add deliveries under their own lock (so that the order of
// deliveries is the order of the cache changes that made them) and call
// flush once they have let it go. Whoever flushes first drains the outbox
// for everyone; the others return at once and their deliveries follow in
// order. A watch fed from one goroutine (Memory) therefore delivers
// synchronously, before Notify returns.
//
// Lock order: Binding.mu, then outbox.mu. The outbox never takes a
// binding's lock.
type outbox struct {
	sink Sink

	mu       sync.Mutex
	bindings []*Binding // in hook and configuration order
	phase    map[*Binding]Phase
	// deps are, per binding, the bindings whose snapshots its contexts
	// carry (same hook, same group or includeSnapshotsFrom).
	deps map[*Binding][]*Binding
	// held are the deliveries of Held bindings, in order.
	held map[*Binding][]delivery
	// queue[head:] are the deliveries due, in order.
	queue    []delivery
	head     int
	draining bool
	// changed is closed, and replaced, on every phase change.
	changed chan struct{}
}

func newOutbox(sink Sink) *outbox {
	return &outbox{
		sink:    sink,
		phase:   map[*Binding]Phase{},
		deps:    map[*Binding][]*Binding{},
		held:    map[*Binding][]delivery{},
		changed: make(chan struct{}),
	}
}

// register adds bindings, all in phase Resolving, and works out which
// bindings each depends on. Call it before any binding starts.
func (o *outbox) register(bindings []*Binding) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bindings = append(o.bindings, bindings...)
	for _, b := range bindings {
		o.phase[b] = Resolving
	}
	for _, b := range o.bindings {
		o.deps[b] = dependencies(b, o.bindings)
	}
}

// unregister drops bindings (Watcher.Remove): their phases, their held
// and queued deliveries; the bindings that depended on them are released
// if they waited only for them. Calls about them afterwards are ignored.
func (o *outbox) unregister(bindings []*Binding) {
	o.mu.Lock()
	defer o.mu.Unlock()
	gone := func(b *Binding) bool { return slices.Contains(bindings, b) }
	o.bindings = slices.DeleteFunc(o.bindings, gone)
	for _, b := range bindings {
		delete(o.phase, b)
		delete(o.deps, b)
		delete(o.held, b)
	}
	for _, b := range o.bindings {
		o.deps[b] = dependencies(b, o.bindings)
	}
	kept := slices.DeleteFunc(o.queue[o.head:], func(d delivery) bool { return gone(d.b) })
	o.queue = o.queue[:o.head+len(kept)]
	close(o.changed)
	o.changed = make(chan struct{})
	o.releaseLocked()
}

// registeredLocked reports whether b is one of the outbox's bindings: not
// removed.
func (o *outbox) registeredLocked(b *Binding) bool {
	_, ok := o.phase[b]
	return ok
}

// dependencies returns the bindings of b's hook whose snapshots b's
// contexts carry: the other members of its group and its
// includeSnapshotsFrom.
func dependencies(b *Binding, all []*Binding) []*Binding {
	cfg := b.cfg
	var out []*Binding
	for _, d := range all {
		if d == b || d.Hook.Name != b.Hook.Name { // by name: a reload keeps some bindings of a changed hook
			continue
		}
		name := d.cfg.Name
		if (cfg.Group != "" && d.cfg.Group == cfg.Group) || slices.Contains(cfg.IncludeSnapshotsFrom, name) {
			out = append(out, d)
		}
	}
	return out
}

// Phase returns b's phase.
func (o *outbox) phaseOf(b *Binding) Phase {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.phase[b]
}

// changes returns a channel closed at the next phase change of any binding.
func (o *outbox) changes() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// setPhase moves b to p, tells whoever waits for a change, and delivers
// what that releases.
func (o *outbox) setPhase(b *Binding, p Phase) {
	o.mu.Lock()
	o.setPhaseLocked(b, p)
	o.mu.Unlock()
	o.flush()
}

func (o *outbox) setPhaseLocked(b *Binding, p Phase) {
	if o.phase[b] == p || !o.registeredLocked(b) {
		return
	}
	o.phase[b] = p
	close(o.changed)
	o.changed = make(chan struct{})
	if p.snapshotComplete() {
		o.releaseLocked()
	}
}

// synchronization adds b's Synchronization. The first one moves b to Held,
// or straight to Delivering when every binding it depends on has listed;
// later ones (resynchronizationPeriod) follow b's other deliveries.
func (o *outbox) synchronization(b *Binding, objects []binding.Object) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.registeredLocked(b) {
		return
	}
	d := delivery{b: b, kind: deliverSynchronization, objects: objects}
	if o.phase[b] < Held {
		o.held[b] = append(o.held[b], d)
		o.setPhaseLocked(b, Held)
		return
	}
	o.addLocked(d)
}

// event adds an Event of b; it waits behind b's Synchronization while b is
// Held.
func (o *outbox) event(b *Binding, watchEvent string, obj binding.Object) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.addLocked(delivery{b: b, kind: deliverEvent, event: watchEvent, obj: obj})
}

// ensureFinalizer adds a request for b's finalizer on an object. It does
// not wait for b's Synchronization: it writes nothing a hook reads.
func (o *outbox) ensureFinalizer(b *Binding, namespace, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.registeredLocked(b) {
		return
	}
	o.queue = append(o.queue, delivery{b: b, kind: deliverEnsureFinalizer, obj: binding.Object{Namespace: namespace, Name: name}})
}

func (o *outbox) addLocked(d delivery) {
	if !o.registeredLocked(d.b) {
		return
	}
	if len(o.held[d.b]) > 0 {
		o.held[d.b] = append(o.held[d.b], d)
		return
	}
	o.queue = append(o.queue, d)
}

// releaseLocked moves the deliveries of every Held binding whose
// dependencies have all listed, and whose hook's earlier bindings have
// been released, to the queue, in binding order.
func (o *outbox) releaseLocked() {
	for _, b := range o.bindings {
		if o.phase[b] != Held || !o.readyLocked(b) {
			continue
		}
		o.queue = append(o.queue, o.held[b]...)
		delete(o.held, b)
		o.phase[b] = Delivering // setPhaseLocked's notification is already due
	}
}

func (o *outbox) readyLocked(b *Binding) bool { return len(o.holdersLocked(b)) == 0 }

// holdersLocked returns the bindings that a Held b waits for: those whose
// snapshots its contexts carry and that have not listed, then the earlier
// bindings of its hook not yet released.
func (o *outbox) holdersLocked(b *Binding) []*Binding {
	var out []*Binding
	for _, d := range o.deps[b] {
		if !o.phase[d].snapshotComplete() {
			out = append(out, d)
		}
	}
	for _, e := range o.bindings {
		if e == b {
			break
		}
		if e.Hook.Name == b.Hook.Name && o.phase[e] < Delivering && !o.stalledLocked(e, map[*Binding]bool{}) && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// stalledLocked reports whether e waits for a kind to be served: it is
// Unserved, or Held for a binding whose snapshot it carries that is
// stalled. The later bindings of its hook do not wait for it, as they
// would wait for no binding that is not served.
func (o *outbox) stalledLocked(e *Binding, seen map[*Binding]bool) bool {
	switch {
	case o.phase[e] == Unserved:
		return true
	case o.phase[e] != Held || seen[e]:
		return false
	}
	seen[e] = true
	for _, d := range o.deps[e] {
		if o.stalledLocked(d, seen) {
			return true
		}
	}
	return false
}

// heldBy returns the bindings b waits for while it is Held (see
// holdersLocked), and the first binding with phase Unserved that it
// waits for, directly or through them, or nil.
func (o *outbox) heldBy(b *Binding) (holders []*Binding, unserved *Binding) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.phase[b] != Held {
		return nil, nil
	}
	holders = o.holdersLocked(b)
	seen := map[*Binding]bool{b: true}
	next := holders
	for len(next) > 0 && unserved == nil {
		var later []*Binding
		for _, h := range next {
			if seen[h] {
				continue
			}
			seen[h] = true
			switch o.phase[h] {
			case Unserved:
				if unserved == nil {
					unserved = h
				}
			case Held:
				later = append(later, o.holdersLocked(h)...)
			}
		}
		next = later
	}
	return holders, unserved
}

// flush hands the queued deliveries to the Sink, unless another goroutine
// is doing so already: that one delivers them, in order, before it stops.
func (o *outbox) flush() {
	o.mu.Lock()
	if o.draining {
		o.mu.Unlock()
		return
	}
	o.draining = true
	for o.head < len(o.queue) {
		d := o.queue[o.head]
		o.queue[o.head] = delivery{}
		o.head++
		o.mu.Unlock()
		o.deliver(d)
		o.mu.Lock()
		if d.kind == deliverSynchronization && o.phase[d.b] == Delivering {
			o.setPhaseLocked(d.b, Synced)
		}
	}
	o.queue, o.head = o.queue[:0], 0
	if cap(o.queue) > maxKeptQueue {
		o.queue = nil // a burst's backing array is not kept
	}
	o.draining = false
	o.mu.Unlock()
}

// maxKeptQueue is the largest queue capacity kept between drains.
const maxKeptQueue = 1024

func (o *outbox) deliver(d delivery) {
	switch d.kind {
	case deliverSynchronization:
		o.sink.Synchronization(d.b, d.objects)
	case deliverEvent:
		o.sink.Event(d.b, d.event, d.obj)
	case deliverEnsureFinalizer:
		o.sink.EnsureFinalizer(d.b, d.obj.Namespace, d.obj.Name)
	}
}
