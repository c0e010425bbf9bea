package shard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/lease"
	"github.com/hook-operator/hook-operator/internal/loop"
)

// RingLabel marks the membership Leases of a ring; its value is the ring's
// name.
const RingLabel = "hook-operator.io/ring"

// Config says how a replica takes part in a ring.
type Config struct {
	// Client is the Leases of the namespace that holds the ring.
	Client dynamic.ResourceInterface
	// Ring names the ring: the RingLabel value of its Leases and the
	// prefix of their names.
	Ring string
	// Identity is this replica's name on the ring.
	Identity string
	// LeaseDuration is how long a member stays on the ring after its last
	// renewal was seen; RenewPeriod how often a member renews.
	LeaseDuration, RenewPeriod time.Duration
	Log                        logrus.FieldLogger
}

// Check refuses timings under which members would drop off the ring
// between their renewals.
func (c Config) Check() error {
	if c.RenewPeriod <= 0 || c.LeaseDuration < 2*c.RenewPeriod {
		return fmt.Errorf("the lease duration (%s) must be at least twice the renew period (%s), so that one late renewal does not drop a member", c.LeaseDuration, c.RenewPeriod)
	}
	if c.LeaseDuration%time.Second != 0 {
		return fmt.Errorf("the lease duration (%s) must be whole seconds: a Lease records it in seconds", c.LeaseDuration)
	}
	return nil
}

// Members keeps this replica's membership Lease and follows the others'.
// A member is on the ring while it renews: from each change of its Lease
// that this replica sees, it stays for the Lease's duration, timed on this
// replica's clock. A Lease seen for the first time counts from its
// renewTime, so that a member that died before this one started is not
// waited for. This replica drops itself off its own ring when it could not
// renew for the lease duration, as the others do.
type Members struct {
	cfg  Config
	name string // this replica's Lease

	mu sync.Mutex
	// seen holds every member's Lease by name, this replica's too (timed
	// from its last successful renewal).
	seen    map[string]*member
	ring    *Ring
	own     *coordv1.Lease
	changes loop.Nudge

	onChange func(*Ring)
}

// OnChange makes Run call f with every new ring, one call at a time, in
// order. Call it before Run.
func (m *Members) OnChange(f func(*Ring)) { m.onChange = f }

type member struct {
	identity string
	rv       string
	since    time.Time // when its last change was seen (or its renewTime)
	duration time.Duration
}

func (m *member) expiry() time.Time { return m.since.Add(m.duration) }

// NewMembers returns the membership of cfg.Identity in cfg.Ring.
func NewMembers(cfg Config) (*Members, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.Identity == "" || cfg.Ring == "" {
		return nil, errors.New("sharding: a ring name and an identity are required")
	}
	return &Members{cfg: cfg, name: LeaseName(cfg.Ring, cfg.Identity), seen: map[string]*member{}, changes: loop.NewNudge()}, nil
}

var dnsName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// LeaseName returns the name of identity's membership Lease in ring: the
// ring's name, "-member-" and the identity when that makes a valid name,
// else a hash of the identity.
func LeaseName(ring, identity string) string {
	name := ring + "-member-" + identity
	if len(name) <= 253 && dnsName.MatchString(name) {
		return name
	}
	sum := sha256.Sum256([]byte(identity))
	return ring + "-member-" + hex.EncodeToString(sum[:8])
}

// Ring returns the current ring.
func (m *Members) Ring() *Ring {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ring
}

// Identity returns this replica's name on the ring.
func (m *Members) Identity() string { return m.cfg.Identity }

// Join writes this replica's Lease, reads the others' and returns the first
// ring, which has this replica on it.
func (m *Members) Join(ctx context.Context) (*Ring, error) {
	if err := m.renew(ctx); err != nil {
		return nil, fmt.Errorf("sharding: writing the membership Lease %s: %w", m.name, err)
	}
	if _, err := m.list(ctx); err != nil {
		return nil, fmt.Errorf("sharding: listing the ring's Leases (label %s=%s): %w", RingLabel, m.cfg.Ring, err)
	}
	r, _ := m.recompute(time.Now())
	return r, nil
}

// Run renews this replica's Lease and follows the ring until ctx ends, then
// deletes the Lease so that the others take its share at once.
func (m *Members) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); m.renewLoop(ctx) }()
	go func() { defer wg.Done(); m.watchLoop(ctx) }()
	m.notifyLoop(ctx)
	wg.Wait()
	m.Leave()
}

// notifyLoop recomputes the ring when something changed or a member's
// time is up, and tells OnChange.
func (m *Members) notifyLoop(ctx context.Context) {
	wait := m.cfg.LeaseDuration
	for m.changes.Wait(ctx, wait) {
		r, changed := m.recompute(time.Now())
		if changed && m.onChange != nil {
			m.onChange(r)
		}
		wait = m.nextExpiry(time.Now())
	}
}

