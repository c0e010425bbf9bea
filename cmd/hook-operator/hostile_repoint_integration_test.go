package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two hooks, one-shot and resident, that are symlinks into the hooks
// folder, repointed to a program outside it while the operator runs with
// --hooks-reload=false, each in a queue of its own (issue 60: the check ran only at load, and the
// program outside ran at each of the hook's 5 runs). Now each run fails
// with an error naming the hook and where its link leads, and the program
// never runs.
func TestIntegrationHostileHookRepointedOutside(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	outside, marks := t.TempDir(), t.TempDir()
	runs, ran := filepath.Join(marks, "runs"), filepath.Join(marks, "outside-ran")
	program := filepath.Join(outside, "program")
	writeHook(t, outside, "program", "#!/usr/bin/env bash\necho \"$0 $*\" >> "+ran+"\necho '{\"configVersion\":\"v1\",\"onStartup\":1}'\n")
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
