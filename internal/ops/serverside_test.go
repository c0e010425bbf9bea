package ops

import (
	"strings"
	"testing"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFieldManagerFor(t *testing.T) {
	a := &Applier{}
	if got := a.FieldManagerFor(""); got != "hook-operator" {
		t.Errorf("no hook: %q", got)
	}
	if got := a.FieldManagerFor("db/sampledb.sh"); got != "hook-operator/db/sampledb.sh" {
		t.Errorf("hook: %q", got)
	}
	a.FieldManager = "my-hooks"
	if got := a.FieldManagerFor("db/sampledb.sh"); got != "my-hooks/db/sampledb.sh" {
		t.Errorf("own field manager: %q", got)
	}

	a.FieldManager = ""
	long := strings.Repeat("d/", 70) + "a.sh"
	got := a.FieldManagerFor(long)
	if len(got) != maxFieldManager || !strings.HasPrefix(got, "hook-operator/d/d/") {
		t.Errorf("long name: %q (%d bytes)", got, len(got))
	}
	if again := a.FieldManagerFor(long); again != got {
		t.Errorf("not deterministic: %q, then %q", got, again)
	}
	if other := a.FieldManagerFor(strings.Repeat("d/", 70) + "b.sh"); other == got {
		t.Errorf("two long names that differ only at the end got the same field manager %q", got)
	}
	// Not cut inside a character.
	for i := range 4 {
		name := strings.Repeat("x", 100+i) + strings.Repeat("é", 20)
		if got := a.FieldManagerFor(name); !utf8.ValidString(got) || len(got) > maxFieldManager {
			t.Errorf("%q: %q (%d bytes)", name, got, len(got))
		}
	}
}

func TestConflictError(t *testing.T) {
	apiErr := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 409, Reason: metav1.StatusReasonConflict,
		Message: `Apply failed with 2 conflicts: conflict with "kubectl-edit" using v1: .data.a; conflict with "other" using v1: .data.b`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl-edit" using v1`, Field: ".data.a"},
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "other" using v1`, Field: ".data.b"},
		}},
	}}
	err := conflictError(apiErr)
	want := `conflict: other field managers own fields this object sets: .data.a (owned by "kubectl-edit" using v1), .data.b (owned by "other" using v1); set force: true to take them over, or stop setting them`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	if !apierrors.IsConflict(err) {
		t.Error("the API error is not reachable through it")
	}
	// A conflict without causes is left as it is.
	plain := apierrors.NewConflict(configMaps.GroupResource(), "a", nil)
	if got := conflictError(plain); got != error(plain) {
		t.Errorf("got %v", got)
	}
}
