// Tests of the bash helpers in hooks/lib: small scripts source hook.sh, read
// a fake binding context file, and the operations they write must parse
// with the runtime's own parser.
package lib_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/ops"
)

// result is what one script did.
type result struct {
	stdout, stderr, patch string
	err                   error
}

// runScript runs script with bash after sourcing hook.sh, under
// `set -euo pipefail`, with contexts as $BINDING_CONTEXT_PATH.
func runScript(t *testing.T, contexts, script string, args ...string) result {
	t.Helper()
	dir := t.TempDir()
	lib, err := filepath.Abs("hook.sh")
	if err != nil {
		t.Fatal(err)
	}
	contextPath := filepath.Join(dir, "context.json")
	patchPath := filepath.Join(dir, "patch.json")
	if err := os.WriteFile(contextPath, []byte(contexts), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(patchPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	full := "set -euo pipefail\nsource " + lib + "\n" + script
	cmd := exec.Command("bash", append([]string{"-c", full, "hook"}, args...)...)
	cmd.Env = append(os.Environ(), "BINDING_CONTEXT_PATH="+contextPath, "KUBERNETES_PATCH_PATH="+patchPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("script did not finish in 30s:\n%s", script)
	}
	patch, readErr := os.ReadFile(patchPath)
	if readErr != nil {
		t.Fatal(readErr)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), patch: string(patch), err: err}
}

// mustRun runs the script and fails t unless it exits 0.
func mustRun(t *testing.T, contexts, script string, args ...string) result {
	t.Helper()
	r := runScript(t, contexts, script, args...)
	if r.err != nil {
		t.Fatalf("script failed: %v\nstderr:\n%s", r.err, r.stderr)
	}
	return r
}

// lines decodes each line of s as JSON.
func lines(t *testing.T, s string) []any {
	t.Helper()
	var out []any
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l == "" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		out = append(out, v)
	}
	return out
}

// parseOps parses an operations file a helper wrote with the runtime's
// parser, failing t when it refuses the file.
func parseOps(t *testing.T, file string) []ops.Operation {
	t.Helper()
	parsed, err := ops.Parse([]byte(file))
	if err != nil {
		t.Fatalf("ops.Parse: %v\nfile:\n%s", err, file)
	}
	return parsed
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q is not JSON: %v", s, err)
	}
	return v
}

const contexts = `[
 {"binding": "tickets", "type": "Synchronization", "objects": [
   {"object": {"apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {"name": "a", "namespace": "ns"}, "spec": {"number": 1}}},
   {"object": {"apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {"name": "b", "namespace": "ns"}, "spec": {"number": 2}}}]},
 {"binding": "tick", "type": "Schedule", "snapshots": {"tickets": [
   {"object": {"apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {"name": "a", "namespace": "ns"}}, "filterResult": null}]}},
 {"binding": "tickets", "type": "Event", "watchEvent": "Modified",
  "object": {"apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {"name": "a", "namespace": "ns"}, "spec": {"number": 3}}},
 {"binding": "nodes", "type": "Event", "watchEvent": "Added", "filterResult": "n1"},
 {"binding": "tick", "type": "Schedule", "snapshots": {"tickets": [
   {"object": {"apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {"name": "a", "namespace": "ns"}}, "filterResult": 1},
   {"object": {"apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {"name": "b", "namespace": "ns"}}, "filterResult": 2}]}}
]`

func TestConfig(t *testing.T) {
	script := `hook::config "$@" <<'CONFIG'
configVersion: v1
onStartup: 1
CONFIG
echo "handling contexts"`
	r := mustRun(t, contexts, script, "--config")
	if r.stdout != "configVersion: v1\nonStartup: 1\n" {
		t.Errorf("--config printed %q", r.stdout)
	}
	r = mustRun(t, contexts, script)
	if r.stdout != "handling contexts\n" {
		t.Errorf("without --config the hook printed %q", r.stdout)
	}
}

func TestContexts(t *testing.T) {
	r := mustRun(t, contexts, `hook::contexts`)
	if got := len(lines(t, r.stdout)); got != 5 {
		t.Errorf("hook::contexts printed %d lines, want 5:\n%s", got, r.stdout)
	}
}

