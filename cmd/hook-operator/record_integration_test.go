package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// readContexts reads a file of binding-context arrays, one per line, into
// the contexts they hold, keyed by binding/type/watchEvent.
func readContexts(t *testing.T, path string) (map[string][]any, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]any{}
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var cs []map[string]any
		if err := json.Unmarshal(sc.Bytes(), &cs); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, c := range cs {
			k, _ := c["binding"].(string)
			for _, f := range []string{"type", "watchEvent"} {
				if v, _ := c[f].(string); v != "" {
					k += "/" + v
				}
			}
			out[k] = append(out[k], c)
			n++
		}
	}
	return out, n
}

// countContexts counts the binding contexts in a file of context arrays:
// the live queue may merge contexts into one run, so runs are not counted.
func countContexts(path string) int {
	data, _ := os.ReadFile(path)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var cs []json.RawMessage
		if json.Unmarshal([]byte(line), &cs) == nil {
			n += len(cs)
		}
	}
	return n
}

// record captures what the bindings receive while the live operator runs;
// replaying the recording gives the hook the same contexts the live
// operator gave it.
func TestIntegrationRecordThenReplayMatchesLive(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	dir := t.TempDir()
	h.hook(t, "log.sh", bashHook(`{"configVersion":"v1","kubernetes":[
    {"name":"data","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}},"jqFilter":".data"},
    {"name":"labelled","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}},
     "labelSelector":{"matchLabels":{"app":"demo"}},"keepFullObjectsInMemory":false,"jqFilter":".metadata.labels"}]}`, `jq -c . "$BINDING_CONTEXT_PATH" >> "$CONTEXT_LOG"
`))
	cms := h.c.Dynamic.Resource(configMapsGVR).Namespace(h.ns)
	newCM := func(name string, labels map[string]any, data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": h.ns, "labels": labels},
			"data":     data,
		}}
	}
	for _, cm := range []*unstructured.Unstructured{
		newCM("a", map[string]any{"app": "demo"}, map[string]any{"k": "1"}),
		newCM("b", nil, map[string]any{"k": "2"}),
	} {
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	liveLog, replayLog, fixture := filepath.Join(dir, "live.jsonl"), filepath.Join(dir, "replay.jsonl"), filepath.Join(dir, "rec.yaml")
	var recErr, liveErr testoperator.Buffer
	rec := exec.Command(h.bin, "record", "--hooks-dir", h.hooks, "--kubeconfig", h.c.Kubeconfig, "--out", fixture, "--duration", "6s")
	rec.Stderr = &recErr
	live := exec.Command(h.bin, "start", "--hooks-dir", h.hooks, "--kubeconfig", h.c.Kubeconfig,
		"--listen-address", "127.0.0.1:0", "--health-listen-address", "127.0.0.1:0")
	live.Env = append(os.Environ(), "CONTEXT_LOG="+liveLog)
	live.Stderr = &liveErr
	must(t, rec.Start())
	must(t, live.Start())
	defer func() { _ = live.Process.Kill() }()
	waitUntil(t, "both Synchronization runs and the recording", func() bool {
		return countContexts(liveLog) >= 2 && strings.Contains(recErr.String(), "recording events")
	}, recErr.String)

	// Changes, one after the other.
	a, err := cms.Get(ctx, "a", metav1.GetOptions{})
	must(t, err)
	a.Object["data"] = map[string]any{"k": "10"}
	_, err = cms.Update(ctx, a, metav1.UpdateOptions{})
	must(t, err)
	waitUntil(t, "the Modified run", func() bool { return countContexts(liveLog) >= 3 }, liveErr.String)
	_, err = cms.Create(ctx, newCM("c", map[string]any{"app": "demo"}, map[string]any{"k": "3"}), metav1.CreateOptions{})
	must(t, err)
	waitUntil(t, "the Added runs", func() bool { return countContexts(liveLog) >= 5 }, liveErr.String)
	must(t, cms.Delete(ctx, "b", metav1.DeleteOptions{}))
	waitUntil(t, "the Deleted run", func() bool { return countContexts(liveLog) >= 6 }, liveErr.String)

	if err := rec.Wait(); err != nil {
		t.Fatalf("record: %v\n%s", err, recErr.String())
	}
	must(t, live.Process.Signal(syscall.SIGTERM))
	_ = live.Wait()

	replay := exec.Command(h.bin, "replay", "--hooks-dir", h.hooks, "--objects", fixture)
	replay.Env = append(os.Environ(), "CONTEXT_LOG="+replayLog)
	if out, err := replay.CombinedOutput(); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	want, nLive := readContexts(t, liveLog)
	got, nReplay := readContexts(t, replayLog)
	if nLive != 6 {
		t.Fatalf("live contexts: %d, want 6: %v", nLive, want)
	}
	if nReplay != nLive || !reflect.DeepEqual(want, got) {
		wj, _ := json.MarshalIndent(want, "", " ")
		gj, _ := json.MarshalIndent(got, "", " ")
		t.Fatalf("replay of the recording differs from live (%d vs %d contexts)\nlive:\n%s\nreplay:\n%s", nLive, nReplay, wj, gj)
	}
}
