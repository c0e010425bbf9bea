// Package lease holds what leader election (internal/election) and ring
// membership (internal/shard) share about coordination.k8s.io/v1 Leases:
// the record (client-go's fields: holderIdentity, leaseDurationSeconds,
// acquireTime, renewTime, leaseTransitions, so that kubectl and other
// tools read it the same way), and the loop that watches Leases and opens
// the watch again when it breaks. The waits of their loops are
// internal/loop's.
//
// It holds no policy: who may take a Lease, and when a holder counts as
// gone, are election's and shard's rules.
package lease

import (
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is the resource of Lease objects.
var Resource = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

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

// Take makes identity the holder of l, acquired at now. leaseTransitions
// counts the change of holder as client-go does: not for a Lease nobody
// held before (no holder, never acquired), and not when identity holds it
// already (then only the acquireTime is new).
func Take(l *coordv1.Lease, identity string, now time.Time) {
	mt := metav1.NewMicroTime(now)
	transitions := int32(0)
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions
	}
	if h := Holder(l); h != identity && (h != "" || l.Spec.AcquireTime != nil) {
		transitions++
	}
	l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.LeaseTransitions = &identity, &mt, &transitions
}

// Renew records a renewal of l at now, for duration d, which must be
// whole seconds: the record holds seconds.
func Renew(l *coordv1.Lease, d time.Duration, now time.Time) {
	mt := metav1.NewMicroTime(now)
	secs := int32(d / time.Second)
	l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &secs, &mt
}

// Release gives l up at now, as client-go's leader election does on its
// way out: no holder, a duration of 1 s, the transitions kept.
func Release(l *coordv1.Lease, now time.Time) {
	mt := metav1.NewMicroTime(now)
	one, none := int32(1), ""
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &none, &one
	l.Spec.AcquireTime, l.Spec.RenewTime = &mt, &mt
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
		return nil, fmt.Errorf("the Lease %s: %w", u.GetName(), err)
	}
	return &l, nil
}