func TestObjects(t *testing.T) {
	r := mustRun(t, contexts, `hook::objects | jq -c '[.binding, .event, .object.metadata.name, .filterResult]'`)
	want := `["tickets","Synchronization","a",null]
["tickets","Synchronization","b",null]
["tickets","Modified","a",null]
["nodes","Added",null,"n1"]
`
	if r.stdout != want {
		t.Errorf("hook::objects:\n%s\nwant:\n%s", r.stdout, want)
	}

	r = mustRun(t, contexts, `hook::objects nodes | jq -c .event`)
	if r.stdout != "\"Added\"\n" {
		t.Errorf("hook::objects nodes: %q", r.stdout)
	}
}

func TestLatestObjects(t *testing.T) {
	r := mustRun(t, contexts, `hook::latest_objects tickets | jq -c '[.event, .object.metadata.name, .object.spec.number]'`)
	// a first (where it first appeared), but in its last state.
	want := `["Modified","a",3]
["Synchronization","b",2]
`
	if r.stdout != want {
		t.Errorf("hook::latest_objects:\n%s\nwant:\n%s", r.stdout, want)
	}
}

func TestSnapshot(t *testing.T) {
	r := mustRun(t, contexts, `hook::snapshot tickets | jq -c '[.object.metadata.name, .filterResult]'`)
	if want := "[\"a\",1]\n[\"b\",2]\n"; r.stdout != want {
		t.Errorf("hook::snapshot took %q, want the last snapshot %q", r.stdout, want)
	}
	r = mustRun(t, contexts, `hook::snapshots | jq -c '.tickets | map(.filterResult)'`)
	if r.stdout != "[1,2]\n" {
		t.Errorf("hook::snapshots printed %q", r.stdout)
	}
	r = mustRun(t, contexts, `hook::snapshot_object tickets ns b | jq -r .metadata.name; hook::snapshot_object tickets ns zzz`)
	if r.stdout != "b\n" {
		t.Errorf("hook::snapshot_object printed %q", r.stdout)
	}
	r = runScript(t, contexts, `hook::snapshot pods`)
	if r.err == nil || !strings.Contains(r.stderr, "includeSnapshotsFrom") {
		t.Errorf("a snapshot no context carries: err %v, stderr %q", r.err, r.stderr)
	}
}

func TestRead(t *testing.T) {
	r := mustRun(t, contexts, `
f() {
  local a b c d e
  hook::read '{"a": "x y", "b": "", "n": 2, "o": {"k": true}, "m": "l1\nl2"}' '[.a, .b, .n, .o, .m]' a b c d e
  printf '[%s]' "$a" "$b" "$c" "$d" "$e"
}
f
printf '\n%s' "${a:-unset}"`)
	if want := "[x y][][2][{\"k\":true}][l1\nl2]\nunset"; r.stdout != want {
		t.Errorf("hook::read assigned %q, want %q", r.stdout, want)
	}
	r = runScript(t, contexts, `hook::read '{}' '.a' x; echo reached`)
	if r.err == nil || !strings.Contains(r.stderr, "must yield an array") {
		t.Errorf("a filter without an array: err %v, stderr %q", r.err, r.stderr)
	}
}

func TestGet(t *testing.T) {
	r := mustRun(t, contexts, `hook::get '{"a": {"b": "x"}}' .a.b; hook::get '{"n": 2}' '.n + $k' --argjson k 3`)
	if r.stdout != "x\n5\n" {
		t.Errorf("hook::get printed %q", r.stdout)
	}
}

