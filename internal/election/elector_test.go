package election

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/lease"
	"github.com/hook-operator/hook-operator/internal/memcluster"
)

// The tests in this file run electors against the in-memory cluster, which
// keeps the API server's optimistic concurrency (a write from a stale read
// is a Conflict) but has no watches: the electors fall back to their
// retries.

// clock is a candidate's clock, moved on by the test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func memLeases() dynamic.ResourceInterface {
	return memcluster.New(memcluster.Options{}).Resource(Leases).Namespace("ns")
}

// memElector is a candidate with the default timings (15 s, 10 s, 2 s)
// and a clock of its own, starting at start.
func memElector(t *testing.T, client dynamic.ResourceInterface, id string, start time.Time) (*Elector, *clock) {
	t.Helper()
	return memElectorWith(t, Config{Client: client, Name: "op", Identity: id, LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, Log: quiet()}, start)
}

func memElectorWith(t *testing.T, cfg Config, start time.Time) (*Elector, *clock) {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: start}
	e.now = c.now
	return e, c
}

func read(t *testing.T, client dynamic.ResourceInterface) *coordv1.Lease {
	t.Helper()
	u, err := client.Get(context.Background(), "op", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lease.Decode(u)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The first candidate creates the Lease and holds it: holder, duration in
// seconds, acquired and renewed at its clock's now, no transition.
func TestTakeCreatesTheLease(t *testing.T) {
	client := memLeases()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, _ := memElector(t, client, "a", start)
	if a.Leading() {
		t.Fatal("a leads before trying")
	}
	if !a.try(context.Background()) || !a.Leading() {
		t.Fatal("a did not take a Lease nobody holds")
	}
	l := read(t, client)
	if lease.Holder(l) != "a" || lease.Duration(l) != 15*time.Second || *l.Spec.LeaseTransitions != 0 ||
		!l.Spec.AcquireTime.Time.Equal(start) || !l.Spec.RenewTime.Time.Equal(start) {
		t.Fatalf("the Lease a created: %+v", l.Spec)
	}
}

// A renewal moves renewTime and the resourceVersion, and keeps the
// acquireTime and the transitions.
func TestRenewKeepsTheAcquireTime(t *testing.T) {
	client := memLeases()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, ac := memElector(t, client, "a", start)
	if !a.try(context.Background()) {
		t.Fatal("a did not take the Lease")
	}
	before := read(t, client)
	ac.add(2 * time.Second)
	if !a.try(context.Background()) {
		t.Fatal("a could not renew the Lease it holds")
	}
	after := read(t, client)
	if after.ResourceVersion == before.ResourceVersion || !after.Spec.RenewTime.Time.Equal(start.Add(2*time.Second)) ||
		!after.Spec.AcquireTime.Time.Equal(start) || *after.Spec.LeaseTransitions != 0 || lease.Holder(after) != "a" {
		t.Fatalf("the Lease after a's renewal: rv %s → %s, %+v", before.ResourceVersion, after.ResourceVersion, after.Spec)
	}
}

// Run leads until its context ends, ends the leading context, and
// releases the Lease on the way out: no holder, 1 s. Another candidate
// then takes it at once, counting a transition.
func TestRunReleasesOnTheWayOut(t *testing.T) {
	client := memLeases()
	start := time.Now()
	a, _ := memElector(t, client, "a", start)
	b, _ := memElector(t, client, "b", start)
	ctx, cancel := context.WithCancel(context.Background())
	leading := make(chan context.Context, 1)
	done := make(chan struct{})
	go func() { a.Run(ctx, func(l context.Context) { leading <- l }); close(done) }()
	var lctx context.Context
	select {
	case lctx = <-leading:
	case <-time.After(10 * time.Second):
		t.Fatal("a did not lead within 10 s with nobody else campaigning")
	}
	if !a.Leading() {
		t.Error("a leads but Leading() is false")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of its context ending")
	}
	if lctx.Err() == nil || a.Leading() {
		t.Fatal("a still leads after Run returned")
	}
	if l := read(t, client); lease.Holder(l) != "" || lease.Duration(l) != time.Second || *l.Spec.LeaseTransitions != 0 {
		t.Fatalf("the Lease after a left: %+v", l.Spec)
	}
	if !b.try(context.Background()) {
		t.Fatal("b did not take the released Lease at once")
	}
	if l := read(t, client); lease.Holder(l) != "b" || *l.Spec.LeaseTransitions != 1 {
		t.Fatalf("the Lease after b took it: %+v", l.Spec)
	}
}

// Another candidate takes the Lease only once it has seen it unchanged for
// its duration, on its own clock, timed from the last change it saw; the
// holder, finding it taken, does not renew.
func TestExpiryTimedOnTheCandidatesClock(t *testing.T) {
	client := memLeases()
	ctx := context.Background()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, ac := memElector(t, client, "a", start)
	// b's clock is far ahead: the Lease's renewTime does not count, only
	// how long b has seen it unchanged.
	b, bc := memElector(t, client, "b", start.Add(time.Hour))
	if !a.try(ctx) {
		t.Fatal("a did not take the Lease")
	}
	if b.try(ctx) {
		t.Fatal("b took a Lease it has just seen for the first time")
	}
	bc.add(14 * time.Second)
	if b.try(ctx) {
		t.Fatal("b took the Lease after seeing it unchanged for 14 s of its 15")
	}
	ac.add(10 * time.Second)
	if !a.try(ctx) {
		t.Fatal("a could not renew")
	}
	bc.add(2 * time.Second) // 16 s since b first saw it, 2 s since a renewed
	if b.try(ctx) {
		t.Fatal("b took the Lease 2 s after a renewed it")
	}
	bc.add(15*time.Second + time.Millisecond)
	if !b.try(ctx) || !b.Leading() {
		t.Fatal("b did not take a Lease it saw unchanged for longer than its duration")
	}
	if l := read(t, client); lease.Holder(l) != "b" || *l.Spec.LeaseTransitions != 1 {
		t.Fatalf("the Lease after b took it: %+v", l.Spec)
	}
	if a.try(ctx) {
		t.Fatal("a renewed a Lease that b took")
	}
	if l := read(t, client); lease.Holder(l) != "b" {
		t.Fatalf("a's failed renewal changed the holder to %q", lease.Holder(l))
	}
}

// Candidates that try at the same time, for a Lease nobody has made yet
// and for a released one: exactly one wins each time.
func TestConflictingTakeHasOneWinner(t *testing.T) {
	client := memLeases()
	start := time.Now()
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	round := func(what string) string {
		t.Helper()
		var wins atomic.Int32
		var winner atomic.Value
		var wg sync.WaitGroup
		for _, id := range ids {
			e, _ := memElector(t, client, id, start)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if e.try(context.Background()) {
					wins.Add(1)
					winner.Store(id)
				}
			}()
		}
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("%s: %d candidates took the Lease; want exactly 1", what, n)
		}
		h := lease.Holder(read(t, client))
		if h != winner.Load() {
			t.Fatalf("%s: the Lease is held by %q, the winner is %q", what, h, winner.Load())
		}
		return h
	}
	first := round("no Lease yet")
	l := read(t, client)
	lease.Release(l, start)
	u, err := lease.Encode(l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	round("released by " + first)

	// Two candidates that read the same Lease: the second write, made
	// from what it read, conflicts.
	b, _ := memElector(t, client, "b", start)
	c, _ := memElector(t, client, "c", start)
	l = read(t, client)
	lease.Release(l, start)
	u, _ = lease.Encode(l)
	if _, err := client.Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := read(t, client)
	if err := b.update(context.Background(), seen.DeepCopy(), start); err != nil {
		t.Fatalf("b's take of the released Lease: %v", err)
	}
	if err := c.update(context.Background(), seen.DeepCopy(), start); err == nil {
		t.Fatal("c took the Lease with a write from the same read as b's")
	}
	if h := lease.Holder(read(t, client)); h != "b" {
		t.Fatalf("the Lease is held by %q; want b", h)
	}
}

// A leader that cannot renew (another holds the Lease now, as after a
// pause longer than the Lease's duration) stops leading within the renew
// deadline, and does not write over the other's Lease on its retries.
func TestLeadingEndsWhenTheLeaseIsLost(t *testing.T) {
	client := memLeases()
	a, err := New(Config{Client: client, Name: "op", Identity: "a", LeaseDuration: 2 * time.Second,
		RenewDeadline: time.Second, RetryPeriod: 50 * time.Millisecond, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	leading := make(chan context.Context, 1)
	done := make(chan struct{})
	go func() { a.Run(context.Background(), func(l context.Context) { leading <- l }); close(done) }()
	var lctx context.Context
	select {
	case lctx = <-leading:
	case <-time.After(10 * time.Second):
		t.Fatal("a did not lead within 10 s")
	}
	// z takes the Lease as if it had expired on z's clock.
	l := read(t, client)
	lease.Take(l, "z", time.Now())
	lease.Renew(l, time.Hour, time.Now())
	u, _ := lease.Encode(l)
	for {
		// a's renewals may win the race for the same version; read again.
		if _, err := client.Update(context.Background(), u, metav1.UpdateOptions{}); err == nil {
			break
		}
		l = read(t, client)
		lease.Take(l, "z", time.Now())
		lease.Renew(l, time.Hour, time.Now())
		u, _ = lease.Encode(l)
	}
	select {
	case <-lctx.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("a still leads 20 s after losing the Lease (renew deadline 1 s)")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after leading ended")
	}
	if a.Leading() {
		t.Error("Leading() is true after the Lease was lost")
	}
	if h := lease.Holder(read(t, client)); h != "z" {
		t.Errorf("the Lease is held by %q after a lost it to z; a must not take it back before it expires", h)
	}
}
