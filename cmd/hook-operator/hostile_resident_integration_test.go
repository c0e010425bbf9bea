package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hostileResidentConfig binds a resident hook to the ConfigMaps of ns
// labelled hostile=yes.
func hostileResidentConfig(ns string) string {
	return `{"configVersion":"v1","settings":{"resident":true},"kubernetes":[{"name":"cms","kind":"ConfigMap",` +
		`"executeHookOnSynchronization":false,"labelSelector":{"matchLabels":{"hostile":"yes"}},` +
		`"namespace":{"nameSelector":{"matchNames":["` + ns + `"]}}}]}`
}

// A resident hook whose run for "bait" replies, then writes a Delete of
// "victim" into that run's patch file half a second later, by its path
// (making its dir again) and through a file it holds open: the runs that
// follow return nothing of it, and the victim stays. Before: the next run
// returned the Delete, and it was applied.
func TestIntegrationHostileResidentLateWriteIsNeverApplied(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	marks := t.TempDir()
	del := `{"operation":"Delete","kind":"ConfigMap","namespace":"` + h.ns + `","name":"victim"}`
	h.hook(t, "late.sh", residentLoop(hostileResidentConfig(h.ns), marks, `
jq -r '.[] | .object.metadata.name // empty' "$BINDING_CONTEXT_PATH" >> `+marks+`/records
if jq -e 'any(.[]; .object.metadata.name == "bait")' "$BINDING_CONTEXT_PATH" >/dev/null; then
  patch=$KUBERNETES_PATCH_PATH
  ( sleep 0.5; mkdir -p "${patch%/*}"; echo '`+del+`' >> "$patch"; touch `+marks+`/late-path ) >/dev/null 2>&1 &
  { sleep 0.5; echo '`+del+`'; touch `+marks+`/late-fd; } >> "$patch" 2>/dev/null &
fi`))
	o := h.start(t)
	o.waitRunning(t)

	cms := h.c.Client.CoreV1().ConfigMaps(h.ns)
	create := func(name string, labels map[string]string) { h.configMap(t, name, labels, nil) }
	handled := func(name string) bool {
		data, _ := os.ReadFile(filepath.Join(marks, "records"))
		return strings.Contains("\n"+string(data), "\n"+name+"\n")
	}
	exists := func(name string) bool {
		_, err := cms.Get(context.Background(), name, metav1.GetOptions{})
		return err == nil
	}
	create("victim", nil)
	create("bait", map[string]string{"hostile": "yes"})
	o.waitFor(t, "the bait's run", func() bool { return handled("bait") })
	o.waitFor(t, "the late writes", func() bool {
		_, e1 := os.Stat(filepath.Join(marks, "late-path"))
		_, e2 := os.Stat(filepath.Join(marks, "late-fd"))
		return e1 == nil && e2 == nil
	})
	for i := range 3 {
		name := fmt.Sprintf("after-%d", i)
		create(name, map[string]string{"hostile": "yes"})
		o.waitFor(t, name+"'s run", func() bool { return handled(name) })
	}
	time.Sleep(2 * time.Second) // an operation applied late would show by now
	if !exists("victim") {
		t.Errorf("the victim was deleted by a Delete written after an earlier run's reply")
	}
	if starts := startsIn(t, marks); len(starts) != 1 {
		t.Errorf("the hook started %d times (%v), want once: a late write is no fault of a run", len(starts), starts)
	}
}

// A resident hook that writes lines past each reply is replaced at its
// next run; 100 such runs leave the operator's open files where they were.
// Before: each replaced process left its reply pipe and reader behind
// (15 -> 167 fds after 300 runs: about one per two runs, so 100 runs leave
// some 50, five times the 10 allowed).
func TestIntegrationHostileResidentExtraLinesLeakNoFDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	marks := t.TempDir()
	h.hook(t, "chatty.sh", residentLoop(hostileResidentConfig(h.ns), marks, `
jq -r '.[] | .object.metadata.name // empty' "$BINDING_CONTEXT_PATH" >> `+marks+`/records
# Lines on fd 4 after the reply the loop writes: the subshell's child.
( sleep 0.05; printf 'more 1\nmore 2\nmore 3\n' >&4 ) &`))
	o := h.start(t)
	o.waitRunning(t)
	fds := func() int {
		entries, err := os.ReadDir("/proc/" + strconv.Itoa(o.pid()) + "/fd")
		must(t, err)
		return len(entries)
	}
	runs := func() int {
		data, _ := os.ReadFile(filepath.Join(marks, "records"))
		return strings.Count(string(data), "\n")
	}
	handle := func(from, to int) {
		for i := from; i < to; i++ {
			// One at a time, so that each is a run of its own.
			h.configMap(t, fmt.Sprintf("cm-%d", i), map[string]string{"hostile": "yes"}, nil)
			o.waitFor(t, fmt.Sprintf("cm-%d's run", i), func() bool { return runs() > i })
		}
	}
	handle(0, 10)
	before := fds()
	handle(10, 110)
	var after int
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if after = fds(); after <= before+10 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("100 runs writing past their reply: operator fds %d -> %d; hook starts %d", before, after, len(startsIn(t, marks)))
	if after > before+10 {
		t.Errorf("after 100 runs writing past their reply the operator holds %d fds, %d before; want them flat", after, before)
	}
}
