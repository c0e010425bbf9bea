package hook

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestIgnoreRules(t *testing.T) {
	rules, err := parseIgnore([]byte(`# comment

node_modules/
*.bak
/top-only.sh
tools/**/gen-*
!keep.bak
\#literal
`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		rel     string
		dir     bool
		ignored bool
	}{
		{"node_modules", true, true},
		{"pods/node_modules", true, true},
		{"node_modules", false, false}, // trailing "/": folders only
		{"a.bak", false, true},
		{"pods/x.bak", false, true},
		{"keep.bak", false, false}, // negated by a later line
		{"top-only.sh", false, true},
		{"pods/top-only.sh", false, false}, // anchored at the top
		{"tools/gen-a", false, true},
		{"tools/x/y/gen-b", false, true},
		{"other/gen-c", false, false},
		{"#literal", false, true},
		{"pods/on-pod.sh", false, false},
	}
	for _, c := range cases {
		if got, _ := rules.match(c.rel, c.dir); got != c.ignored {
			t.Errorf("match(%q, dir=%v) = %v, want %v", c.rel, c.dir, got, c.ignored)
		}
	}
}

func TestIgnoreRulesErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ok\n[unclosed\n", ".hookignore line 2: \"[unclosed\""},
		{"# c\n/\n", ".hookignore line 2: \"/\" matches nothing"},
	} {
		_, err := parseIgnore([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseIgnore(%q) error = %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

func TestCheckDisabled(t *testing.T) {
	if err := CheckDisabled([]string{"pods/a.sh", "debug/*", "**/x-*"}); err != nil {
		t.Errorf("valid patterns: %v", err)
	}
	for _, bad := range [][]string{{""}, {"a/[b"}} {
		if err := CheckDisabled(bad); err == nil || !strings.Contains(err.Error(), "--disabled-hooks") {
			t.Errorf("CheckDisabled(%q) error = %v, want one naming --disabled-hooks", bad, err)
		}
	}
}

// TestLoadSkips: .hookignore leaves files and whole folders out (a broken
// "hook" inside an ignored folder is never run), --disabled-hooks leaves
// hooks out without running their --config, and a hook that prints only
// settings is skipped instead of failing the load.
func TestLoadSkips(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "run.sh", `echo '{"configVersion":"v1","onStartup":1}'`)
	script(t, dir, "settings-only.sh", `echo '{"configVersion":"v1","settings":{"timeout":"1m"}}'`)
	script(t, dir, "debug/dump.sh", `exit 3`)
	script(t, dir, "node_modules/.bin/tool", `exit 3`)
	script(t, dir, "node_modules/pkg/cli.js", `exit 3`)
	script(t, dir, "gen.bak", `exit 3`)
	if err := os.WriteFile(filepath.Join(dir, IgnoreFile), []byte("node_modules/\n*.bak\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var skipped []Skipped
	hooks, err := Load(context.Background(), dir, LoadOptions{
		Disabled: []string{"debug/*"},
		Skip:     func(s Skipped) { skipped = append(skipped, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 1 || hooks[0].Name != "run.sh" {
		t.Fatalf("hooks = %v, want only run.sh", hookNames(hooks))
	}
	want := []Skipped{
		{"debug/dump.sh", "disabled by --disabled-hooks (debug/*)"},
		{"gen.bak", "ignored by .hookignore line 2 (*.bak)"},
		{"node_modules/", "ignored by .hookignore line 1 (node_modules/)"},
		{"settings-only.sh", ReasonNoBindings + ": its --config prints no onStartup, schedule, kubernetes or webhook binding, so it would never run"},
	}
	if !reflect.DeepEqual(skipped, want) {
		t.Errorf("skipped =\n%v\nwant\n%v", skipped, want)
	}
}

func TestLoadBadHookignore(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "run.sh", `echo '{"configVersion":"v1","onStartup":1}'`)
	if err := os.WriteFile(filepath.Join(dir, IgnoreFile), []byte("a/[b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(context.Background(), dir, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), ".hookignore line 1") {
		t.Errorf("error = %v, want one naming .hookignore line 1", err)
	}
}

func TestFingerprintSeesHookignore(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "run.sh", `echo`)
	before := Fingerprint(dir, FolderOptions{})
	if err := os.WriteFile(filepath.Join(dir, IgnoreFile), []byte("run.sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if Fingerprint(dir, FolderOptions{}) == before {
		t.Error("writing .hookignore left the fingerprint unchanged; a reload would miss it")
	}
	before = Fingerprint(dir, FolderOptions{})
	if err := os.WriteFile(filepath.Join(dir, ".other"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if Fingerprint(dir, FolderOptions{}) != before {
		t.Error("another dot-file changed the fingerprint; only .hookignore should")
	}
}

func hookNames(hs []*Hook) []string {
	var n []string
	for _, h := range hs {
		n = append(n, h.Name)
	}
	return n
}