// Every operation helper writes an operation the runtime's parser accepts,
// with the fields the helper was given.
func TestOperationsParse(t *testing.T) {
	script := `
ticket='{"apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {"name": "t1", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"}}'
cm='{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t1-booking", "namespace": "ns"}, "data": {"from": "A"}}'
hook::apply "$cm" "$ticket"
hook::apply --force "$cm"
hook::apply_set bookings "$ticket" "[$cm]"
hook::status flights.com/v1/FlightTicket ns t1 '{"phase": "Booked", "message": null}' observedGeneration
hook::status --ignore-missing FlightTicket ns t1 '{"phase": "Failed"}'
hook::create "$cm"
hook::create_if_not_exists "$(jq -c --argjson refs "$(hook::owner_references "$ticket")" '.metadata.ownerReferences = $refs' <<<"$cm")"
hook::create_or_update "$cm"
hook::merge_patch --ignore-missing --status v1/ConfigMap ns t1-booking '{"status": {"x": 1}}'
hook::merge_patch Namespace "" ns '{"metadata": {"labels": {"a": "b"}}}'
hook::jq_patch ConfigMap ns t1-booking '.data.n = "1"'
hook::delete apps/v1/StatefulSet ns db
hook::delete --background ConfigMap ns t1-booking
hook::delete --orphan ReplicaSet ns rs
hook::requeue ns t1 2s
hook::requeue ns t1 1m tickets
hook::emit '{"operation": "JSONPatch", "kind": "ConfigMap", "namespace": "ns", "name": "c", "jsonPatch": [{"op": "remove", "path": "/data/a"}]}'
`
	r := mustRun(t, contexts, script)
	parsed := parseOps(t, r.patch)
	var types []string
	for _, op := range parsed {
		types = append(types, op.Type)
	}
	wantTypes := []string{
		ops.Apply, ops.Apply, ops.ApplySet, ops.Status, ops.Status,
		ops.Create, ops.CreateIfNotExists, ops.CreateOrUpdate,
		ops.MergePatch, ops.MergePatch, ops.JQPatch,
		ops.Delete, ops.DeleteInBackground, ops.DeleteNonCascading,
		ops.Requeue, ops.Requeue, ops.JSONPatch,
	}
	if !reflect.DeepEqual(types, wantTypes) {
		t.Fatalf("types %v\nwant  %v", types, wantTypes)
	}

	apply := parsed[0]
	if want := (ops.ObjectRef{APIVersion: "flights.com/v1", Kind: "FlightTicket", Namespace: "ns", Name: "t1"}); apply.Parent == nil || *apply.Parent != want {
		t.Errorf("Apply parent %+v, want %+v", apply.Parent, want)
	}
	if apply.Force || !parsed[1].Force || parsed[1].Parent != nil {
		t.Errorf("Apply force/parent: %+v / %+v", apply, parsed[1])
	}
	if set := parsed[2]; set.SetName != "bookings" || len(set.Objects) != 1 || !set.Owner {
		t.Errorf("ApplySet: %+v", set)
	}
	st := parsed[3]
	if st.APIVersion != "flights.com/v1" || st.Kind != "FlightTicket" || st.Namespace != "ns" || st.Name != "t1" ||
		!st.ObservedGeneration || st.IgnoreMissingObject || st.Status["phase"] != "Booked" {
		t.Errorf("Status: %+v", st)
	}
	if _, ok := st.Status["message"]; !ok {
		t.Errorf("Status lost the null that deletes message: %+v", st.Status)
	}
	if st2 := parsed[4]; st2.APIVersion != "" || st2.ObservedGeneration || !st2.IgnoreMissingObject {
		t.Errorf("Status --ignore-missing: %+v", st2)
	}
	refs := parsed[6].Object.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != "u-1" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("owner references: %+v", refs)
	}
	if mp := parsed[8]; mp.Subresource != "status" || !mp.IgnoreMissingObject || mp.APIVersion != "v1" {
		t.Errorf("MergePatch --status --ignore-missing: %+v", mp)
	}
	if mp := parsed[9]; mp.Namespace != "" || mp.Kind != "Namespace" {
		t.Errorf("cluster-scoped MergePatch: %+v", mp)
	}
	if rq := parsed[14]; rq.Namespace != "ns" || rq.Name != "t1" || rq.After != 2*time.Second || rq.Binding != "" {
		t.Errorf("Requeue: %+v", rq)
	}
	if rq := parsed[15]; rq.After != time.Minute || rq.Binding != "tickets" {
		t.Errorf("Requeue with binding: %+v", rq)
	}
}

