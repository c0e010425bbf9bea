// Package election elects one leader among replicas with a
// coordination.k8s.io/v1 Lease, the object and the record that client-go's
// tools/leaderelection uses (holderIdentity, leaseDurationSeconds,
// acquireTime, renewTime, leaseTransitions), so that kubectl and other
// tools read it the same way. It is our own code because importing
// client-go's package costs 20 MB of binary and 9 MB of resident memory
// (it brings the whole typed clientset and its scheme); see
// docs/decisions.md.
//
// The rules are client-go's. A candidate takes the Lease when it has no
// holder, or when the Lease has not changed for its leaseDurationSeconds,
// timed on the candidate's own clock from when it saw the last change; the
// update is conditional on the resourceVersion it read, so two candidates
// never both win. The leader renews every retry period; when it cannot
// renew for the renew deadline, its leading context ends. On the way out
// (its context ended) it releases the Lease: no holder, duration 1 s.
//
// A candidate also watches the Lease, so that it sees a release the moment
// it happens and times an expiry from the very change, and tries at once
// instead of at its next retry.
package election

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// Leases is the resource of Lease objects.
var Leases = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// Config says what to elect with.
type Config struct {
	// Client is the Leases of the namespace that holds the Lease.
	Client dynamic.ResourceInterface
	// Name is the Lease's name; Identity this candidate's.
	Name, Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod as in client-go.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Log                                       logrus.FieldLogger
	// OnNewLeader is called when another candidate is seen to hold the
	// Lease (not for this one), with its identity.
	OnNewLeader func(identity string)
}

// Check refuses timings under which two candidates could lead at once: a
// leader that cannot renew stops leading at the latest a retry period plus
// the renew deadline after its last renewal, and another takes the Lease no
// sooner than the lease duration after it saw that renewal.
func (c Config) Check() error {
	if c.RetryPeriod <= 0 || c.RetryPeriod >= c.RenewDeadline || c.RenewDeadline+c.RetryPeriod >= c.LeaseDuration {
		return fmt.Errorf("leader election: want retry period (%s) < renew deadline (%s), and the two together < lease duration (%s), so that a leader that cannot renew stops before another may take the Lease", c.RetryPeriod, c.RenewDeadline, c.LeaseDuration)
	}
	return nil
}

// Elector campaigns for one Lease.
type Elector struct {
	cfg Config

	mu sync.Mutex
	// observed is the Lease as last seen, and observedAt when it was seen
	// to change (its resourceVersion).
	observed   *coordv1.Lease
	observedAt time.Time
	reported   string
	leading    bool
	// watching is set while the watch of the Lease is open.
	watching bool
	// nudge wakes a candidate to try at once.
	nudge chan struct{}
}

// New returns an elector; cfg must pass Check.
func New(cfg Config) (*Elector, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Client == nil || cfg.Name == "" || cfg.Identity == "" {
		return nil, errors.New("leader election: a Lease client, name and identity are needed")
	}
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	return &Elector{cfg: cfg, nudge: make(chan struct{}, 1)}, nil
}

// Leading reports whether this candidate holds the Lease now.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// Run campaigns until ctx ends. Once this candidate holds the Lease, lead
// is started in a goroutine with a context that ends when the Lease could
// not be renewed for the renew deadline, or when ctx ends. Run returns
// once leading has ended, after releasing the Lease when ctx ended (not
// when the Lease was lost); it leads at most once. It returns at once when
// ctx ends before this candidate leads. lead may still be running when
// Run returns.
func (e *Elector) Run(ctx context.Context, lead func(leading context.Context)) {
	if !e.acquire(ctx) {
		return
	}
	leading, cancel := context.WithCancel(ctx)
	go lead(leading)
	e.renew(leading)
	cancel()
	e.mu.Lock()
	e.leading = false
	e.mu.Unlock()
	if ctx.Err() != nil {
		// Leaving (not lost: then the API server may well be away, and
		// the Lease expires anyway).
		e.release()
	}
}

