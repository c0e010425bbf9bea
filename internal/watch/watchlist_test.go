package watch

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// What a Kubernetes 1.31 API server answers a streaming list (its WatchList
// gate is off by default), and what it answers otherwise.
func TestRefusesStreamingList(t *testing.T) {
	refused := apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", field.ErrorList{
		field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"),
	})
	messageOnly := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled`}}
	otherInvalid := apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", field.ErrorList{
		field.Invalid(field.NewPath("fieldSelector"), "spec.nope=1", "field label not supported"),
	})
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the 422 with its cause", refused, true},
		{"the 422, message only", messageOnly, true},
		{"wrapped", fmt.Errorf("watch: %w", refused), true},
		{"another 422", otherInvalid, false},
		{"forbidden by RBAC", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("cannot watch resource")), false},
		{"not an API error", errors.New("sendInitialEvents"), false},
	} {
		if got := refusesStreamingList(tc.err); got != tc.want {
			t.Errorf("%s: refusesStreamingList = %v, want %v", tc.name, got, tc.want)
		}
	}

	on := true
	lists := &watchLists{log: discardLog()}
	if lists.refusal(t.Context(), metav1.ListOptions{}, refused) || lists.unsupported() {
		t.Error("a refusal of a plain watch (no sendInitialEvents) was taken for a refused streaming list")
	}
	if !lists.refusal(t.Context(), metav1.ListOptions{SendInitialEvents: &on}, refused) || !lists.unsupported() {
		t.Error("a refused streaming list was not recorded")
	}
	var none *watchLists
	if none.unsupported() || none.refusal(t.Context(), metav1.ListOptions{SendInitialEvents: &on}, refused) {
		t.Error("a nil watchLists (no API server) records refusals")
	}
}
