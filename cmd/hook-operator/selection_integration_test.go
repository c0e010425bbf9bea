package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Hook selection on the local cluster, through the binary:
//   - a hook that --disabled-hooks (here by its environment variable)
//     names does not run, and the log says why;
//   - a hook whose --config prints only settings is skipped with a log
//     line, and the operator starts and runs the others;
//   - a hook that .hookignore names does not run; a change of .hookignore
//     reloads the folder: the hook it no longer names starts with its
//     Synchronization, and the one it names now stops.
func TestIntegrationHookSelection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	records := t.TempDir()
	mkcm := func(name string) { h.configMap(t, name, map[string]string{"app": "sel"}, nil) }
	mkcm("cm1")
	bindings := `[` + strings.ReplaceAll(cmBinding("cms", "sel"), "NS", h.ns) + `]`
	for _, name := range []string{"run.sh", "later.sh", "debug/dump.sh"} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(h.hooks, name)), 0o755))
		h.hook(t, name, reloadHook(h.ns, records, strings.ReplaceAll(name, "/", "-"), bindings, "v1", false))
	}
	h.hook(t, "off.sh", bashHook(`{"configVersion":"v1","settings":{"executionMinInterval":"1s"}}`, "echo ran >>"+filepath.Join(records, "off.sh")+"\n"))
	ignore := filepath.Join(h.hooks, ".hookignore")
	must(t, os.WriteFile(ignore, []byte("# not yet\nlater.sh\n"), 0o644))

	o := h.startEnv(t, []string{"HOOK_OPERATOR_DISABLED_HOOKS=debug/*"})
	record := func(hook string) string {
		data, _ := os.ReadFile(filepath.Join(records, hook))
		return string(data)
	}
	has := func(hook, line string) func() bool {
		return func() bool { return strings.Contains(record(hook), line) }
	}
	skipped := func(hook, reason string) func() bool {
		re := regexp.MustCompile(`"hook":"` + regexp.QuoteMeta(hook) + `","level":"info","msg":"hook skipped","reason":"` + regexp.QuoteMeta(reason))
		return func() bool { return re.MatchString(o.logs.String()) }
	}
	o.waitFor(t, "run.sh's Synchronization", has("run.sh", "S cms cm1"))
	for _, s := range []struct{ hook, reason string }{
		{"debug/dump.sh", "disabled by --disabled-hooks (debug/*)"},
		{"off.sh", "no bindings"},
		{"later.sh", "ignored by .hookignore line 2 (later.sh)"},
	} {
		if !skipped(s.hook, s.reason)() {
			t.Errorf("the log lacks %s skipped with reason %q", s.hook, s.reason)
		}
	}
	// run.sh's Synchronization is done, so theirs would be too.
	for _, hook := range []string{"debug-dump.sh", "off.sh", "later.sh"} {
		if r := record(hook); r != "" {
			t.Errorf("%s ran, though skipped:\n%s", hook, r)
		}
	}

	// .hookignore changed: later.sh starts, run.sh stops.
	must(t, os.WriteFile(ignore, []byte("run.sh\n"), 0o644))
	o.waitFor(t, "later.sh's Synchronization after the reload", has("later.sh", "S cms cm1"))
	o.waitFor(t, "run.sh skipped at the reload", skipped("run.sh", "ignored by .hookignore line 1 (run.sh)"))
	mkcm("cm2")
	o.waitFor(t, "later.sh's event for cm2", has("later.sh", "E cms Added cm2"))
	if has("run.sh", "cm2")() {
		t.Errorf("run.sh ran for cm2 after .hookignore named it:\n%s", record("run.sh"))
	}
	if has("debug-dump.sh", "cm")() {
		t.Errorf("the disabled hook ran after the reload:\n%s", record("debug-dump.sh"))
	}
}
