// Package election elects one leader among replicas with a
// coordination.k8s.io/v1 Lease, the object and the record that client-go's
// tools/leaderelection uses (holderIdentity, leaseDurationSeconds,
// acquireTime, renewTime, leaseTransitions), so that kubectl and other
// tools read it the same way. It is our own code because importing
// client-go's package costs 20 MB of binary and 9 MB of resident memory
// (it brings the whole typed clientset and its scheme); see
// docs/design/replicas.md, "Leader election".
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
//
// The record's fields and the watch that opens again when it breaks are
// internal/lease's, shared with ring membership (internal/shard), and the
// waits of the loop internal/loop's; the rules above are this package's.
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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/lease"
	"github.com/hook-operator/hook-operator/internal/loop"
)

// Leases is the resource of Lease objects (lease.Resource).
var Leases = lease.Resource

// DefaultLeaseName is the Lease when --leader-elect-lease-name is not
// given (start's, and what rbac grants); with --sharding it names the
// ring too.
const DefaultLeaseName = "hook-operator"

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
	// Standby makes this replica follow the Lease without ever taking it:
	// it never creates, takes or renews the Lease, so it never leads.
	Standby bool
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
	// now is the candidate's clock for the Lease's times (time.Now; tests
	// move it on).
	now func() time.Time

	mu sync.Mutex
	// observed is the Lease as last seen, and observedAt when it was seen
	// to change (its resourceVersion).
	observed   *coordv1.Lease
	observedAt time.Time
	reported   string
	leading    bool
	// nudge wakes a candidate to try at once.
	nudge loop.Nudge
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
	return &Elector{cfg: cfg, now: time.Now, nudge: loop.NewNudge()}, nil
}

// Leading reports whether this candidate holds the Lease now.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// Run campaigns until ctx ends (a Standby elector only follows the Lease,
// and never calls lead). Once this candidate holds the Lease, lead
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
	expiry := time.AfterFunc(time.Hour, e.expired)
	expiry.Stop()
	defer expiry.Stop()
	w := e.watcher(expiry)
	go w.Run(wctx)
	for {
		if e.try(ctx) {
			e.cfg.Log.Info("leader election: took the Lease")
			return true
		}
		wait := time.Duration(float64(e.cfg.RetryPeriod) * (1 + 1.2*rand.Float64()))
		if w.Watching() {
			// The watch nudges on a release and at an expiry; the tries
			// are only the fallback should it miss something.
			wait = e.cfg.LeaseDuration
		}
		if !e.nudge.Wait(ctx, wait) {
			return false
		}
	}
}

// renew renews the Lease every retry period until a renewal has failed for
// the renew deadline, or ctx ends.
func (e *Elector) renew(ctx context.Context) {
	for {
		if !loop.Sleep(ctx, e.cfg.RetryPeriod) {
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
			if !loop.Sleep(ctx, e.cfg.RetryPeriod) {
				return
			}
		}
	}
}

// try takes or renews the Lease once, and reports whether this candidate
// holds it now. A leader renews from the Lease it last saw, without a read
// first, while that Lease names it the holder (as client-go's does); a
// conflict sends it to the read. A leader that has read another's Lease
// then must not write over it: it would take a Lease that the other took
// by the rules.
func (e *Elector) try(ctx context.Context) bool {
	now := e.now()
	e.mu.Lock()
	var l *coordv1.Lease
	if e.leading && lease.Holder(e.observed) == e.cfg.Identity {
		l = e.observed.DeepCopy()
	}
	e.mu.Unlock()
	if l != nil {
		if e.update(ctx, l, now) == nil {
			return true
		}
	}
	l, err := e.get(ctx)
	switch {
	case e.cfg.Standby:
		if err == nil {
			e.observe(l, now)
		}
		return false
	case apierrors.IsNotFound(err):
		return e.create(ctx, now) == nil
	case err != nil:
		e.cfg.Log.WithError(err).Debug("leader election: reading the Lease")
		return false
	}
	e.observe(l, now)
	if e.heldByAnother(now) {
		return false
	}
	return e.update(ctx, l, now) == nil
}

// heldByAnother reports whether the observed Lease has another holder and
// has changed within its duration.
func (e *Elector) heldByAnother(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := lease.Holder(e.observed)
	return h != "" && h != e.cfg.Identity && now.Before(e.observedAt.Add(lease.Duration(e.observed)))
}

