package shard

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/lease"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func newMember(t *testing.T, client dynamic.ResourceInterface, id string, lease time.Duration) *Members {
	t.Helper()
	m, err := NewMembers(Config{Client: client, Ring: "ring", Identity: id, LeaseDuration: lease, RenewPeriod: lease / 3, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// writeLease writes a member Lease of the ring as another replica would,
// last renewed at renewed.
func writeLease(t *testing.T, client dynamic.ResourceInterface, id string, renewed time.Time, secs int32) {
	t.Helper()
	mt := metav1.NewMicroTime(renewed)
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName("ring", id), Labels: map[string]string{RingLabel: "ring"}},
		Spec: coordv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs, RenewTime: &mt, AcquireTime: &mt}}
	u, err := lease.Encode(l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Joining writes this replica's Lease and reads the ring: a member renewed
// just now is on it, one whose renewal is older than its duration is not
// (no wait for a member that died before this one started), and one gone
// for twice its duration has its Lease deleted. Two members running see
// each other; one that stops leaves at once, deleting its Lease.
func TestIntegrationMembership(t *testing.T) {
	c := testcluster.Get(t)
	client := c.Dynamic.Resource(lease.Resource).Namespace(c.Namespace(t))
	ctx := context.Background()
	now := time.Now()
	writeLease(t, client, "fresh", now, 30)
	writeLease(t, client, "expired", now.Add(-16*time.Second), 15)
	writeLease(t, client, "gone", now.Add(-time.Minute), 15)

	a := newMember(t, client, "a", 3*time.Second)
	r, err := a.Join(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Members(), ","); got != "a,fresh" {
		t.Errorf("ring after joining: %s; want a,fresh", got)
	}
	if _, err := client.Get(ctx, LeaseName("ring", "a"), metav1.GetOptions{}); err != nil {
		t.Errorf("a's Lease: %v", err)
	}

	rings := make(chan []string, 16)
	a.OnChange(func(r *Ring) { rings <- r.Members() })
	actx, stopA := context.WithCancel(ctx)
	aDone := make(chan struct{})
	go func() { a.Run(actx); close(aDone) }()
	waitFor := func(what string, want []string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case got := <-rings:
				if slices.Equal(got, want) {
					return
				}
			case <-deadline:
				t.Fatalf("%s: no ring %v within 10 s", what, want)
			}
		}
	}
	b := newMember(t, client, "b", 3*time.Second)
	if _, err := b.Join(ctx); err != nil {
		t.Fatal(err)
	}
	bctx, stopB := context.WithCancel(ctx)
	bDone := make(chan struct{})
	go func() { b.Run(bctx); close(bDone) }()
	waitFor("b joining", []string{"a", "b", "fresh"})
	if _, err := client.Get(ctx, LeaseName("ring", "gone"), metav1.GetOptions{}); err == nil {
		t.Error("the Lease of a member gone for twice its duration is still there")
	}
	if _, err := client.Get(ctx, LeaseName("ring", "expired"), metav1.GetOptions{}); err != nil {
		t.Error("the Lease of a member expired for less than twice its duration was deleted already")
	}

	stopped := time.Now()
	stopB()
	<-bDone
	waitFor("b leaving", []string{"a", "fresh"})
	if d := time.Since(stopped); d > 2*time.Second {
		t.Errorf("a saw b leave after %s; b deleted its Lease, so at once", d)
	}
	stopA()
	<-aDone
	if _, err := client.Get(ctx, LeaseName("ring", "a"), metav1.GetOptions{}); err == nil {
		t.Error("a's Lease is still there after it stopped")
	}
}

func TestLeaseName(t *testing.T) {
	if got := LeaseName("op", "pod-7f9c"); got != "op-member-pod-7f9c" {
		t.Errorf("LeaseName = %s", got)
	}
	got := LeaseName("op", "Host_Name-1")
	if !strings.HasPrefix(got, "op-member-") || strings.ContainsAny(got, "_H") || got == LeaseName("op", "Host_Name-2") {
		t.Errorf("an identity that is not a valid name: %s", got)
	}
}

func TestConfigCheck(t *testing.T) {
	for _, c := range []Config{
		{LeaseDuration: 15 * time.Second, RenewPeriod: 10 * time.Second},
		{LeaseDuration: 1500 * time.Millisecond, RenewPeriod: 500 * time.Millisecond},
		{LeaseDuration: 15 * time.Second},
	} {
		if c.Check() == nil {
			t.Errorf("%+v passed the check", c)
		}
	}
	if err := (Config{LeaseDuration: 15 * time.Second, RenewPeriod: 5 * time.Second}).Check(); err != nil {
		t.Error(err)
	}
}

// A renewal cut off by the end of Run can reach the API server with its
// answer lost, leaving this replica's idea of its Lease's resourceVersion
// stale. Leaving still deletes the Lease when it is this process's holding;
// a Lease of the same name taken anew (by a restarted replica of the same
// identity) is left in place.
func TestIntegrationLeaveAfterALostRenewal(t *testing.T) {
	c := testcluster.Get(t)
	client := c.Dynamic.Resource(lease.Resource).Namespace(c.Namespace(t))
	ctx := context.Background()
	name := LeaseName("ring", "a")

	// update rewrites the stored Lease as another write would, without a.
	update := func(change func(*coordv1.Lease)) {
		t.Helper()
		u, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := lease.Decode(u)
		if err != nil {
			t.Fatal(err)
		}
		change(l)
		if u, err = lease.Encode(l); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	a := newMember(t, client, "a", 3*time.Second)
	if _, err := a.Join(ctx); err != nil {
		t.Fatal(err)
	}
	update(func(l *coordv1.Lease) { lease.Renew(l, 3*time.Second, time.Now()) })
	a.Leave()
	if _, err := client.Get(ctx, name, metav1.GetOptions{}); err == nil {
		t.Error("a's Lease is still there after Leave, renewed by a write whose answer a never saw")
	}

	a = newMember(t, client, "a", 3*time.Second)
	if _, err := a.Join(ctx); err != nil {
		t.Fatal(err)
	}
	update(func(l *coordv1.Lease) { lease.Take(l, "a", time.Now().Add(time.Second)) })
	a.Leave()
	if _, err := client.Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("Leave deleted a Lease taken anew by another process of the same identity: %v", err)
	}
}