// Mistakes fail the script with a message and write nothing.
func TestOperationErrors(t *testing.T) {
	for name, script := range map[string]string{
		"object not JSON":       `hook::apply '{"kind": '`,
		"object is an array":    `hook::create '[1]'`,
		"two objects":           `hook::create '{"a":1} {"b":2}'`,
		"missing arguments":     `hook::status FlightTicket ns t1`,
		"bad observedGen":       `hook::status FlightTicket ns t1 '{}' yes`,
		"unknown delete option": `hook::delete --later ConfigMap ns c`,
		"no operation field":    `hook::emit '{"kind": "ConfigMap"}'`,
		"owner without uid":     `hook::owner_references '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}'`,
		"apply_set not array":   `hook::apply_set s '{"apiVersion": "v1", "kind": "ConfigMap", "name": "p"}' '{}'`,
		"no patch path":         `unset KUBERNETES_PATCH_PATH; hook::delete ConfigMap ns c`,
	} {
		t.Run(name, func(t *testing.T) {
			r := runScript(t, contexts, script+"\necho reached")
			if r.err == nil || strings.Contains(r.stdout, "reached") {
				t.Fatalf("the script went on: err %v, stdout %q", r.err, r.stdout)
			}
			if r.patch != "" {
				t.Errorf("wrote %q", r.patch)
			}
			if !strings.Contains(r.stderr, `"level":"error"`) {
				t.Errorf("no error log line on stderr: %q", r.stderr)
			}
		})
	}
}

// Options may stand anywhere among a helper's arguments; "--" ends them.
// The operations are the same as with the options first.
func TestOptionsInAnyOrder(t *testing.T) {
	script := `
hook::merge_patch --status v1/ConfigMap ns c --ignore-missing '{"status": {"x": 1}}'
hook::merge_patch v1/ConfigMap ns c '{"status": {"x": 1}}' --ignore-missing --status
hook::delete ConfigMap ns c --orphan
hook::status FlightTicket ns t1 '{"phase": "Booked"}' --observed-generation 3 --ignore-missing
hook::status --observed-generation=4 FlightTicket ns t1 '{"phase": "Booked"}'
hook::apply_set bookings --no-owner '{"apiVersion": "v1", "kind": "ConfigMap", "name": "p"}' '[]'
hook::jq_patch ConfigMap ns c -- '.data.n = "1"'
`
	r := mustRun(t, contexts, script)
	parsed := parseOps(t, r.patch)
	if len(parsed) != 7 {
		t.Fatalf("%d operations, want 7:\n%s", len(parsed), r.patch)
	}
	for i := range 2 {
		if mp := parsed[i]; mp.Type != ops.MergePatch || mp.Subresource != "status" || !mp.IgnoreMissingObject || mp.Name != "c" {
			t.Errorf("MergePatch %d: %+v", i, mp)
		}
	}
	if d := parsed[2]; d.Type != ops.DeleteNonCascading || d.Name != "c" {
		t.Errorf("Delete --orphan last: %+v", d)
	}
	st := parsed[3]
	if st.Type != ops.Status || !st.IgnoreMissingObject || st.ObservedGeneration || fmt.Sprint(st.Status["observedGeneration"]) != "3" || st.Status["phase"] != "Booked" {
		t.Errorf("Status --observed-generation 3 --ignore-missing: %+v", st)
	}
	if g := parsed[4].Status["observedGeneration"]; fmt.Sprint(g) != "4" {
		t.Errorf("--observed-generation=4: observedGeneration %v", g)
	}
	if set := parsed[5]; set.SetName != "bookings" || set.Owner {
		t.Errorf("ApplySet --no-owner in the middle: %+v", set)
	}
	if jp := parsed[6]; jp.Type != ops.JQPatch || jp.JQFilter.String() != `.data.n = "1"` {
		t.Errorf("JQPatch after --: %+v", jp)
	}
}

