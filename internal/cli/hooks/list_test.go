package hooks_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/cli"
	"github.com/hook-operator/hook-operator/internal/cli/hooks"
	"github.com/hook-operator/hook-operator/internal/hook"
)

// run runs the whole command line, as main does, with env as the only
// environment variables the flags see.
func run(env map[string]string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	cmd := cli.NewRootCommand(&out, &errb, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		// as cli.Execute prints it
		errb.WriteString("hook-operator: " + err.Error() + "\n")
		return 1, out.String(), errb.String()
	}
	return 0, out.String(), errb.String()
}

// list runs hooks list on the hooks in dir with args, and fails t unless
// it exits 0.
func list(t *testing.T, dir string, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := run(nil, append([]string{"hooks", "list", "--hooks-dir", dir}, args...)...)
	if code != 0 {
		t.Fatalf("hooks list %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return stdout, stderr
}

// listFails runs hooks list on the hooks in dir with args, fails t unless
// it exits 1 and prints nothing, and returns what it wrote to stderr.
func listFails(t *testing.T, dir string, args ...string) string {
	t.Helper()
	code, out, stderr := run(nil, append([]string{"hooks", "list", "--hooks-dir", dir}, args...)...)
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	return stderr
}

func script(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/usr/bin/env bash\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// hooksDir holds two valid hooks, one printing YAML and one JSON, and a
// file that is not a hook.
func hooksDir(t *testing.T) string {
	dir := t.TempDir()
	script(t, dir, "pods/on-pod.sh", `cat <<'YAML'
configVersion: v1
onStartup: 5
kubernetes:
- name: pods
  apiVersion: v1
  kind: Pod
  executeHookOnEvent: [Added]
  queue: pods
  namespace: {nameSelector: {matchNames: [default]}}
  labelSelector: {matchLabels: {app: web}}
  jqFilter: .metadata.labels
  resynchronizationPeriod: 10m
  staleAfter: 2m
schedule:
- {name: tick, crontab: "*/5 * * * *", includeSnapshotsFrom: [pods]}
settings: {executionMinInterval: 5s, staleAfter: 10m}
YAML
`)
	script(t, dir, "nodes.sh", `echo '{"configVersion":"v1","kubernetes":[{"name":"nodes","kind":"Node","executeHookOnEvent":[]}]}'`)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("docs"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestListTable(t *testing.T) {
	dir := hooksDir(t)
	wide := [][]string{
		{"HOOK", "MODE", "BINDING TYPE", "NAME", "KIND/CRONTAB", "QUEUE", "DETAILS"},
		{"nodes.sh", "one-shot", "kubernetes", "nodes", "Node", "main", "executeHookOnEvent=none (snapshots only)"},
		{"pods/on-pod.sh", "one-shot", "onStartup", "onStartup", "-", "main", "order=5"},
		{"pods/on-pod.sh", "one-shot", "schedule", "tick", "*/5 * * * *", "main", "includeSnapshotsFrom=pods"},
		{"pods/on-pod.sh", "one-shot", "kubernetes", "pods", "v1 Pod", "pods", "namespaces=default; labels=app=web; jqFilter=.metadata.labels; executeHookOnEvent=Added; resynchronizationPeriod=10m0s; staleAfter=2m0s"},
		{"pods/on-pod.sh", "one-shot", "settings", "-", "-", "-", "executionMinInterval=5s; executionBurst=1; staleAfter=10m0s"},
	}
	// The default table is the wide one without DETAILS and the settings
	// row, which only DETAILS fills.
	var table [][]string
	for _, r := range wide[:len(wide)-1] {
		table = append(table, r[:6])
	}
	for _, tc := range []struct {
		format string
		want   [][]string
	}{{"table", table}, {"wide", wide}} {
		out, stderr := list(t, dir, "-o", tc.format)
		wantRows(t, "-o "+tc.format, out, tc.want)
		if !strings.Contains(stderr, "warning: skipping README.md: not executable") {
			t.Errorf("-o %s: stderr %q lacks the warning for README.md", tc.format, stderr)
		}
	}
}

// A long, multi-line jqFilter keeps -o wide's rows on one line: whole, on
// one line, and as written in JSON. The finalizer option shows.
func TestListLongValues(t *testing.T) {
	dir := t.TempDir()
	filter := "{\n  name: .metadata.name,\n  labels: .metadata.labels,\n  replicas: .spec.replicas,\n  image: .spec.template.spec.containers[0].image\n}"
	script(t, dir, "deploys.sh", "cat <<'YAML'\nconfigVersion: v1\nkubernetes:\n- name: deploys\n  apiVersion: apps/v1\n  kind: Deployment\n  finalizer: example.com/cleanup\n  jqFilter: |\n"+
		"    "+strings.ReplaceAll(filter, "\n", "\n    ")+"\nYAML\n")
	oneLine := "{ name: .metadata.name, labels: .metadata.labels, replicas: .spec.replicas, image: .spec.template.spec.containers[0].image }"
	for _, tc := range []struct {
		format, want string
	}{
		{"wide", "jqFilter=" + oneLine + "; finalizer=example.com/cleanup"},
	} {
		out, _ := list(t, dir, "-o", tc.format)
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("-o %s: %d lines, want a header and one row:\n%s", tc.format, len(lines), out)
		}
		if got := cells(lines[1]); got[len(got)-1] != tc.want {
			t.Errorf("-o %s: DETAILS\n got %q\nwant %q", tc.format, got[len(got)-1], tc.want)
		}
	}
	out, _ := list(t, dir, "-o", "json")
	var hooks []struct {
		Config struct {
			Kubernetes []map[string]any `json:"kubernetes"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(out), &hooks); err != nil || len(hooks) != 1 {
		t.Fatalf("-o json: %v:\n%s", err, out)
	}
	b := hooks[0].Config.Kubernetes[0]
	if b["jqFilter"] != filter+"\n" || b["finalizer"] != "example.com/cleanup" {
		t.Errorf("-o json: jqFilter %q, finalizer %v; want them as written", b["jqFilter"], b["finalizer"])
	}
}

// cells splits a table line into its cells: columns are padded with at
// least two spaces, and cells hold single spaces only.
func cells(line string) []string {
	for strings.Contains(line, "   ") {
		line = strings.ReplaceAll(line, "   ", "  ")
	}
	return strings.Split(line, "  ")
}

// wantRows fails t unless the table out has the rows want, cell by cell.
func wantRows(t *testing.T, what, out string, want [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%s: %d lines, want %d:\n%s", what, len(lines), len(want), out)
	}
	for i, w := range want {
		if got := cells(lines[i]); strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("%s line %d:\n got %q\nwant %q", what, i, got, w)
		}
	}
}

func TestListJSONAndYAML(t *testing.T) {
	dir := hooksDir(t)
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			out, _ := list(t, dir, "-o", format)
			data := []byte(out)
			if format == "yaml" {
				var err error
				if data, err = yaml.YAMLToJSON(data); err != nil {
					t.Fatalf("not YAML: %v\n%s", err, out)
				}
			} else if !json.Valid(data) {
				t.Fatalf("not JSON:\n%s", out)
			}
			var hooks []hook.Hook
			if err := json.Unmarshal(data, &hooks); err != nil {
				t.Fatalf("output does not decode into []hook.Hook: %v\n%s", err, out)
			}
			if len(hooks) != 2 || hooks[0].Name != "nodes.sh" || hooks[1].Name != "pods/on-pod.sh" {
				t.Fatalf("hooks %+v", hooks)
			}
			if hooks[1].Path != filepath.Join(dir, "pods", "on-pod.sh") {
				t.Errorf("path %q", hooks[1].Path)
			}
			k := hooks[1].Config.Kubernetes[0]
			if k.Kind != "Pod" || k.Queue != "pods" || k.ResynchronizationPeriod.String() != "10m0s" || k.Filter == nil || !k.KeepFullObjectsInMemory {
				t.Errorf("kubernetes binding %+v", k)
			}
			if ev := hooks[0].Config.Kubernetes[0].ExecuteHookOnEvent; ev == nil || len(ev) != 0 {
				t.Errorf("snapshot-only binding: executeHookOnEvent %#v, want []", ev)
			}
		})
	}
}

func TestListInvalid(t *testing.T) {
	dir := hooksDir(t)
	script(t, dir, "bad.sh", `echo '{"configVersion":"v1","kubernetes":[{"kind":"Pod","executeHookOnEvent":["Create"]}],"schedule":[{"crontab":"* *"}]}'`)
	script(t, dir, "broken.sh", `echo "cannot reach the cluster" >&2; exit 2`)
	code, out, stderr := run(nil, "hooks", "list", "--hooks-dir", dir)
	if code == 0 {
		t.Fatalf("exit 0 with invalid hooks; stdout:\n%s", out)
	}
	if out != "" {
		t.Errorf("stdout not empty on error:\n%s", out)
	}
	for _, want := range []string{
		"3 problems with hook configuration",
		`hook bad.sh: kubernetes[0].executeHookOnEvent[0]: "Create" is not an event type`,
		"hook bad.sh: schedule[0].crontab:",
		"hook broken.sh: --config failed (exit status 2)",
		"cannot reach the cluster",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestListExitCode(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "bad.sh", `echo '{"configVersion":"v2"}'`)
	var out, errb bytes.Buffer
	if code := cli.Execute([]string{"hooks", "list", "--hooks-dir", dir}, &out, &errb); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(errb.String(), `hook bad.sh: configVersion: the string "v2" is not supported`) {
		t.Errorf("stderr %q", errb.String())
	}
}

func TestListEnvironment(t *testing.T) {
	dir := hooksDir(t)
	other := t.TempDir()
	for name, env := range map[string]map[string]string{
		"HOOK_OPERATOR_HOOKS_DIR":             {"HOOK_OPERATOR_HOOKS_DIR": dir},
		"SHELL_OPERATOR_HOOKS_DIR":            {"SHELL_OPERATOR_HOOKS_DIR": dir},
		"HOOK_OPERATOR_ over SHELL_OPERATOR_": {"HOOK_OPERATOR_HOOKS_DIR": dir, "SHELL_OPERATOR_HOOKS_DIR": other},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, stderr := run(env, "hooks", "list", "-o", "json")
			if code != 0 || !strings.Contains(out, `"pods/on-pod.sh"`) {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
			}
		})
	}
	// The flag wins over the variable.
	if code, out, _ := run(map[string]string{"HOOK_OPERATOR_HOOKS_DIR": other}, "hooks", "list", "--hooks-dir", dir); code != 0 || !strings.Contains(out, "pods/on-pod.sh") {
		t.Errorf("--hooks-dir did not win over the environment: %q", out)
	}

	slow := t.TempDir()
	script(t, slow, "slow.sh", "sleep 30\n")
	code, _, stderr := run(map[string]string{"HOOK_OPERATOR_CONFIG_TIMEOUT": "200ms"}, "hooks", "list", "--hooks-dir", slow)
	if code == 0 || !strings.Contains(stderr, "hook slow.sh: --config did not finish within 200ms") {
		t.Errorf("HOOK_OPERATOR_CONFIG_TIMEOUT: exit %d, stderr %q", code, stderr)
	}
}

func TestListUsageErrors(t *testing.T) {
	dir := hooksDir(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "xml"}, `--output "xml": use table, wide, json or yaml`},
		{[]string{"--config-timeout", "0s"}, "--config-timeout 0s: use a positive duration"},
		{[]string{"--hooks-dir", filepath.Join(dir, "missing")}, "does not exist; set --hooks-dir (or HOOK_OPERATOR_HOOKS_DIR)"},
	} {
		args := append([]string{"hooks", "list", "--hooks-dir", dir}, tc.args...)
		if code, _, stderr := run(nil, args...); code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
	code, out, stderr := run(nil, "hooks", "list", "--hooks-dir", t.TempDir(), "-o", "json")
	if code != 0 || strings.TrimSpace(out) != "[]" || !strings.Contains(stderr, "no hooks found") {
		t.Errorf("empty folder: exit %d, stdout %q, stderr %q; want [] and a warning", code, out, stderr)
	}
}

func TestHelp(t *testing.T) {
	root := cli.NewRootCommand(&bytes.Buffer{}, &bytes.Buffer{}, func(string) (string, bool) { return "", false })
	list, _, err := root.Find([]string{"hooks", "list"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{list.Short, list.Long, list.Example, list.Parent().Short, list.Parent().Long} {
		if c == "" {
			t.Errorf("%s lacks help text", list.CommandPath())
		}
	}
}

func TestUnknownSubcommand(t *testing.T) {
	if code, _, stderr := run(nil, "hooks", "lst"); code == 0 || !strings.Contains(stderr, `unknown command "lst"`) {
		t.Errorf("hooks lst: exit %d, stderr %q; want an unknown command error", code, stderr)
	}
}

// A misspelled built-in kind fails the listing (exit 1), naming the hook,
// binding and field and suggesting the kind; before, the binding only
// waited for a CRD at start, while the rest of its group ran without it.
func TestListMisspelledKind(t *testing.T) {
	dir := hooksDir(t)
	script(t, dir, "group.sh", `echo '{"configVersion":"v1","kubernetes":[{"name":"ns","kind":"Namespce","group":"g"},{"name":"cms","kind":"ConfigMap","group":"g"}]}'`)
	stderr := listFails(t, dir)
	if want := `hook group.sh: kubernetes[0].kind: binding "ns": "Namespce" is not a kind of Kubernetes; did you mean Namespace?`; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}

// A resident hook says so in the MODE column; its limits show under -o wide's DETAILS
// only where they differ from the defaults, and -o json has them all.
func TestListResidentMode(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "fast.sh", `echo '{"configVersion":"v1","onStartup":1,"settings":{"resident":true}}'`)
	script(t, dir, "leaky.sh", `echo '{"configVersion":"v1","onStartup":1,"settings":{"resident":true,"residentMaxMemory":"64Mi","residentMaxRuns":100}}'`)
	out, _ := list(t, dir, "-o", "wide")
	want := [][]string{
		{"HOOK", "MODE", "BINDING TYPE", "NAME", "KIND/CRONTAB", "QUEUE", "DETAILS"},
		{"fast.sh", "resident", "onStartup", "onStartup", "-", "main", "order=1"},
		{"leaky.sh", "resident", "onStartup", "onStartup", "-", "main", "order=1"},
		{"leaky.sh", "resident", "settings", "-", "-", "-", "residentMaxRuns=100; residentMaxMemory=64Mi"},
	}
	wantRows(t, "-o wide", out, want)
	out, _ = list(t, dir, "-o", "json")
	var hooks []struct {
		Config struct {
			Settings map[string]any `json:"settings"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(out), &hooks); err != nil || len(hooks) != 2 {
		t.Fatalf("-o json: %v:\n%s", err, out)
	}
	if s := hooks[0].Config.Settings; s["resident"] != true || s["residentMaxRuns"] != 10000.0 || s["residentMaxMemory"] != "128Mi" {
		t.Errorf("-o json: settings %v, want resident with the default limits filled in", s)
	}
}

// -o wide shows a mutating binding's reinvocationPolicy when it is not the
// API server's default (Never); the narrow table has no DETAILS. -o json
// keeps it with the binding's other webhook settings.
func TestListReinvocationPolicy(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "defaults.sh", `cat <<'YAML'
configVersion: v1
kubernetesMutating:
- name: again.example.com
  reinvocationPolicy: IfNeeded
  rules: [{apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: [CREATE]}]
- name: once.example.com
  reinvocationPolicy: Never
  rules: [{apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: [CREATE]}]
- name: unset.example.com
  rules: [{apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: [CREATE]}]
YAML
`)
	out, _ := list(t, dir, "-o", "wide")
	want := [][]string{
		{"HOOK", "MODE", "BINDING TYPE", "NAME", "KIND/CRONTAB", "QUEUE", "DETAILS"},
		{"defaults.sh", "one-shot", "kubernetesMutating", "again.example.com", "-", "-", "path=/hooks/again-example-com; reinvocationPolicy=IfNeeded"},
		{"defaults.sh", "one-shot", "kubernetesMutating", "once.example.com", "-", "-", "path=/hooks/once-example-com"},
		{"defaults.sh", "one-shot", "kubernetesMutating", "unset.example.com", "-", "-", "path=/hooks/unset-example-com"},
	}
	wantRows(t, "-o wide", out, want)

	out, _ = list(t, dir, "-o", "json")
	if !strings.Contains(out, `"reinvocationPolicy": "IfNeeded"`) {
		t.Errorf("-o json lacks the binding's reinvocationPolicy:\n%s", out)
	}
}

// A reinvocationPolicy the API server would refuse fails hooks list with
// the hook, the field and the values allowed.
func TestListReinvocationPolicyInvalid(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "defaults.sh", `echo '{"configVersion":"v1","kubernetesMutating":[{"name":"a.example.com","reinvocationPolicy":"ifneeded"}]}'`)
	stderr := listFails(t, dir, "-o", "wide")
	want := `hook defaults.sh: kubernetesMutating[0].reinvocationPolicy: binding "a.example.com": "ifneeded" is not a reinvocation policy`
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "use Never (") || !strings.Contains(stderr, ") or IfNeeded (") {
		t.Errorf("stderr %q\nwant %q and the values allowed", stderr, want)
	}
}

// hooks list shows what the operator would not run, and why, in the table
// and in -o json; --disabled-hooks has an environment form.
func TestListSkipped(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "run.sh", `echo '{"configVersion":"v1","onStartup":1}'`)
	script(t, dir, "off.sh", `echo '{"configVersion":"v1","settings":{"executionMinInterval":"1s"}}'`)
	script(t, dir, "debug/dump.sh", `echo '{"configVersion":"v1","onStartup":2}'`)
	script(t, dir, "node_modules/.bin/x", `exit 1`)
	if err := os.WriteFile(filepath.Join(dir, hook.IgnoreFile), []byte("# not hooks\nnode_modules/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(map[string]string{"HOOK_OPERATOR_DISABLED_HOOKS": "debug/*"}, "hooks", "list", "--hooks-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"SKIPPED",
		"debug/dump.sh  disabled by --disabled-hooks (debug/*)",
		"node_modules/  ignored by .hookignore line 2 (node_modules/)",
		"off.sh         no bindings: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	code, out, stderr = run(nil, "hooks", "list", "--hooks-dir", dir, "--disabled-hooks", "debug/dump.sh", "-o", "json")
	var entries []struct {
		Name    string `json:"name"`
		Skipped string `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(out), &entries); code != 0 || err != nil {
		t.Fatalf("-o json: exit %d, %v:\n%s%s", code, err, out, stderr)
	}
	got := map[string]string{}
	for _, e := range entries {
		got[e.Name] = e.Skipped
	}
	if got["run.sh"] != "" || got["debug/dump.sh"] == "" || got["node_modules/"] == "" || got["off.sh"] == "" || len(got) != 4 {
		t.Errorf("-o json entries %v: want run.sh as a hook and the three others skipped with a reason", got)
	}
	code, _, stderr = run(nil, "hooks", "list", "--hooks-dir", dir, "--disabled-hooks", "a/[b")
	if code == 0 || !strings.Contains(stderr, `--disabled-hooks: "a/[b"`) {
		t.Errorf("a bad glob: exit %d, stderr %q; want an error naming the flag and the pattern", code, stderr)
	}
}

// The default table of the hooks the project ships fits a 160-column
// terminal (the DETAILS column made rows 344 characters wide).
func TestListShippedHooksFit160Columns(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "hooks")
	out, _ := list(t, dir)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 5 {
		t.Fatalf("only %d lines for the shipped hooks:\n%s", len(lines), out)
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > 160 {
			t.Errorf("line %d is %d columns wide, over 160:\n%s", i, n, l)
		}
	}
}

// rawControl returns the first control character in s other than a
// newline, or -1: what a terminal would act on instead of printing.
func rawControl(s string) rune {
	for _, r := range s {
		if r != '\n' && (r < 0x20 || r >= 0x7f && r <= 0x9f || r == '\u202e') {
			return r
		}
	}
	return -1
}

// Names from file names and from a hook's --config reach the table, the
// SKIPPED list and the warnings escaped: a binding named with ESC or NUL
// must not drive the terminal of whoever lists the hooks.
func TestListEscapesControlCharacters(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "evil\x1b[2J.sh", `echo '{"configVersion":"v1","kubernetes":[`+
		`{"name":"nul\u0000esc\u001b]0;title\u0007","kind":"Pod"},`+
		`{"name":"csi\u009b31m del\u007f rlo\u202e","kind":"Pod","jqFilter":".a == \"\u001b[1m\""}]}'`)
	script(t, dir, "off\x1b[5m.sh", `echo '{"configVersion":"v1","onStartup":1}'`)
	if err := os.WriteFile(filepath.Join(dir, "notes\x1b[8m.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "wide"} {
		out, stderr := list(t, dir, "-o", format, "--disabled-hooks", "off*")
		for what, s := range map[string]string{"stdout": out, "stderr": stderr} {
			if r := rawControl(s); r >= 0 {
				t.Errorf("-o %s: %s holds the control character %U raw:\n%q", format, what, r, s)
			}
		}
		for _, want := range []string{`evil\x1b[2J.sh`, `nul\x00esc\x1b]0;title\a`, `csi\u009b31m del\x7f rlo\u202e`, `off\x1b[5m.sh`} {
			if !strings.Contains(out, want) {
				t.Errorf("-o %s: stdout lacks %s:\n%s", format, want, out)
			}
		}
		if format == "wide" && !strings.Contains(out, `jqFilter=.a == "\x1b[1m"`) {
			t.Errorf("-o wide: DETAILS lacks the escaped jqFilter:\n%s", out)
		}
		if !strings.Contains(stderr, `warning: skipping notes\x1b[8m.txt: not executable`) {
			t.Errorf("-o %s: stderr lacks the escaped warning: %q", format, stderr)
		}
	}
	// An invalid configuration's error names the hook escaped too.
	script(t, dir, "bad\x1b[31m.sh", `echo '{"configVersion":"v1","kubernetes":[{"name":"x"}]}'`)
	code, _, stderr := run(nil, "hooks", "list", "--hooks-dir", dir)
	if code != 1 || rawControl(stderr) >= 0 || !strings.Contains(stderr, `hook bad\x1b[31m.sh`) {
		t.Errorf("invalid hook: exit %d, stderr %q; want 1 and the name escaped", code, stderr)
	}
}

// A symlink out of the hooks folder is a warning and no row, unless
// --hooks-allow-external-symlinks (or its variable) is set.
func TestListSymlinksOut(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	script(t, out, "tool", "touch "+marker+"\necho '{\"configVersion\":\"v1\",\"onStartup\":1}'")
	if err := os.Symlink(out, filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(nil, "hooks", "list", "--hooks-dir", dir)
	if code != 0 || strings.Contains(stdout, "bin/tool") {
		t.Fatalf("exit %d, stdout %q; want 0 and no bin/tool", code, stdout)
	}
	if !strings.Contains(stderr, "warning: skipping bin: symlink to "+out+", outside the hooks folder") ||
		!strings.Contains(stderr, "--hooks-allow-external-symlinks") {
		t.Errorf("stderr %q lacks the warning naming bin, %s and the flag", stderr, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("hooks list ran the program behind the link with --config")
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{nil, []string{"--hooks-allow-external-symlinks"}},
		{map[string]string{hooks.EnvAllowExternalSymlinks: "true"}, nil},
	} {
		code, stdout, stderr := run(tc.env, append([]string{"hooks", "list", "--hooks-dir", dir}, tc.args...)...)
		if code != 0 || !strings.Contains(stdout, "bin/tool") || strings.Contains(stderr, "outside") {
			t.Errorf("%v %v: exit %d, stdout %q, stderr %q; want bin/tool listed, no warning", tc.env, tc.args, code, stdout, stderr)
		}
	}
}
