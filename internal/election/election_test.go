package election

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/lease"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// candidates are electors for one Lease in a namespace of the local
// cluster's own.
func candidates(t *testing.T, ids ...string) []*Elector {
	t.Helper()
	c := testcluster.Get(t)
	client := c.Dynamic.Resource(Leases).Namespace(c.Namespace(t))
	log := logrus.New()
	log.SetOutput(io.Discard)
	var out []*Elector
	for _, id := range ids {
		e, err := New(Config{Client: client, Name: "op", Identity: id, LeaseDuration: 15 * time.Second,
			RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// The Lease record is client-go's: the first candidate creates it; another
// does not take it while it is fresh; after a release it does, counting a
// transition; the holder renews without a transition.
func TestIntegrationLeaseRecord(t *testing.T) {
	ctx := context.Background()
	es := candidates(t, "a", "b")
	a, b := es[0], es[1]
	if !a.try(ctx) || !a.Leading() {
		t.Fatal("a did not create and take the Lease")
	}
	if b.try(ctx) {
		t.Fatal("b took a Lease that a renewed just now")
	}
	if !a.try(ctx) {
		t.Fatal("a could not renew")
	}
	l, err := a.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lease.Holder(l) != "a" || *l.Spec.LeaseTransitions != 0 || *l.Spec.LeaseDurationSeconds != 15 || l.Spec.RenewTime == nil || l.Spec.AcquireTime == nil {
		t.Fatalf("record after a's renewal: %+v", l.Spec)
	}
	a.release()
	if l, _ = a.get(ctx); lease.Holder(l) != "" || *l.Spec.LeaseDurationSeconds != 1 {
		t.Fatalf("record after release: %+v", l.Spec)
	}
	if !b.try(ctx) {
		t.Fatal("b did not take the released Lease")
	}
	if l, _ = b.get(ctx); lease.Holder(l) != "b" || *l.Spec.LeaseTransitions != 1 {
		t.Fatalf("record after b took it: %+v", l.Spec)
	}
}

// A Lease that has not changed for its duration, timed from when the
// candidate saw it change, is taken; a take from a stale read conflicts.
func TestIntegrationExpiryTimedFromTheLastChangeSeen(t *testing.T) {
	ctx := context.Background()
	es := candidates(t, "a", "b")
	a, b := es[0], es[1]
	if !a.try(ctx) {
		t.Fatal("a did not take the Lease")
	}
	if b.try(ctx) {
		t.Fatal("b took a fresh Lease")
	}
	// a renews after b read the Lease: b's take, conditional on what it
	// read, fails whatever b's clock says.
	if !a.try(ctx) {
		t.Fatal("a could not renew")
	}
	b.mu.Lock()
	stale := b.observed.DeepCopy()
	b.mu.Unlock()
	if err := b.update(ctx, stale, time.Now()); err == nil {
		t.Fatal("b took the Lease with an update from before a's renewal")
	}
	if b.try(ctx) {
		t.Fatal("b took the Lease just after seeing a renew it")
	}
	seenUnchangedFor(b, 16*time.Second)
	if !b.try(ctx) {
		t.Fatal("b did not take a Lease unchanged for longer than its duration")
	}
}

// seenUnchangedFor moves back the time e last saw its Lease change by d, as
// if it had seen the Lease unchanged for d since.
func seenUnchangedFor(e *Elector, d time.Duration) {
	e.mu.Lock()
	e.observedAt = e.observedAt.Add(-d)
	e.mu.Unlock()
}

// A standby only candidate never creates, takes or renews the Lease: not
// when there is none, not when it is released, not when it expired. It
// still follows who leads.
func TestIntegrationStandbyNeverTakesTheLease(t *testing.T) {
	ctx := context.Background()
	es := candidates(t, "a", "w")
	a, w := es[0], es[1]
	w.cfg.Standby = true
	var seen []string
	w.cfg.OnNewLeader = func(id string) { seen = append(seen, id) }
	if w.try(ctx) {
		t.Fatal("the standby created the Lease")
	}
	if _, err := w.get(ctx); err == nil {
		t.Fatal("a Lease exists after only the standby tried it")
	}
	if !a.try(ctx) {
		t.Fatal("a did not create and take the Lease")
	}
	if w.try(ctx) {
		t.Fatal("the standby took a Lease that a renewed just now")
	}
	seenUnchangedFor(w, 16*time.Second)
	if w.try(ctx) {
		t.Fatal("the standby took an expired Lease")
	}
	a.release()
	if w.try(ctx) || w.Leading() {
		t.Fatal("the standby took a released Lease")
	}
	if l, _ := w.get(ctx); lease.Holder(l) != "" {
		t.Fatalf("the released Lease is held by %q", lease.Holder(l))
	}
	if len(seen) != 1 || seen[0] != "a" {
		t.Errorf("leaders the standby saw: %v; want [a]", seen)
	}
}

func TestCheck(t *testing.T) {
	ok := Config{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	if err := ok.Check(); err != nil {
		t.Error(err)
	}
	bad := Config{LeaseDuration: 11 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	if bad.Check() == nil {
		t.Error("retry + renew deadline above the lease duration passed")
	}
}