// acquire tries the Lease until it has it (true) or ctx ends (false): at
// once when the watch sees the Lease released or expired, and otherwise
// every retry period, jittered up to 2.2 times it as client-go does, or,
// while the watch is open, every lease duration (a fallback: a standby then
// costs the API server its watch and 4 requests a minute, not 18).
func (e *Elector) acquire(ctx context.Context) bool {
	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	go e.watch(wctx)
	for {
		if e.try(ctx) {
			e.cfg.Log.Info("leader election: took the Lease")
			return true
		}
		wait := time.Duration(float64(e.cfg.RetryPeriod) * (1 + 1.2*rand.Float64()))
		if e.isWatching() {
			// The watch nudges on a release and at an expiry; the tries
			// are only the fallback should it miss something.
			wait = e.cfg.LeaseDuration
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-e.nudge:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// renew renews the Lease every retry period until a renewal has failed for
// the renew deadline, or ctx ends.
func (e *Elector) renew(ctx context.Context) {
	for {
		if !sleep(ctx, e.cfg.RetryPeriod) {
			return
		}
		deadline := time.Now().Add(e.cfg.RenewDeadline)
		for {
			tctx, cancel := context.WithDeadline(ctx, deadline)
			ok := e.try(tctx)
			cancel()
			if ok {
				break
			}
			if ctx.Err() != nil {
				return
			}
			if !time.Now().Add(e.cfg.RetryPeriod).Before(deadline) {
				e.cfg.Log.WithField("renewDeadline", e.cfg.RenewDeadline.String()).Warn("leader election: could not renew the Lease within the renew deadline; leading ends")
				return
			}
			if !sleep(ctx, e.cfg.RetryPeriod) {
				return
			}
		}
	}
}

// try takes or renews the Lease once, and reports whether this candidate
// holds it now. A leader renews from the Lease it last saw, without a read
// first; a conflict sends it to the read.
func (e *Elector) try(ctx context.Context) bool {
	now := time.Now()
	e.mu.Lock()
	var lease *coordv1.Lease
	if e.leading && e.observed != nil {
		lease = e.observed.DeepCopy()
	}
	e.mu.Unlock()
	if lease != nil {
		if e.update(ctx, lease, now) == nil {
			return true
		}
	}
	lease, err := e.get(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return e.create(ctx, now) == nil
	case err != nil:
		e.cfg.Log.WithError(err).Debug("leader election: reading the Lease")
		return false
	}
	e.observe(lease, now)
	if e.heldByAnother(now) {
		return false
	}
	return e.update(ctx, lease, now) == nil
}

// heldByAnother reports whether the observed Lease has another holder and
// has changed within its duration.
func (e *Elector) heldByAnother(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := Holder(e.observed)
	return h != "" && h != e.cfg.Identity && now.Before(e.observedAt.Add(Duration(e.observed)))
}

// update writes lease (as read, with its resourceVersion) with this
// candidate as the holder, renewed now.
func (e *Elector) update(ctx context.Context, lease *coordv1.Lease, now time.Time) error {
	mt := metav1.NewMicroTime(now)
	secs := int32(e.cfg.LeaseDuration / time.Second)
	if Holder(lease) != e.cfg.Identity {
		transitions := int32(0)
		if lease.Spec.LeaseTransitions != nil {
			transitions = *lease.Spec.LeaseTransitions
		}
		if Holder(lease) != "" || lease.Spec.AcquireTime != nil {
			transitions++
		}
		lease.Spec.LeaseTransitions = &transitions
		lease.Spec.AcquireTime = &mt
	}
	id := e.cfg.Identity
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &id, &secs, &mt
	u, err := Encode(lease)
	if err != nil {
		return err
	}
	out, err := e.cfg.Client.Update(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	return e.held(out, now)
}

func (e *Elector) create(ctx context.Context, now time.Time) error {
	mt := metav1.NewMicroTime(now)
	secs, zero, id := int32(e.cfg.LeaseDuration/time.Second), int32(0), e.cfg.Identity
	lease := &coordv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: e.cfg.Name},
		Spec: coordv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs, AcquireTime: &mt, RenewTime: &mt,
			LeaseTransitions: &zero},
	}
	u, err := Encode(lease)
	if err != nil {
		return err
	}
	out, err := e.cfg.Client.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		e.cfg.Log.WithError(err).Debug("leader election: creating the Lease")
		return err
	}
	return e.held(out, now)
}

// held records a Lease this candidate has just written.
func (e *Elector) held(u *unstructured.Unstructured, now time.Time) error {
	lease, err := Decode(u)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.observed, e.observedAt, e.leading = lease, now, true
	e.mu.Unlock()
	return nil
}

