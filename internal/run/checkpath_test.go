//go:build linux

package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// linkedHook loads a hooks folder whose hook a.sh is a symlink to
// real/a.sh, a bash hook running body; outside is a program beside the
// folder that creates marker if it is ever run.
func linkedHook(t *testing.T, body string) (h *hook.Hook, outside, marker string) {
	t.Helper()
	dir, out := t.TempDir(), t.TempDir()
	marker = filepath.Join(t.TempDir(), "outside-ran")
	outside = filepath.Join(out, "tool")
	write := func(p, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "real", "a.sh"), "#!/bin/bash\nif [[ ${1:-} == --config ]]; then echo '{\"configVersion\":\"v1\",\"onStartup\":1}'; exit 0; fi\n"+body)
	write(filepath.Join(dir, ".hookignore"), "real/\n")
	write(outside, "#!/bin/bash\ntouch "+marker+"\n")
	if err := os.Symlink("real/a.sh", filepath.Join(dir, "a.sh")); err != nil {
		t.Fatal(err)
	}
	hooks, err := hook.Load(context.Background(), dir, hook.LoadOptions{})
	if err != nil || len(hooks) != 1 {
		t.Fatalf("load: %v, %d hooks", err, len(hooks))
	}
	return hooks[0], outside, marker
}

// repointLink makes link lead to target, in one rename.
func repointLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link+".new", link); err != nil {
		t.Fatal(err)
	}
}

// A hook whose link is repointed out of the hooks folder after the load
// does not run: each run fails with an error naming the hook and where
// its link leads, and the program there is never started; pointed back
// inside, it runs again. Issue 60: with --hooks-reload=false, such a hook
// ran what it led to 5 times out of 5.
func TestRunRefusesAHookRepointedOutside(t *testing.T) {
	r, _ := testRunner(t)
	h, outside, marker := linkedHook(t, "exit 0\n")
	if _, err := runWhat(t, r, h, "ok", 0); err != nil {
		t.Fatalf("as loaded: %v", err)
	}
	repointLink(t, outside, h.Path)
	for range 3 {
		_, err := runWhat(t, r, h, "ok", 0)
		if err == nil || !strings.Contains(err.Error(), "hook a.sh: not run: "+h.Path+" now leads to "+outside+", outside the hooks folder") {
			t.Fatalf("repointed out: %v; want an error naming the hook and %s", err, outside)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program the hook was repointed to ran")
	}
	repointLink(t, "real/a.sh", h.Path)
	if _, err := runWhat(t, r, h, "ok", 0); err != nil {
		t.Errorf("pointed back inside: %v", err)
	}
	assertEmptyDir(t, r.TmpDir)
}

// A resident hook repointed out of the folder: the process started from
// what was checked is replaced, as for any change of its executable, and
// its replacement is not started.
func TestResidentRefusesAHookRepointedOutside(t *testing.T) {
	r, _ := testRunner(t)
	defer r.Close()
	h, outside, marker := linkedHook(t, residentBody)
	h.Config.Settings = hook.Settings{Resident: true, ResidentMaxMemory: hook.DefaultResidentMaxMemory}
	if _, err := runWhat(t, r, h, "ok", 0); err != nil {
		t.Fatalf("as loaded: %v", err)
	}
	pid := readPid(t, h, "pid")
	repointLink(t, outside, h.Path)
	for range 3 {
		_, err := runWhat(t, r, h, "ok", 0)
		if err == nil || !strings.Contains(err.Error(), "hook a.sh: resident process: not run: "+h.Path+" now leads to "+outside) {
			t.Fatalf("repointed out: %v; want an error naming the hook and %s", err, outside)
		}
	}
	assertGone(t, pid)
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program the hook was repointed to ran")
	}
	repointLink(t, "real/a.sh", h.Path)
	if _, err := runWhat(t, r, h, "ok", 0); err != nil {
		t.Errorf("pointed back inside: %v", err)
	}
	if n := starts(t, h); n != 2 {
		t.Errorf("the hook's process started %d times, want 2 (before and after the link left the folder)", n)
	}
}
