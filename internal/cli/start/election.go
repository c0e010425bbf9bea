package start

import (
	"context"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
)

// election runs client-go's leader elector for one Lease, and runs a fresh
// one at once when the Lease is released while this replica stands by. An
// elector that does not lead tries the Lease every retry period, jittered
// up to 2.2 times it (2 to 4.4 s by default), so a standby would notice a
// released Lease only at its next try, and an expired one up to that long
// after it expired. A watch on the Lease sees the release (a leader's last
// update, with no holder) within milliseconds, and the expiry at the
// moment it comes (see watchLease); the new elector's first try comes at
// once. (A fresh elector could not take an expired Lease at once: it
// times the lease duration from its own first sight of the Lease.)
type election struct {
	config leaderelection.LeaderElectionConfig
	leases coordinationv1.LeaseInterface
	// name is the Lease's name; id this replica's identity.
	name, id string
	log      logrus.FieldLogger
	// lead runs while this replica leads; leading ends when the Lease is
	// lost or the elector stops.
	lead func(leading context.Context)
	// stopped is called once leading has ended.
	stopped func()

	mu      sync.Mutex
	current *leaderelection.LeaderElector
}

// withCallbacks returns the elector configuration with the given
// callbacks and a log line for each new leader.
func (e *election) withCallbacks(started func(context.Context), stopped func()) leaderelection.LeaderElectionConfig {
	c := e.config
	c.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: started,
		OnStoppedLeading: stopped,
		OnNewLeader: func(leader string) {
			if leader != "" && leader != e.id {
				e.log.WithField("leader", leader).Info("leader election: standby; another replica leads")
			}
		},
	}
	return c
}

// leading reports whether the current elector holds the Lease.
func (e *election) leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.current != nil && e.current.IsLeader()
}

// run runs electors until one has led and stopped, or ctx ends.
func (e *election) run(ctx context.Context) {
	for ctx.Err() == nil {
		if e.attempt(ctx) {
			return
		}
	}
}

// attempt runs one elector and reports whether this replica led. While it
// has not led, a release of the Lease seen by the watch abandons it. Which
// of the two comes first is decided under one lock: an elector that took
// the Lease in the same instant either leads (and the release is ignored)
// or is abandoned before it runs anything, and gives the Lease back on its
// way out (ReleaseOnCancel), so that the next elector takes it.
func (e *election) attempt(ctx context.Context) bool {
	actx, abandon := context.WithCancel(ctx)
	defer abandon()
	wctx, stopWatching := context.WithCancel(actx)
	defer stopWatching()
	var mu sync.Mutex
	var claimed, abandoned bool
	started := func(leading context.Context) {
		mu.Lock()
		if abandoned {
			mu.Unlock()
			return
		}
		claimed = true
		mu.Unlock()
		stopWatching()
		e.lead(leading)
	}
	stopped := func() {
		mu.Lock()
		led := claimed
		mu.Unlock()
		if led {
			e.stopped()
		}
	}
	le, err := leaderelection.NewLeaderElector(e.withCallbacks(started, stopped))
	if err != nil {
		// The configuration was checked before the first attempt.
		e.log.WithError(err).Error("leader election")
		return true
	}
	e.mu.Lock()
	e.current = le
	e.mu.Unlock()
	go e.watchLease(wctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if claimed || abandoned {
			return
		}
		abandoned = true
		abandon()
	})
	le.Run(actx)
	mu.Lock()
	defer mu.Unlock()
	if abandoned && ctx.Err() == nil {
		e.log.Debug("leader election: the Lease was released; trying it at once")
	}
	return claimed
}

// watchLease calls released whenever the Lease is updated to have no
// holder, and releases it itself once it has expired, until ctx ends.
//
// Expired means what it means to client-go's elector: no change to the
// Lease seen for its leaseDurationSeconds, timed from when this replica
// saw the last change (so never earlier than the holder's own clock would
// say). The elector alone finds that out only at its next try after the
// duration, and its tries are up to 2.2 retry periods apart; the watch
// sees every renewal as it happens, so the release comes at the duration.
// The release is an update conditional on the resourceVersion of the last
// change seen: if the holder renewed meanwhile, it fails and nothing
// happens.
//
// A broken watch is started again after a retry period; what it missed
// meanwhile is found by the elector's own tries. The first refusal is a
// warning (RBAC without list and watch on the Lease slows every handover
// down to the elector's tries), later ones are debug.
func (e *election) watchLease(ctx context.Context, released func()) {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", e.name).String()}
	warned := false
	var last *coordv1.Lease // the last change seen with another holder, nil if none
	expiry := time.NewTimer(time.Hour)
	expiry.Stop()
	defer expiry.Stop()
	for ctx.Err() == nil {
		w, err := e.leases.Watch(ctx, opts)
		switch {
		case err != nil && ctx.Err() == nil && !warned:
			warned = true
			e.log.WithError(err).Warn("leader election: cannot watch the Lease, so a released or expired Lease is noticed only at the next retry period (grant list and watch on it)")
		case err != nil:
			e.log.WithError(err).Debug("leader election: watching the Lease")
		default:
			last = e.followLease(ctx, w, last, expiry, released)
			w.Stop()
		}
		select {
		case <-ctx.Done():
		case <-time.After(e.config.RetryPeriod):
		}
	}
}

// followLease reads one watch until it ends (see watchLease); last is the
// last change seen before it, if any, whose expiry timer runs.
func (e *election) followLease(ctx context.Context, w watch.Interface, last *coordv1.Lease, expiry *time.Timer, released func()) *coordv1.Lease {
	for {
		select {
		case <-ctx.Done():
			return last
		case <-expiry.C:
			if last != nil && e.expire(ctx, last) {
				last = nil
				released()
			}
		case ev, ok := <-w.ResultChan():
			if !ok {
				return last
			}
			l, isLease := ev.Object.(*coordv1.Lease)
			if !isLease || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			switch {
			case holder == "":
				last = nil
				expiry.Stop()
				if ev.Type == watch.Modified {
					released()
				}
			case holder == e.id:
				last = nil
				expiry.Stop()
			case last == nil || l.ResourceVersion != last.ResourceVersion:
				// A change: the Lease is good for its duration from now.
				// (A watch started again sees the same Lease unchanged.)
				last = l
				d := 15 * time.Second
				if l.Spec.LeaseDurationSeconds != nil {
					d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
				}
				expiry.Reset(d)
			}
		}
	}
}

// expire releases the Lease last, unchanged for its whole duration, as its
// holder would on its way out; it reports whether it did.
func (e *election) expire(ctx context.Context, last *coordv1.Lease) bool {
	l := last.DeepCopy()
	now := metav1.NewMicroTime(time.Now())
	one, none := int32(1), ""
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &none, &one
	l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
	log := e.log.WithField("holder", *last.Spec.HolderIdentity)
	if _, err := e.leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		// A conflict: the holder renewed, or another standby was first.
		log.WithError(err).Debug("leader election: releasing the expired Lease")
		return false
	}
	log.Info("leader election: the Lease expired (no renewal seen for its duration); released it for the standbys to take")
	return true
}
