//go:build linux

package start

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// --webhook-hook-memory takes auto, 0 or a size of 16Mi or more; auto is
// a quarter of the container's memory limit (the chart's 512Mi: 128Mi),
// not bounded without one; a wrong value's error names the flag and what
// to write.
func TestWebhookHookMemoryFlag(t *testing.T) {
	cmd := New(io.Discard, logrus.New())
	f := cmd.Flags().Lookup("webhook-hook-memory")
	if f == nil || f.DefValue != "auto" || !strings.Contains(f.Usage, "HOOK_OPERATOR_WEBHOOK_HOOK_MEMORY") {
		t.Fatalf("flag %+v", f)
	}
	for in, want := range map[string]HookMemory{"auto": {Auto: true}, "0": {}, "128Mi": {Bytes: 128 << 20}, "1Gi": {Bytes: 1 << 30}} {
		var h HookMemory
		if err := h.Set(in); err != nil || h != want {
			t.Errorf("Set(%q) = %+v, %v; want %+v", in, h, err, want)
		}
	}
	for in, want := range map[string]string{"lots": `"lots": use auto, 0 (not bounded) or a size such as 128Mi`, "-1Mi": `"-1Mi": use auto, 0 (not bounded) or a size such as 128Mi`,
		"1Mi": `"1Mi": use at least 16Mi (one small review's hook counts 8Mi), or 0 (not bounded)`} {
		var h HookMemory
		if err := h.Set(in); err == nil || err.Error() != want {
			t.Errorf("Set(%q): %v, want %s", in, err, want)
		}
	}
	err := cmd.Flags().Set("webhook-hook-memory", "1Mi")
	if err == nil || !strings.Contains(err.Error(), "use at least 16Mi") {
		t.Errorf("a too small value: %v", err)
	}

	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("536870912\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, why := (HookMemory{Auto: true}).resolve(root); n != 128<<20 || !strings.Contains(why, "25% of the container's memory limit") {
		t.Errorf("auto under a 512Mi limit: %d (%s), want 128Mi", n, why)
	}
	if n, _ := (HookMemory{Auto: true}).resolve(t.TempDir()); n != 0 {
		t.Errorf("auto without a limit: %d, want 0 (not bounded)", n)
	}
	if n, _ := (HookMemory{Bytes: 64 << 20}).resolve(root); n != 64<<20 {
		t.Errorf("64Mi given: %d", n)
	}
}
