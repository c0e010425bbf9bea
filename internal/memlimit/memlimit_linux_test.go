//go:build linux

package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// cgroup writes a cgroup tree with file name holding content.
func cgroup(t *testing.T, name, content string) string {
	t.Helper()
	root := t.TempDir()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestChooseFromCgroupV2(t *testing.T) {
	c := Choose(cgroup(t, "memory.max", "536870912\n"))
	if c.Container != 512<<20 || c.Limit != 384<<20 {
		t.Errorf("got %+v, want 75%% of 512 MiB", c)
	}
	if !strings.Contains(c.Reason, "75% of the container's memory limit") {
		t.Errorf("reason: %s", c.Reason)
	}
}

func TestChooseFromCgroupV1(t *testing.T) {
	c := Choose(cgroup(t, "memory/memory.limit_in_bytes", "1073741824\n"))
	if c.Container != 1<<30 || c.Limit != 768<<20 {
		t.Errorf("got %+v", c)
	}
}

func TestChooseWithoutALimit(t *testing.T) {
	for name, root := range map[string]string{
		"v2 max":       cgroup(t, "memory.max", "max\n"),
		"v1 unlimited": cgroup(t, "memory/memory.limit_in_bytes", "9223372036854771712\n"),
	} {
		if c := Choose(root); c.Limit != 0 || c.Container != 0 || !strings.Contains(c.Reason, "no memory limit") {
			t.Errorf("%s: got %+v", name, c)
		}
	}
	if c := Choose(t.TempDir()); c.Limit != 0 || !strings.Contains(c.Reason, "no cgroup memory limit file") {
		t.Errorf("no cgroup: got %+v", c)
	}
	if c := Choose(cgroup(t, "memory.max", "lots\n")); c.Limit != 0 || !strings.Contains(c.Reason, `memory.max holds "lots", not a number of bytes`) {
		t.Errorf("garbage: got %+v", c)
	}
}

func TestSetLeavesGOMEMLIMITAlone(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "100MiB")
	c := Set(cgroup(t, "memory.max", "536870912\n"))
	if c.Limit != 0 || !strings.Contains(c.Reason, "GOMEMLIMIT=100MiB is set") {
		t.Errorf("got %+v", c)
	}
}

func TestSetSetsTheGoMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "") // restored after the test
	os.Unsetenv("GOMEMLIMIT")
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	c := Set(cgroup(t, "memory.max", "536870912\n"))
	if got := debug.SetMemoryLimit(-1); c.Limit != 384<<20 || got != c.Limit {
		t.Errorf("Go memory limit %d, choice %+v", got, c)
	}
}
