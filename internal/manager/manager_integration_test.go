package manager_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/election"
	"github.com/hook-operator/hook-operator/internal/lease"
	"github.com/hook-operator/hook-operator/internal/manager"
	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// With the real elector on the local cluster: after SIGTERM the leader
// keeps (and renews) its Lease while a hook of its leading group still
// runs, releases it once the groups stopped, and only then does the
// standby lead.
func TestIntegrationLeaseReleasedAfterTheGroupsStopped(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	leases := c.Dynamic.Resource(election.Leases).Namespace(ns)
	var mu sync.Mutex
	var events []string
	record := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	happened := func(e string) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return slices.Contains(events, e) }
	}
	replica := func(id string, finish chan struct{}) *manager.Manager {
		e, err := election.New(election.Config{
			Client: leases, Name: "leader", Identity: id,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
			Log: logrus.StandardLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		m := manager.New(manager.Options{Elector: e})
		m.Add(manager.Always, "server", part(func(ctx context.Context) error {
			<-ctx.Done()
			record(id + " server stopped")
			return nil
		}))
		m.Add(manager.Leading, "hooks", part(func(ctx context.Context) error {
			record(id + " leads")
			<-ctx.Done()
			record(id + " stopping hooks")
			<-finish // a hook that finishes within its grace period
			record(id + " hooks stopped")
			return nil
		}))
		return m
	}
	finishA, finishB := make(chan struct{}), make(chan struct{})
	defer close(finishB)
	ctxA, sigtermA := context.WithCancel(context.Background())
	defer sigtermA()
	ctxB, sigtermB := context.WithCancel(context.Background())
	defer sigtermB()
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- replica("a", finishA).Run(ctxA) }()
	waitUntil(t, "a leads", happened("a leads"))
	go func() { doneB <- replica("b", finishB).Run(ctxB) }()

	sigterm := metav1.NowMicro()
	sigtermA()
	waitUntil(t, "a stopping its hooks", happened("a stopping hooks"))
	waitUntil(t, "a renewing its Lease after SIGTERM while its hook runs", func() bool {
		l := readLease(t, leases)
		return l != nil && lease.Holder(l) == "a" && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(sigterm.Time)
	})
	if happened("b leads")() || happened("a server stopped")() {
		t.Fatalf("while a's hook runs: %v", events)
	}
	close(finishA)
	select {
	case err := <-doneA:
		if err != nil {
			t.Fatalf("a's Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a's Run did not return")
	}
	waitUntil(t, "b leads", happened("b leads"))
	mu.Lock()
	got := slices.Clone(events)
	mu.Unlock()
	want := []string{"a leads", "a stopping hooks", "a hooks stopped", "a server stopped", "b leads"}
	if !slices.Equal(got, want) {
		t.Errorf("happened %v, want %v", got, want)
	}
	sigtermB()
}

// part is a Runnable made of a function, up as soon as it is started.
type part func(ctx context.Context) error

func (p part) Start(ctx context.Context) error { return p(ctx) }

// readLease reads the Lease "leader", or nil while there is none.
func readLease(t *testing.T, leases interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
}) *coordv1.Lease {
	u, err := leases.Get(context.Background(), "leader", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	l, err := lease.Decode(u)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// waitUntil waits for cond with a generous deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 30*time.Second, what, cond)
}
