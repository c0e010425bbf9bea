package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A hook with settings.parallelism 4 on the local cluster: each object's
// events reach it in order (the resourceVersions it records for an object
// never go backwards), never more than 4 of its processes run at once
// (and more than one do), and a slow object does not hold the others up.
func TestIntegrationParallelHook(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	marks := t.TempDir()
	must(t, os.Mkdir(filepath.Join(marks, "running"), 0o755))
	h.hook(t, "par.sh", strings.ReplaceAll(strings.ReplaceAll(`#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","settings":{"parallelism":4},"kubernetes":[{"name":"cms","kind":"ConfigMap","executeHookOnSynchronization":false,
    "labelSelector":{"matchLabels":{"par":"yes"}},"namespace":{"nameSelector":{"matchNames":["NS"]}}}]}'
  exit 0
fi
touch MARKS/running/$$
ls MARKS/running | wc -l >>MARKS/concurrency
jq -r '.[] | select(.type == "Event") | .object.metadata.name + " " + .object.metadata.resourceVersion' "$BINDING_CONTEXT_PATH" >>MARKS/records
if jq -e 'any(.[]; .object.metadata.name == "slow")' "$BINDING_CONTEXT_PATH" >/dev/null; then
  echo "slow-start $(date +%s.%N)" >>MARKS/times
  sleep 4
  echo "slow-end $(date +%s.%N)" >>MARKS/times
else
  sleep 0.2
  echo "other $(date +%s.%N)" >>MARKS/times
fi
rm MARKS/running/$$
`, "MARKS", marks), "NS", h.ns))
	o := h.start(t)
	o.waitRunning(t)

	ctx := context.Background()
	cms := h.c.Client.CoreV1().ConfigMaps(h.ns)
	create := func(name string) { h.configMap(t, name, map[string]string{"par": "yes"}, map[string]string{"v": "0"}) }
	read := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(marks, name))
		return string(data)
	}
	create("slow")
	o.waitFor(t, "the slow object's run", func() bool { return strings.Contains(read("times"), "slow-start") })
	if n := o.metric(t, `hook_operator_hook_running{hook="par.sh"}`); n < 1 {
		t.Errorf("hook_running during the slow run = %v, want at least 1", n)
	}
	const objects, updates = 30, 3
	last := map[string]string{}
	for i := range objects {
		create(fmt.Sprintf("cm-%d", i))
	}
	for u := 1; u <= updates; u++ {
		for i := range objects {
			name := fmt.Sprintf("cm-%d", i)
			cm, err := cms.Get(ctx, name, metav1.GetOptions{})
			must(t, err)
			cm.Data["v"] = strconv.Itoa(u)
			cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			must(t, err)
			last[name] = cm.ResourceVersion
		}
	}
	waitUntil(t, "every object's last version seen", func() bool {
		records := read("records")
		for name, rv := range last {
			if !strings.Contains(records, name+" "+rv+"\n") {
				return false
			}
		}
		return true
	}, func() string { return read("records") })

	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(read("records")), "\n") {
		f := strings.Fields(line)
		rv, err := strconv.Atoi(f[1])
		must(t, err)
		if rv < seen[f[0]] {
			t.Errorf("%s: resourceVersion %d after %d: the object's events ran out of order", f[0], rv, seen[f[0]])
		}
		seen[f[0]] = rv
	}
	most := 0
	for _, l := range strings.Fields(read("concurrency")) {
		n, _ := strconv.Atoi(l)
		most = max(most, n)
	}
	if most > 4 || most < 2 {
		t.Errorf("at most %d of the hook's processes ran at once; want more than 1 and no more than its parallelism, 4", most)
	}
	o.waitFor(t, "the slow run's end", func() bool { return strings.Contains(read("times"), "slow-end") })
	var slowStart, slowEnd float64
	var during int
	times := strings.Split(strings.TrimSpace(read("times")), "\n")
	for _, line := range times {
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "slow-start":
			slowStart = v
		case "slow-end":
			slowEnd = v
		}
	}
	for _, line := range times {
		f := strings.Fields(line)
		if v, _ := strconv.ParseFloat(f[1], 64); f[0] == "other" && v > slowStart && v < slowEnd {
			during++
		}
	}
	if during == 0 {
		t.Errorf("no other object's run ended while the slow object's ran (%.2f–%.2f); the slow object held the others up:\n%s", slowStart, slowEnd, read("times"))
	}
	if n := o.metric(t, `hook_operator_parallel_wait_seconds_count{hook="par.sh"}`); n < objects+1 {
		t.Errorf("parallel_wait_seconds counted %v runs, want at least one for each of the %d objects", n, objects+1)
	}
	t.Logf("%d runs of other objects ended during the slow object's 4 s run; at most %d processes at once", during, most)
}
