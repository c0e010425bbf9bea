package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// programOutside writes a program in a folder of its own, outside the
// hooks folder (as /usr/bin is), that appends "$0 $*" to marker however
// it is run, --config included. It returns the folder and the program.
func programOutside(t *testing.T, marker string) (dir, program string) {
	t.Helper()
	dir = t.TempDir()
	writeHook(t, dir, "program", "#!/usr/bin/env bash\necho \"$0 $*\" >> "+marker+"\necho '{\"configVersion\":\"v1\",\"onStartup\":1}'\n")
	return dir, filepath.Join(dir, "program")
}

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
	marks := t.TempDir()
	marker := filepath.Join(marks, "outside-ran")
	outside, program := programOutside(t, marker)
	h.hook(t, "ok.sh", bashHook(`{"configVersion":"v1","onStartup":1}`, "touch "+filepath.Join(marks, "ok")+"\n"))
	must(t, os.Symlink(outside, filepath.Join(h.hooks, "bin")))
	must(t, os.Symlink(program, filepath.Join(h.hooks, "tool.sh")))
	ignore := filepath.Join(h.hooks, ".hookignore")
	must(t, syscall.Mkfifo(ignore, 0o644))

	// The named pipe: start ends with an error instead of waiting for a
	// writer that never comes.
	began := time.Now()
	out := startFails(t, h.hooks, operatorOpts{}, 60*time.Second)
	t.Logf("start with a named pipe as .hookignore ended in %s", time.Since(began).Round(time.Millisecond))
	if !strings.Contains(out, ".hookignore is a named pipe (FIFO), not a regular file") {
		t.Errorf("start ended without an error naming .hookignore as a named pipe:\n%s", out)
	}

	// A plain .hookignore: the operator starts, runs ok.sh, and names the
	// links out.
	must(t, os.Remove(ignore))
	must(t, os.WriteFile(ignore, []byte("# nothing ignored\n"), 0o644))
	o := h.start(t)
	o.waitFor(t, "ok.sh's onStartup run", func() bool { _, err := os.Stat(filepath.Join(marks, "ok")); return err == nil })
	logs := o.logs.String()
	wantAll(t, "the log", logs,
		"skipping bin: symlink to "+outside+", outside the hooks folder",
		"skipping tool.sh: symlink to "+program+", outside the hooks folder")
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

// Two hooks, one-shot and resident, that are symlinks into the hooks
// folder, repointed to a program outside it while the operator runs with
// --hooks-reload=false, each in a queue of its own (issue 60: the check ran only at load, and the
// program outside ran at each of the hook's 5 runs). Now each run fails
// with an error naming the hook and where its link leads, and the program
// never runs.
func TestIntegrationHostileHookRepointedOutside(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	marks := t.TempDir()
	runs, ran := filepath.Join(marks, "runs"), filepath.Join(marks, "outside-ran")
	_, program := programOutside(t, ran)
	// The hooks' files sit in a dot-folder (not hooks themselves); the
	// hooks are links to them, as a ConfigMap volume's keys are.
	versions := filepath.Join(h.hooks, ".v1")
	must(t, os.Mkdir(versions, 0o755))
	writeHook(t, versions, "once.sh", bashHook(`{"configVersion":"v1","schedule":[{"name":"tick","crontab":"* * * * * *","queue":"once"}]}`, "echo once >> "+runs+"\n"))
	writeHook(t, versions, "resident.sh", residentLoop(`{"configVersion":"v1","settings":{"resident":true},"schedule":[{"name":"tick","crontab":"* * * * * *","queue":"resident"}]}`, marks,
		"echo resident >> "+runs))
	for _, name := range []string{"once.sh", "resident.sh"} {
		must(t, os.Symlink(filepath.Join(".v1", name), filepath.Join(h.hooks, name)))
	}
	o := h.start(t, "--hooks-reload=false")
	count := func(what string) int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), what+"\n")
	}
	o.waitFor(t, "two runs of each hook", func() bool { return count("once") >= 2 && count("resident") >= 2 })

	for _, name := range []string{"once.sh", "resident.sh"} {
		link := filepath.Join(h.hooks, name)
		must(t, os.Symlink(program, link+".new"))
		must(t, os.Rename(link+".new", link))
	}
	refused := func(name string) int {
		n := 0
		for _, line := range strings.Split(o.logs.String(), "\n") {
			if strings.Contains(line, `"hook":"`+name+`"`) && strings.Contains(line, "not run: "+filepath.Join(h.hooks, name)+" now leads to "+program+", outside the hooks folder") {
				n++
			}
		}
		return n
	}
	outsideRan := func() bool { _, err := os.Stat(ran); return err == nil }
	o.waitFor(t, "three refused runs of each hook, or the program outside run", func() bool {
		return refused("once.sh") >= 3 && refused("resident.sh") >= 3 || outsideRan()
	})
	time.Sleep(time.Second) // a run started before the last refusal would have ended
	if outsideRan() {
		b, _ := os.ReadFile(ran)
		t.Errorf("the program outside the hooks folder ran:\n%s", b)
	}
	t.Logf("refused runs: once.sh %d, resident.sh %d", refused("once.sh"), refused("resident.sh"))
}