// An unknown option, or one without its value, fails the helper with a
// message naming it, instead of being taken for a KIND.
func TestUnknownOptionsRefused(t *testing.T) {
	for script, want := range map[string]string{
		`hook::merge_patch --ignore-mising ConfigMap ns c '{}'`:          "hook::merge_patch: unknown option --ignore-mising; use --ignore-missing or --status or --subresource",
		`hook::create --force '{"apiVersion":"v1","kind":"ConfigMap"}'`:  "hook::create: unknown option --force; it takes no options",
		`hook::status FlightTicket ns t1 '{}' --observed-generation`:     "hook::status: --observed-generation needs a value",
		`hook::status --observed-generation two FlightTicket ns t1 '{}'`: `--observed-generation takes the generation as a whole number, not \"two\"`,
		`hook::delete --background --orphan ConfigMap ns c`:              "--background and --orphan exclude each other",
		`hook::objects --all`:                      "hook::objects: unknown option --all; it takes no options",
		`hook::requeue ns t1 2s --binding tickets`: "hook::requeue: unknown option --binding; use --kind",
		`hook::apply --forse '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}'`: "hook::apply: unknown option --forse; use --force",
	} {
		r := runScript(t, contexts, script+"\necho reached")
		if r.err == nil || strings.Contains(r.stdout, "reached") || r.patch != "" {
			t.Errorf("%s: the script went on (err %v, stdout %q) or wrote %q", script, r.err, r.stdout, r.patch)
		}
		if !strings.Contains(r.stderr, want) {
			t.Errorf("%s: stderr %q lacks %q", script, r.stderr, want)
		}
	}
}

func TestLog(t *testing.T) {
	r := mustRun(t, contexts, `hook::log info "booked" ticket=ns/t1 'note=a=b' ignored; hook::log debug "only a message"`)
	got := lines(t, r.stderr)
	want := []any{
		decode(t, `{"level": "info", "msg": "booked", "ticket": "ns/t1", "note": "a=b"}`),
		decode(t, `{"level": "debug", "msg": "only a message"}`),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("log lines %v, want %v", got, want)
	}
	if r.stdout != "" {
		t.Errorf("hook::log wrote to stdout: %q", r.stdout)
	}

	r = runScript(t, contexts, `hook::die "no booking" ticket=t1; echo reached`)
	if r.err == nil || strings.Contains(r.stdout, "reached") || !strings.Contains(r.stderr, `"msg":"no booking"`) {
		t.Errorf("hook::die: err %v, stdout %q, stderr %q", r.err, r.stdout, r.stderr)
	}
}