func (e *Elector) get(ctx context.Context) (*coordv1.Lease, error) {
	u, err := e.cfg.Client.Get(ctx, e.cfg.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return Decode(u)
}

// observe notes lease as seen at now; a change of its resourceVersion
// starts its duration again. It reports a new holder other than this one.
func (e *Elector) observe(lease *coordv1.Lease, now time.Time) {
	e.mu.Lock()
	if changed(e.observed, lease) {
		e.observed, e.observedAt = lease, now
	}
	h := Holder(lease)
	report := h != "" && h != e.cfg.Identity && h != e.reported
	if report {
		e.reported = h
	}
	e.mu.Unlock()
	if report && e.cfg.OnNewLeader != nil {
		e.cfg.OnNewLeader(h)
	}
}

// release gives the Lease up if this candidate still holds it: no holder,
// duration 1 s, the transitions kept.
func (e *Elector) release() {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.RenewDeadline)
	defer cancel()
	lease, err := e.get(ctx)
	if err != nil || Holder(lease) != e.cfg.Identity {
		return
	}
	now := metav1.NewMicroTime(time.Now())
	one, none := int32(1), ""
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = &none, &one
	lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
	u, err := Encode(lease)
	if err == nil {
		_, err = e.cfg.Client.Update(ctx, u, metav1.UpdateOptions{})
	}
	if err != nil {
		e.cfg.Log.WithError(err).Warn("leader election: releasing the Lease; the others take it when it expires")
		return
	}
	e.cfg.Log.Info("leader election: released the Lease")
}

// watch follows the Lease while this candidate campaigns: each change is
// observed as it comes, a release nudges the candidate at once, and so does
// the end of the duration of the last change. A broken watch is started
// again after a retry period; the first refusal is a warning (RBAC without
// list and watch on the Lease leaves the candidate with its retries).
func (e *Elector) watch(ctx context.Context) {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", e.cfg.Name).String()}
	expiry := time.NewTimer(time.Hour)
	expiry.Stop()
	defer expiry.Stop()
	warned := false
	for ctx.Err() == nil {
		w, err := e.cfg.Client.Watch(ctx, opts)
		switch {
		case err != nil && ctx.Err() == nil && !warned:
			warned = true
			e.cfg.Log.WithError(err).Warn("leader election: cannot watch the Lease, so a released or expired Lease is noticed only at the next retry (grant list and watch on it)")
		case err != nil:
			e.cfg.Log.WithError(err).Debug("leader election: watching the Lease")
		default:
			e.setWatching(true)
			e.follow(ctx, w, expiry)
			e.setWatching(false)
			w.Stop()
		}
		select {
		case <-ctx.Done():
		case <-time.After(e.cfg.RetryPeriod):
		}
	}
}

func (e *Elector) follow(ctx context.Context, w watch.Interface, expiry *time.Timer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-expiry.C:
			e.mu.Lock()
			h, d := Holder(e.observed), Duration(e.observed)
			e.mu.Unlock()
			e.cfg.Log.WithFields(logrus.Fields{"holder": h, "leaseDuration": d.String()}).Info("leader election: the Lease expired (no renewal seen for its duration); trying it now")
			e.poke()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			u, isObject := ev.Object.(*unstructured.Unstructured)
			if !isObject || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			lease, err := Decode(u)
			if err != nil {
				continue
			}
			now := time.Now()
			e.observe(lease, now)
			e.mu.Lock()
			h, due := Holder(e.observed), e.observedAt.Add(Duration(e.observed))
			e.mu.Unlock()
			if h == "" {
				expiry.Stop()
				e.poke()
				continue
			}
			expiry.Reset(max(time.Until(due), 0))
		}
	}
}

// sleep waits d, and reports false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

func (e *Elector) isWatching() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.watching
}

func (e *Elector) setWatching(v bool) {
	e.mu.Lock()
	e.watching = v
	e.mu.Unlock()
}

func (e *Elector) poke() {
	select {
	case e.nudge <- struct{}{}:
	default:
	}
}

// changed reports whether b is a newer Lease than a: another
// resourceVersion, holder or renewal time.
func changed(a, b *coordv1.Lease) bool {
	if a == nil {
		return true
	}
	renewed := func(l *coordv1.Lease) time.Time {
		if l.Spec.RenewTime == nil {
			return time.Time{}
		}
		return l.Spec.RenewTime.Time
	}
	return a.ResourceVersion != b.ResourceVersion || Holder(a) != Holder(b) || !renewed(a).Equal(renewed(b))
}

// Holder returns the Lease's holderIdentity, or "".
func Holder(l *coordv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// Duration returns the Lease's leaseDurationSeconds as a duration.
func Duration(l *coordv1.Lease) time.Duration {
	if l == nil || l.Spec.LeaseDurationSeconds == nil {
		return 0
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}

// Encode returns l as an object for the dynamic client.
func Encode(l *coordv1.Lease) (*unstructured.Unstructured, error) {
	l.APIVersion, l.Kind = "coordination.k8s.io/v1", "Lease"
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// Decode returns the Lease u holds.
func Decode(u *unstructured.Unstructured) (*coordv1.Lease, error) {
	var l coordv1.Lease
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &l); err != nil {
		return nil, fmt.Errorf("leader election: the Lease: %w", err)
	}
	return &l, nil
}
