package main_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A hooks folder that leads out of itself, and a .hookignore that is no
// file. Before: a symlink to /usr/bin had ~1,165 system programs run with
// --config; a .hookignore that was a named pipe hung start, deaf to
// SIGTERM. Now: start with the pipe ends at once with an error naming it;
// with a plain .hookignore it starts, runs its own hook, names each link
// out in its log, and never runs what they lead to, at start or at a
// reload.
func TestIntegrationHostileHooksFolder(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	outside, marks := t.TempDir(), t.TempDir()
	// A folder of programs outside the hooks folder, as /usr/bin is; each
	// leaves a marker however it is run, --config included.
	marker := filepath.Join(marks, "outside-ran")
	writeHook(t, outside, "program", "#!/usr/bin/env bash\ntouch "+marker+"\necho '{\"configVersion\":\"v1\",\"onStartup\":1}'\n")
	h.hook(t, "ok.sh", bashHook(`{"configVersion":"v1","onStartup":1}`, "touch "+filepath.Join(marks, "ok")+"\n"))
	must(t, os.Symlink(outside, filepath.Join(h.hooks, "bin")))
	must(t, os.Symlink(filepath.Join(outside, "program"), filepath.Join(h.hooks, "tool.sh")))
	ignore := filepath.Join(h.hooks, ".hookignore")
	must(t, syscall.Mkfifo(ignore, 0o644))

	// The named pipe: start ends with an error instead of waiting for a
	// writer that never comes.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, h.bin, "start", "--hooks-dir", h.hooks, "--kubeconfig", h.c.Kubeconfig, "--log-format", "json",
		"--listen-address", "", "--health-listen-address", "", "--debug-socket", "")
	cmd.Stderr = &stderr
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	t.Logf("start with a named pipe as .hookignore ended in %s: %v", took.Round(time.Millisecond), err)
	if ctx.Err() != nil {
		t.Fatalf("start with a named pipe as .hookignore did not end within 60s (killed):\n%s", stderr.String())
	}
	if err == nil || !strings.Contains(stderr.String(), ".hookignore is a named pipe (FIFO), not a regular file") {
		t.Errorf("start: %v, want an error naming .hookignore as a named pipe:\n%s", err, stderr.String())
	}

	// A plain .hookignore: the operator starts, runs ok.sh, and names the
	// links out.
	must(t, os.Remove(ignore))
	must(t, os.WriteFile(ignore, []byte("# nothing ignored\n"), 0o644))
	o := h.start(t)
	o.waitFor(t, "ok.sh's onStartup run", func() bool { _, err := os.Stat(filepath.Join(marks, "ok")); return err == nil })
	logs := o.logs.String()
	for _, want := range []string{
		"skipping bin: symlink to " + outside + ", outside the hooks folder",
		"skipping tool.sh: symlink to " + filepath.Join(outside, "program") + ", outside the hooks folder",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log does not say %q", want)
		}
	}
	if !strings.Contains(logs, "--hooks-allow-external-symlinks") {
		t.Error("the log does not name the flag that allows links out")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a program outside the hooks folder was run at start")
	}

	// A link out added while it runs: the reload names it too.
	must(t, os.Symlink(outside, filepath.Join(h.hooks, "more")))
	o.waitLog(t, "skipping more: symlink to "+outside)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a program outside the hooks folder was run at the reload")
	}
}