// The hello example, written with the helpers, greets each ConfigMap of a
// run that is not deleted, with ignoreMissingObject (it may be deleted later
// in the run), and answers --config without its contexts.
func TestHelloHook(t *testing.T) {
	hello, err := filepath.Abs("../hello/greet-configmaps.sh")
	if err != nil {
		t.Fatal(err)
	}
	contexts := `[{"binding":"hello-configmaps","type":"Synchronization","objects":[
  {"object":{"metadata":{"namespace":"a","name":"x"}},"filterResult":{"name":"world"}},
  {"object":{"metadata":{"namespace":"a","name":"y"}},"filterResult":null}]},
 {"binding":"hello-configmaps","type":"Event","watchEvent":"Deleted","object":{"metadata":{"namespace":"a","name":"y"}},"filterResult":null}]`
	r := mustRun(t, contexts, `bash "$1"`, hello)
	parsed := parseOps(t, r.patch)
	var got []string
	for _, op := range parsed {
		got = append(got, fmt.Sprintf("%s %s/%s %s ignoreMissing=%v", op.Type, op.Namespace, op.Name, op.MergePatch, op.IgnoreMissingObject))
	}
	want := []string{
		`MergePatch a/x {"metadata":{"annotations":{"hook-operator.dev/greeting":"hello, world"}}} ignoreMissing=true`,
		`MergePatch a/y {"metadata":{"annotations":{"hook-operator.dev/greeting":"hello, stranger"}}} ignoreMissing=true`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("operations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	config := mustRun(t, contexts, `bash "$1" --config`, hello)
	if !strings.Contains(config.stdout, "name: hello-configmaps") || config.patch != "" {
		t.Errorf("--config printed %q and wrote %q", config.stdout, config.patch)
	}
}

// Every field of every operation can be written with the functions'
// options: for each operation type, calls that set all the fields it
// accepts (ops' list: the contract's, and the extensions'), whose output
// the runtime's parser takes.
func TestEveryOperationFieldReachable(t *testing.T) {
	cm := `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}`
	parent := `{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "p"}`
	cases := []struct {
		typ, call string
		fields    []string
	}{
		{ops.Create, `hook::create "$cm"`, []string{"object"}},
		{ops.CreateIfNotExists, `hook::create_if_not_exists "$cm"`, []string{"object"}},
		{ops.CreateOrUpdate, `hook::create_or_update "$cm"`, []string{"object"}},
		{ops.Delete, `hook::delete v1/ConfigMap ns c`, []string{"apiVersion", "kind", "namespace", "name"}},
		{ops.DeleteInBackground, `hook::delete --background v1/ConfigMap ns c`, []string{"apiVersion", "kind", "namespace", "name"}},
		{ops.DeleteNonCascading, `hook::delete --orphan v1/ConfigMap ns c`, []string{"apiVersion", "kind", "namespace", "name"}},
		{ops.MergePatch, `hook::merge_patch --ignore-missing --subresource scale apps/v1/Deployment ns d '{"spec": {"replicas": 2}}'`,
			[]string{"apiVersion", "kind", "namespace", "name", "subresource", "mergePatch", "ignoreMissingObject"}},
		{ops.JSONPatch, `hook::json_patch --ignore-missing --status v1/ConfigMap ns c '[{"op": "remove", "path": "/status/a"}]'`,
			[]string{"apiVersion", "kind", "namespace", "name", "subresource", "jsonPatch", "ignoreMissingObject"}},
		{ops.JQPatch, `hook::jq_patch --ignore-missing --subresource status v1/ConfigMap ns c '.status.a = 1'`,
			[]string{"apiVersion", "kind", "namespace", "name", "subresource", "jqFilter", "ignoreMissingObject"}},
		{ops.Apply, `hook::apply --force "$cm" "$parent"`, []string{"object", "force", "parent"}},
		{ops.ApplySet, `hook::apply_set --force --no-owner set "$parent" "[$cm]"`, []string{"name", "parent", "objects", "force", "owner"}},
		{ops.Status, `hook::status --ignore-missing --observed-generation 3 v1/ConfigMap ns c '{"a": 1}' observedGeneration`,
			[]string{"apiVersion", "kind", "namespace", "name", "status", "observedGeneration", "ignoreMissingObject"}},
		{ops.Requeue, `hook::requeue --kind v1/ConfigMap ns c 5s cms`, []string{"apiVersion", "kind", "namespace", "name", "after", "binding"}},
	}
	var covered []string
	for _, c := range cases {
		covered = append(covered, c.typ)
		t.Run(c.typ, func(t *testing.T) {
			r := mustRun(t, contexts, "cm='"+cm+"'\nparent='"+parent+"'\n"+c.call)
			parsed, err := ops.Parse([]byte(r.patch))
			if err != nil || len(parsed) != 1 || parsed[0].Type != c.typ {
				t.Fatalf("%s wrote %q: %v", c.call, r.patch, err)
			}
			var op map[string]any
			if err := json.Unmarshal([]byte(r.patch), &op); err != nil {
				t.Fatal(err)
			}
			for _, f := range c.fields {
				if _, ok := op[f]; !ok {
					t.Errorf("%s: no %q in %s", c.call, f, r.patch)
				}
			}
		})
	}
	if !reflect.DeepEqual(covered, ops.Types) {
		t.Errorf("the cases cover %v, want every type of ops.Types %v", covered, ops.Types)
	}
}

// The subresource options refuse what the runtime would refuse, and two
// different subresources at once.
func TestSubresourceOptions(t *testing.T) {
	for call, want := range map[string]string{
		`hook::merge_patch --status --subresource scale v1/ConfigMap ns c '{}'`: "--status and --subresource scale name two subresources",
		`hook::jq_patch --subresource Status v1/ConfigMap ns c '.'`:             "--subresource takes a lowercase word",
		`hook::json_patch v1/ConfigMap ns c '{"op": "remove"}'`:                 "PATCH must be one JSON array",
	} {
		r := runScript(t, contexts, call)
		if r.err == nil || !strings.Contains(r.stderr, want) || r.patch != "" {
			t.Errorf("%s: err %v, stderr %q, wrote %q; want a failure saying %q and nothing written", call, r.err, r.stderr, r.patch, want)
		}
	}
}
