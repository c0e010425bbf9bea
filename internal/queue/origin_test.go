package queue

import (
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// A triggered task merged into a pending one makes the merged run a
// triggered one, whichever came first; plain tasks leave the origin alone.
func TestMergePassesTheOriginOn(t *testing.T) {
	s := newSet(&recorder{})
	defer s.Stop(time.Second)
	h := &hook.Hook{Name: "a"}
	q := &fifo{name: "main"}

	head, triggered := task(h, "x", nil), task(h, "y", nil)
	triggered.Origin = "trigger"
	s.mergeLocked(q, head, triggered, newObjectCap(head))
	if head.Origin != "trigger" || len(head.Contexts) != 2 {
		t.Errorf("a plain task merged with a triggered one: origin %q, %d contexts; want trigger, 2", head.Origin, len(head.Contexts))
	}
	s.mergeLocked(q, head, task(h, "z", nil), newObjectCap(head))
	if head.Origin != "trigger" {
		t.Errorf("a plain task merged into a triggered one cleared its origin: %q", head.Origin)
	}
}