func (m *Members) poke() { m.changes.Poke() }

// recompute makes the ring of the members live at now and reports whether
// its members changed. Leases expired for another whole duration are
// deleted: their replicas are gone.
func (m *Members) recompute(now time.Time) (*Ring, bool) {
	m.mu.Lock()
	var live []string
	var stale []string
	for name, mb := range m.seen {
		exp := mb.expiry()
		switch {
		case now.Before(exp):
			live = append(live, mb.identity)
		case now.After(exp.Add(mb.duration)) && name != m.name:
			stale = append(stale, name)
		}
	}
	old := m.ring
	r := NewRing(live)
	changed := old == nil || !slices.Equal(old.members, r.members)
	if changed {
		m.ring = r
	} else {
		r = old
	}
	m.mu.Unlock()
	if changed {
		m.cfg.Log.WithFields(logrus.Fields{"members": r.Members(), "share": fmt.Sprintf("%.3f", r.Share(m.cfg.Identity))}).Info("sharding: the ring changed")
	}
	for _, name := range stale {
		m.collect(name)
	}
	return r, changed
}

// collect deletes the Lease of a member gone for good, unless it changed
// since this replica saw it.
func (m *Members) collect(name string) {
	m.mu.Lock()
	mb := m.seen[name]
	delete(m.seen, name)
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.RenewPeriod)
	defer cancel()
	err := m.cfg.Client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &mb.rv}})
	if err == nil {
		m.cfg.Log.WithFields(logrus.Fields{"lease": name, "member": mb.identity}).Info("sharding: deleted the Lease of a member gone for longer than twice its lease duration")
	}
}

// nextExpiry returns how long until the next member's time on the ring is
// up (at most a lease duration).
func (m *Members) nextExpiry(now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.cfg.LeaseDuration
	for _, mb := range m.seen {
		exp := mb.expiry()
		if d := exp.Sub(now); d > 0 && d < next {
			next = d + time.Millisecond
		}
		if d := exp.Add(mb.duration).Sub(now); d > 0 && d < next {
			next = d + time.Millisecond
		}
	}
	return next
}

func (m *Members) renewLoop(ctx context.Context) {
	t := time.NewTicker(m.cfg.RenewPeriod)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := m.renew(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			m.cfg.Log.WithError(err).Warn("sharding: cannot renew the membership Lease; this replica leaves its own ring if that goes on for the lease duration")
		case err == nil && failing:
			failing = false
			m.cfg.Log.Info("sharding: the membership Lease is renewed again")
		}
	}
}

// renew writes this replica's Lease renewed now: the one it holds, or,
// when that is gone or changed by someone else, a new one, or the one of
// its name that an earlier run left.
func (m *Members) renew(ctx context.Context) error {
	m.mu.Lock()
	own := m.own
	m.mu.Unlock()
	if own != nil {
		err := m.write(ctx, own.DeepCopy(), false)
		if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
		m.mu.Lock()
		m.own = nil
		m.mu.Unlock()
	}
	err := m.write(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.name}}, true)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	l, err := m.read(ctx)
	if err != nil {
		return err
	}
	return m.write(ctx, l, true)
}

