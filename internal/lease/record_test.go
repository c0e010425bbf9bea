package lease

import (
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func ptr[T any](v T) *T { return &v }

// Take counts a transition only when the holder changes from someone (or
// from a release), as client-go does, and always stamps the acquireTime.
func TestTakeCountsTransitionsAsClientGo(t *testing.T) {
	then := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	now := time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		spec coordv1.LeaseSpec
		want int32
	}{
		{"never held", coordv1.LeaseSpec{}, 0},
		{"held by another", coordv1.LeaseSpec{HolderIdentity: ptr("b"), AcquireTime: &then, LeaseTransitions: ptr(int32(2))}, 3},
		{"released", coordv1.LeaseSpec{HolderIdentity: ptr(""), AcquireTime: &then, LeaseTransitions: ptr(int32(2))}, 3},
		{"held by itself", coordv1.LeaseSpec{HolderIdentity: ptr("a"), AcquireTime: &then, LeaseTransitions: ptr(int32(2))}, 2},
	} {
		l := &coordv1.Lease{Spec: c.spec}
		Take(l, "a", now)
		if Holder(l) != "a" || *l.Spec.LeaseTransitions != c.want || !l.Spec.AcquireTime.Time.Equal(now) {
			t.Errorf("%s: holder %q, transitions %d (want %d), acquired %v", c.name, Holder(l), *l.Spec.LeaseTransitions, c.want, l.Spec.AcquireTime)
		}
	}
}

func TestRenewAndRelease(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := &coordv1.Lease{}
	Take(l, "a", now)
	Renew(l, 15*time.Second, now.Add(time.Second))
	if Duration(l) != 15*time.Second || !l.Spec.RenewTime.Time.Equal(now.Add(time.Second)) || !l.Spec.AcquireTime.Time.Equal(now) {
		t.Fatalf("after Renew: %+v", l.Spec)
	}
	Release(l, now.Add(2*time.Second))
	if Holder(l) != "" || l.Spec.HolderIdentity == nil || Duration(l) != time.Second || *l.Spec.LeaseTransitions != 0 ||
		!l.Spec.RenewTime.Time.Equal(now.Add(2*time.Second)) {
		t.Fatalf("after Release: %+v", l.Spec)
	}
	if Holder(nil) != "" || Duration(nil) != 0 || Duration(&coordv1.Lease{}) != 0 {
		t.Error("an absent Lease or field has a holder or a duration")
	}
}

func TestEncodeDecode(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "op", Labels: map[string]string{"k": "v"}}}
	Take(l, "a", now)
	Renew(l, 15*time.Second, now)
	u, err := Encode(l)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "coordination.k8s.io/v1" || u.GetKind() != "Lease" {
		t.Errorf("encoded as %s %s", u.GetAPIVersion(), u.GetKind())
	}
	if got, _, _ := unstructured.NestedString(u.Object, "spec", "holderIdentity"); got != "a" {
		t.Errorf("spec.holderIdentity = %q", got)
	}
	back, err := Decode(u)
	if err != nil {
		t.Fatal(err)
	}
	if Holder(back) != "a" || Duration(back) != 15*time.Second || !back.Spec.RenewTime.Time.Equal(now) || back.Labels["k"] != "v" {
		t.Errorf("round trip: %+v", back)
	}
}

// A Lease that is not one names itself in the error.
func TestDecodeNamesTheLease(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
		"metadata": map[string]any{"name": "op"},
		"spec":     map[string]any{"leaseDurationSeconds": "fifteen"},
	}}
	_, err := Decode(u)
	if err == nil || !strings.Contains(err.Error(), "the Lease op") {
		t.Fatalf("Decode of a Lease with a string duration: %v; want an error naming the Lease op", err)
	}
}
