package main_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/queue"
)

// Anyone allowed to update one watched object, while its hook fails
// (issue 60: 150-558 patches of a ConfigMap of 300-500 KB took the
// operator from 25 to 85-322 MB, and one retry's contexts file held 559
// contexts, 25-152 MB, on a memory-backed /tmp): 150 patches of a 300 KB
// ConfigMap keep the operator within +40 MB of what it had before them,
// every run's contexts file under 8 MB and at most MaxObjectContexts of
// the object's contexts in it, and a run after the patches sees the
// newest state last.
func TestIntegrationHostileOneObjectsContextsPileUp(t *testing.T) {
	h := newHarness(t)
	out := t.TempDir()
	runs := filepath.Join(out, "runs")
	h.hook(t, "fails.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap",`+
		`"namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}},"nameSelector":{"matchNames":["big"]}}]}`, `
size=$(stat -c %s "$BINDING_CONTEXT_PATH")
events=$(jq '[.[] | select(.type == "Event")] | length' "$BINDING_CONTEXT_PATH")
last=$(jq -r '.[-1] | (.object // .objects[-1].object // {}) | .data.marker // ""' "$BINDING_CONTEXT_PATH")
echo "$size $events $last" >> `+runs+`
exit 1
`))
	ctx := context.Background()
	big := func(marker string) map[string]string {
		b := make([]byte, 225<<10)
		_, _ = rand.Read(b)
		return map[string]string{"v": base64.StdEncoding.EncodeToString(b), "marker": marker} // 300 KB
	}
	h.configMap(t, "big", nil, big("first"))

	o := h.start(t)
	pid := o.pid()
	read := func() (lines []string) {
		f, err := os.Open(runs)
		if err != nil {
			return nil
		}
		defer f.Close()
		for s := bufio.NewScanner(f); s.Scan(); {
			lines = append(lines, s.Text())
		}
		return lines
	}
	o.waitFor(t, "two failed runs of the Synchronization", func() bool { return len(read()) >= 2 })
	before := rss(t, pid)

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if m := rss(t, pid); m > peak.Load() {
				peak.Store(m)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	const patches = 150
	for i := 1; i <= patches; i++ {
		marker := strconv.Itoa(i)
		if i == patches {
			marker = "final"
		}
		patch, err := json.Marshal(map[string]any{"data": big(marker)})
		must(t, err)
		_, err = h.c.Client.CoreV1().ConfigMaps(h.ns).Patch(ctx, "big", types.MergePatchType, patch, metav1.PatchOptions{})
		must(t, err)
	}
	patched := len(read())
	o.waitFor(t, "a run after the patches that sees the final state last", func() bool {
		lines := read()
		return len(lines) > patched && strings.HasSuffix(lines[len(lines)-1], " final")
	})
	time.Sleep(2 * time.Second) // the retries that follow, with what they hold
	close(stop)
	<-sampled

	grew := (peak.Load() - before) >> 20
	var largest, most int
	for _, l := range read() {
		var size, events int
		var last string
		if _, err := fmt.Sscan(l, &size, &events, &last); err != nil && !strings.Contains(err.Error(), "EOF") {
			t.Fatalf("run line %q: %v", l, err)
		}
		largest, most = max(largest, size), max(most, events)
	}
	t.Logf("%d patches of 300 KB, the hook failing: RSS %d MB before, peak +%d MB; %d runs, the largest contexts file %.1f MB, at most %d Event contexts in a run",
		patches, before>>20, grew, len(read()), float64(largest)/(1<<20), most)
	if grew > 40 {
		t.Errorf("the operator's RSS grew by %d MB during the patches, want at most 40 MB", grew)
	}
	if largest >= 8<<20 {
		t.Errorf("a run's contexts file had %d bytes, want under 8 MB", largest)
	}
	if most > queue.MaxObjectContexts {
		t.Errorf("a run had %d Event contexts of the one object, want at most %d", most, queue.MaxObjectContexts)
	}
	if v := o.metric(t, `hook_operator_contexts_combined_total{hook="fails.sh",queue="main"}`); v < patches-2*queue.MaxObjectContexts {
		t.Errorf("contexts_combined_total is %v, want the patches beyond the cap counted (at least %d)", v, patches-2*queue.MaxObjectContexts)
	}
}