// read reads this replica's Lease as it is stored now.
func (m *Members) read(ctx context.Context) (*coordv1.Lease, error) {
	u, err := m.cfg.Client.Get(ctx, m.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return lease.Decode(u)
}

// write stores l as this replica's Lease renewed now: created when it has
// no resourceVersion, else updated. taken makes it this replica's anew: the
// ring's label, this holder, acquired now.
func (m *Members) write(ctx context.Context, l *coordv1.Lease, taken bool) error {
	now := time.Now()
	if taken {
		l.Labels = map[string]string{RingLabel: m.cfg.Ring}
		lease.Take(l, m.cfg.Identity, now)
	}
	lease.Renew(l, m.cfg.LeaseDuration, now)
	u, err := lease.Encode(l)
	if err != nil {
		return err
	}
	var out *unstructured.Unstructured
	if l.ResourceVersion == "" {
		out, err = m.cfg.Client.Create(ctx, u, metav1.CreateOptions{})
	} else {
		out, err = m.cfg.Client.Update(ctx, u, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	return m.wrote(out, now)
}

func (m *Members) wrote(u *unstructured.Unstructured, now time.Time) error {
	l, err := lease.Decode(u)
	if err != nil {
		return err
	}
	m.mu.Lock()
	old := m.seen[m.name]
	wasLive := old != nil && now.Before(old.expiry())
	m.own = l
	m.seen[m.name] = &member{identity: m.cfg.Identity, rv: l.ResourceVersion, since: now, duration: m.cfg.LeaseDuration}
	m.mu.Unlock()
	if !wasLive {
		m.poke()
	}
	return nil
}

// Leave deletes this replica's Lease, if it still holds one; Run does so
// when it ends.
//
// The delete is conditional on the Lease's resourceVersion, so that it
// never removes a Lease that a newer process of the same identity wrote.
// The version this replica knows can be stale: a renewal cut off by the
// end of Run may have reached the API server with its answer lost. On a
// conflict Leave reads the Lease again and deletes it when it is still
// this process's (same holder, same acquireTime), at its new version.
func (m *Members) Leave() {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.RenewPeriod)
	defer cancel()
	m.mu.Lock()
	own := m.own
	m.mu.Unlock()
	if own == nil {
		return
	}
	err := m.deleteOwn(ctx, own)
	if err != nil && !apierrors.IsNotFound(err) {
		m.cfg.Log.WithError(err).Warn("sharding: could not delete the membership Lease; the others take this replica's share when it expires")
		return
	}
	m.mu.Lock()
	m.own = nil
	m.mu.Unlock()
	m.cfg.Log.Info("sharding: left the ring")
}

// deleteOwn deletes the Lease own was read from, at its resourceVersion or,
// after a conflict, at the version of a write of this process's that own
// does not know of. Another writer's Lease is left alone.
func (m *Members) deleteOwn(ctx context.Context, own *coordv1.Lease) error {
	const attempts = 3
	var err error
	for range attempts {
		rv := own.ResourceVersion
		err = m.cfg.Client.Delete(ctx, m.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if !apierrors.IsConflict(err) {
			return err
		}
		stored, rerr := m.read(ctx)
		if rerr != nil {
			return rerr
		}
		if !sameHolding(own, stored) {
			return fmt.Errorf("the Lease %s was taken anew by %q since this process last wrote it; left in place: %w", m.name, lease.Holder(stored), err)
		}
		own = stored
	}
	return err
}

// sameHolding says whether b is a later version of the same holding as a:
// the same holder, acquired at the same time.
func sameHolding(a, b *coordv1.Lease) bool {
	if lease.Holder(a) != lease.Holder(b) || a.Spec.AcquireTime == nil || b.Spec.AcquireTime == nil {
		return false
	}
	return a.Spec.AcquireTime.Equal(b.Spec.AcquireTime)
}

func (m *Members) selector() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: RingLabel + "=" + m.cfg.Ring}
}

// list reads every Lease of the ring: those it has not seen before count
// from their renewTime, and those gone are forgotten. It returns the list's
// resourceVersion.
func (m *Members) list(ctx context.Context) (string, error) {
	l, err := m.cfg.Client.List(ctx, m.selector())
	if err != nil {
		return "", err
	}
	now := time.Now()
	present := map[string]bool{m.name: true}
	for i := range l.Items {
		present[l.Items[i].GetName()] = true
		m.observe(&l.Items[i], now)
	}
	m.mu.Lock()
	for name := range m.seen {
		if !present[name] {
			delete(m.seen, name)
		}
	}
	m.mu.Unlock()
	return l.GetResourceVersion(), nil
}

// observe notes a Lease of the ring as seen at now.
func (m *Members) observe(u *unstructured.Unstructured, now time.Time) {
	name := u.GetName()
	if name == m.name {
		return // this replica's own is timed from its renewals
	}
	l, err := lease.Decode(u)
	if err != nil || lease.Holder(l) == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.seen[name]
	if old != nil && old.rv == l.ResourceVersion {
		return
	}
	since := now
	if old == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.Before(now) {
		since = l.Spec.RenewTime.Time
	}
	m.seen[name] = &member{identity: lease.Holder(l), rv: l.ResourceVersion, since: since, duration: lease.Duration(l)}
}

// watchLoop follows the ring's Leases; each break lists them again.
func (m *Members) watchLoop(ctx context.Context) {
	w := &lease.Watcher{
		Open: func(ctx context.Context) (watch.Interface, error) {
			rv, err := m.list(ctx)
			if err != nil {
				return nil, err
			}
			m.poke()
			opts := m.selector()
			opts.ResourceVersion = rv
			return m.cfg.Client.Watch(ctx, opts)
		},
		Event: m.seenEvent,
		Retry: m.cfg.RenewPeriod,
		Failed: func(err error, first bool) {
			if first {
				m.cfg.Log.WithError(err).Warn("sharding: cannot list or watch the ring's Leases; the ring is not updated until that works again")
			}
		},
	}
	w.Run(ctx)
}

// seenEvent notes a change of the ring's Leases and pokes the ring's
// recomputation.
func (m *Members) seenEvent(ev watch.Event) {
	u, isObject := ev.Object.(*unstructured.Unstructured)
	if !isObject {
		return
	}
	switch ev.Type {
	case watch.Added, watch.Modified:
		m.observe(u, time.Now())
	case watch.Deleted:
		if u.GetName() == m.name {
			return // renew makes it again
		}
		m.mu.Lock()
		delete(m.seen, u.GetName())
		m.mu.Unlock()
	default:
		return
	}
	m.poke()
}