// update writes l (as read, with its resourceVersion) with this candidate
// as the holder, renewed now.
func (e *Elector) update(ctx context.Context, l *coordv1.Lease, now time.Time) error {
	if lease.Holder(l) != e.cfg.Identity {
		lease.Take(l, e.cfg.Identity, now)
	}
	lease.Renew(l, e.cfg.LeaseDuration, now)
	u, err := lease.Encode(l)
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
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: e.cfg.Name}}
	lease.Take(l, e.cfg.Identity, now)
	lease.Renew(l, e.cfg.LeaseDuration, now)
	u, err := lease.Encode(l)
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
	l, err := lease.Decode(u)
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	e.mu.Lock()
	e.observed, e.observedAt, e.leading = l, now, true
	e.mu.Unlock()
	return nil
}

func (e *Elector) get(ctx context.Context) (*coordv1.Lease, error) {
	u, err := e.cfg.Client.Get(ctx, e.cfg.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	l, err := lease.Decode(u)
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return l, nil
}

// observe notes l as seen at now; a change of its resourceVersion starts
// its duration again. It reports a new holder other than this one.
func (e *Elector) observe(l *coordv1.Lease, now time.Time) {
	e.mu.Lock()
	if changed(e.observed, l) {
		e.observed, e.observedAt = l, now
	}
	h := lease.Holder(l)
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
	l, err := e.get(ctx)
	if err != nil || lease.Holder(l) != e.cfg.Identity {
		return
	}
	lease.Release(l, e.now())
	u, err := lease.Encode(l)
	if err == nil {
		_, err = e.cfg.Client.Update(ctx, u, metav1.UpdateOptions{})
	}
	if err != nil {
		e.cfg.Log.WithError(err).Warn("leader election: releasing the Lease; the others take it when it expires")
		return
	}
	e.cfg.Log.Info("leader election: released the Lease")
}

// watcher follows the Lease while this candidate campaigns: each change is
// observed as it comes, a release nudges the candidate at once, and expiry
// is set to the end of the duration of the last change. A broken watch is
// started again after a retry period; the first refusal is a warning (RBAC
// without list and watch on the Lease leaves the candidate with its
// retries).
func (e *Elector) watcher(expiry *time.Timer) *lease.Watcher {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", e.cfg.Name).String()}
	return &lease.Watcher{
		Open:  func(ctx context.Context) (watch.Interface, error) { return e.cfg.Client.Watch(ctx, opts) },
		Event: func(ev watch.Event) { e.seen(ev, expiry) },
		Retry: e.cfg.RetryPeriod,
		Failed: func(err error, first bool) {
			if first {
				e.cfg.Log.WithError(err).Warn("leader election: cannot watch the Lease, so a released or expired Lease is noticed only at the next retry (grant list and watch on it)")
				return
			}
			e.cfg.Log.WithError(err).Debug("leader election: watching the Lease")
		},
	}
}

// seen observes a Lease the watch brought: a release nudges the candidate
// at once; otherwise expiry is set to when the Lease's duration since this
// change ends.
func (e *Elector) seen(ev watch.Event, expiry *time.Timer) {
	u, isObject := ev.Object.(*unstructured.Unstructured)
	if !isObject || (ev.Type != watch.Added && ev.Type != watch.Modified) {
		return
	}
	l, err := lease.Decode(u)
	if err != nil {
		return
	}
	now := e.now()
	e.observe(l, now)
	e.mu.Lock()
	h, due := lease.Holder(e.observed), e.observedAt.Add(lease.Duration(e.observed))
	e.mu.Unlock()
	if h == "" {
		expiry.Stop()
		e.nudge.Poke()
		return
	}
	expiry.Reset(max(due.Sub(now), 0))
}

// expired nudges the candidate when the observed Lease's duration has
// passed without a change.
func (e *Elector) expired() {
	e.mu.Lock()
	h, d := lease.Holder(e.observed), lease.Duration(e.observed)
	e.mu.Unlock()
	log := e.cfg.Log.WithFields(logrus.Fields{"holder": h, "leaseDuration": d.String()})
	if e.cfg.Standby {
		log.Info("leader election: the Lease expired (no renewal seen for its duration); this replica is a standby only and leaves it to the others")
		return
	}
	log.Info("leader election: the Lease expired (no renewal seen for its duration); trying it now")
	e.nudge.Poke()
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
	return a.ResourceVersion != b.ResourceVersion || lease.Holder(a) != lease.Holder(b) || !renewed(a).Equal(renewed(b))
}
