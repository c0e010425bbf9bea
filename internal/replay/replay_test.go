package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/fixture"
	"github.com/hook-operator/hook-operator/internal/memcluster"
	"github.com/hook-operator/hook-operator/internal/replay"
)

// writeScript writes a bash hook: config on --config, else body.
func writeScript(t *testing.T, dir, name, config, body string) {
	t.Helper()
	script := "#!/usr/bin/env bash\nset -euo pipefail\nif [[ \"${1:-}\" == --config ]]; then cat <<'EOF'\n" + config + "\nEOF\nexit 0\nfi\n" + body + "\n"
	writeFile(t, dir, name, script)
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// runLog is what a replay did: per run, its contexts and changes.
type runLog struct {
	contexts []string
	changes  [][]memcluster.Change
	errs     []error
}

func (l *runLog) line() string { return strings.Join(l.contexts, "\n") }

func replayDir(t *testing.T, dir string, fx *fixture.Fixture, maxRuns int) (*runLog, replay.Summary, error) {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	var l runLog
	sum, err := replay.Run(context.Background(), replay.Options{
		Hooks: loadHooks(t, dir), Fixture: fx, HookTimeout: time.Minute, MaxRuns: maxRuns, Log: log,
		Report: func(r executor.Report, changes []memcluster.Change) {
			var cs []map[string]any
			if err := json.Unmarshal(r.Contexts, &cs); err != nil {
				t.Errorf("contexts: %v", err)
			}
			var parts []string
			for _, c := range cs {
				s := c["binding"].(string)
				if v, ok := c["type"].(string); ok {
					s += ":" + v
				}
				if v, ok := c["watchEvent"].(string); ok {
					s += ":" + v
				}
				if o, ok := c["object"].(map[string]any); ok {
					s += ":" + o["metadata"].(map[string]any)["name"].(string)
				}
				parts = append(parts, s)
			}
			l.contexts = append(l.contexts, strings.Join(parts, ","))
			l.changes = append(l.changes, changes)
			l.errs = append(l.errs, r.Err)
		},
	})
	return &l, sum, err
}

func object(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

const ticketCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"tickets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"tickets","singular":"ticket","kind":"Ticket","shortNames":["tk"]},
"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

func crd(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(ticketCRD), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// A custom kind known from its CRD among the objects, by short name; the
// finalizer option: the finalizer is added, deleting the object runs
// Finalize, and the successful run releases it so the object goes away,
// taking the child it owns along.
func TestFinalizeAndGarbageCollection(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "tickets.sh",
		`{"configVersion":"v1","kubernetes":[{"name":"tickets","kind":"tk","finalizer":"example.com/booking","executeHookOnEvent":["Added","Deleted"]}]}`,
		`jq -c '.[] | select(.type == "Event" and .watchEvent == "Added") | .object
  | {operation: "Apply", parent: {kind: "Ticket", namespace: .metadata.namespace, name: .metadata.name},
     object: {apiVersion: "v1", kind: "ConfigMap", metadata: {name: (.metadata.name + "-booking"), namespace: .metadata.namespace}, data: {ok: "yes"}}}' "$BINDING_CONTEXT_PATH" >> "$KUBERNETES_PATCH_PATH"`)
	fx := &fixture.Fixture{
		Objects: []*unstructured.Unstructured{crd(t)},
		Events: []fixture.Event{
			{Type: "Added", Object: object("example.com/v1", "Ticket", "ns", "t1", nil)},
			{Type: "Deleted", Object: object("example.com/v1", "Ticket", "ns", "t1", nil)},
		},
	}
	l, sum, err := replayDir(t, dir, fx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Adding the finalizer modifies t1: not a run (Modified is not asked
	// for). Once finalized, the object goes, which is a Deleted event, as
	// live.
	want := "tickets:Synchronization\ntickets:Event:Added:t1\ntickets:Event:Finalize:t1\ntickets:Event:Deleted:t1"
	if l.line() != want || sum.Failed != 0 {
		t.Fatalf("runs:\n%s\nwant:\n%s\n(failed %d: %v)", l.line(), want, sum.Failed, l.errs)
	}
	if got := describeChanges(l.changes[1]); got != "Added configmaps ns/t1-booking" {
		t.Errorf("Added run changes: %s", got)
	}
	// The Finalize run's success removes the finalizer: the ticket goes, and
	// garbage collection takes its booking.
	if got := describeChanges(l.changes[2]); got != "Deleted tickets ns/t1; Deleted configmaps ns/t1-booking" {
		t.Errorf("Finalize run changes: %s", got)
	}
}

func describeChanges(cs []memcluster.Change) string {
	var out []string
	for _, c := range cs {
		o := c.New
		if o == nil {
			o = c.Old
		}
		out = append(out, c.Type+" "+c.Resource.Resource+" "+o.GetNamespace()+"/"+o.GetName())
	}
	return strings.Join(out, "; ")
}

// Requeue requests run when a wait event moves the clock past them;
// schedule events fire schedule bindings.
func TestRequeueAndSchedule(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "poll.sh",
		`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","executeHookOnSynchronization":false,"executeHookOnEvent":["Added"]}],
"schedule":[{"name":"nightly","crontab":"0 3 * * *"}]}`,
		`jq -c '.[] | select(.type == "Event") | .object.metadata
  | {operation: "Requeue", namespace: .namespace, name: .name, after: "1m"}' "$BINDING_CONTEXT_PATH" >> "$KUBERNETES_PATCH_PATH"`)
	fx := &fixture.Fixture{Events: []fixture.Event{
		{Type: "Added", Object: object("v1", "ConfigMap", "ns", "a", nil)},
		{Wait: metav1.Duration{Duration: 30 * time.Second}},
		{Schedule: "nightly"},
		{Wait: metav1.Duration{Duration: 2 * time.Minute}},
	}}
	l, _, err := replayDir(t, dir, fx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The Requeue run asks again, due at 2m; the wait of 2m (to 2m30s)
	// runs it once more; that one's request (3m) is not yet due.
	want := "cms:Event:Added:a\nnightly:Schedule\ncms:Event:Requeue:a\ncms:Event:Requeue:a"
	if l.line() != want {
		t.Fatalf("runs:\n%s\nwant:\n%s", l.line(), want)
	}
	if _, _, err := replayDir(t, dir, &fixture.Fixture{Events: []fixture.Event{{Schedule: "weekly"}}}, 0); err == nil || !strings.Contains(err.Error(), `"weekly"`) {
		t.Errorf("unknown schedule: err %v", err)
	}
}

// A hook that keeps changing what it watches is stopped with a clear error.
func TestHotLoopStops(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "loop.sh",
		`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap"}]}`,
		`jq -c '.[] | (.objects // [{object: .object}])[] | .object.metadata
  | {operation: "MergePatch", kind: "ConfigMap", namespace: .namespace, name: .name,
     mergePatch: {metadata: {annotations: {n: ((.annotations.n // "0") | tonumber + 1 | tostring)}}}}' "$BINDING_CONTEXT_PATH" >> "$KUBERNETES_PATCH_PATH"`)
	fx := &fixture.Fixture{Objects: []*unstructured.Unstructured{object("v1", "ConfigMap", "ns", "a", nil)}}
	_, sum, err := replayDir(t, dir, fx, 20)
	if !errors.Is(err, replay.ErrTooManyRuns) || sum.Runs != 20 {
		t.Fatalf("err %v after %d runs, want ErrTooManyRuns after 20", err, sum.Runs)
	}
}

// A binding whose kind is unknown offline receives nothing, as a live one
// waits for its CRD; declared resources make the kind known.
func TestUnknownKind(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "w.sh", `{"configVersion":"v1","kubernetes":[{"name":"w","kind":"Widget"}]}`, `true`)
	l, _, err := replayDir(t, dir, &fixture.Fixture{}, 0)
	if err != nil || l.line() != "" {
		t.Fatalf("unknown kind: err %v, runs %q; want no error and no run", err, l.line())
	}
	fx := &fixture.Fixture{
		Resources: []fixture.Resource{{APIVersion: "example.com/v1", Kind: "Widget", Resource: "widgets", Namespaced: true}},
		Objects:   []*unstructured.Unstructured{object("example.com/v1", "Widget", "ns", "w1", nil)},
	}
	l, _, err = replayDir(t, dir, fx, 0)
	if err != nil || l.line() != "w:Synchronization" {
		t.Fatalf("with resources: err %v, runs %q", err, l.line())
	}
}

// A failed run is reported and not retried; replay goes on.
func TestFailedRunIsReported(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "bad.sh", `{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap"}]}`,
		`echo '{"operation":"Explode"}' >> "$KUBERNETES_PATCH_PATH"`)
	fx := &fixture.Fixture{Events: []fixture.Event{{Type: "Added", Object: object("v1", "ConfigMap", "ns", "a", nil)}}}
	l, sum, err := replayDir(t, dir, fx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Runs != 2 || sum.Failed != 2 || l.errs[1] == nil || !strings.Contains(l.errs[1].Error(), "Explode") {
		t.Fatalf("summary %+v, errors %v", sum, l.errs)
	}
}

// A Finalize run that requeues keeps the finalizer; the object comes back
// as Finalize when a wait makes the requeue due, as live.
func TestFinalizeRequeue(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "snap.sh",
		`{"configVersion":"v1","kubernetes":[{"name":"tickets","kind":"Ticket","finalizer":"example.com/snapshot","executeHookOnSynchronization":false,"executeHookOnEvent":[]}]}`,
		`n=$(cat "$COUNTER" 2>/dev/null || echo 0); echo $((n+1)) > "$COUNTER"
if (( n == 0 )); then
  jq -c '.[] | select(.watchEvent == "Finalize") | .object.metadata | {operation: "Requeue", namespace, name, after: "10s"}' \
    "$BINDING_CONTEXT_PATH" >> "$KUBERNETES_PATCH_PATH"
fi`)
	fx := &fixture.Fixture{
		Objects: []*unstructured.Unstructured{crd(t)},
		Events: []fixture.Event{
			{Type: "Added", Object: object("example.com/v1", "Ticket", "ns", "t1", nil)},
			{Type: "Deleted", Object: object("example.com/v1", "Ticket", "ns", "t1", nil)},
			{Wait: metav1.Duration{Duration: 5 * time.Second}}, // not yet due
		},
	}
	t.Setenv("COUNTER", filepath.Join(t.TempDir(), "count"))
	l, _, err := replayDir(t, dir, fx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.line() != "tickets:Event:Finalize:t1" || len(l.changes[0]) != 0 {
		t.Fatalf("before the requeue is due: runs %q, changes %s", l.line(), describeChanges(l.changes[0]))
	}
	// Due after another wait: the second Finalize run writes nothing, and
	// the finalizer goes with it.
	t.Setenv("COUNTER", filepath.Join(t.TempDir(), "count"))
	fx.Events = append(fx.Events, fixture.Event{Wait: metav1.Duration{Duration: 10 * time.Second}})
	l, _, err = replayDir(t, dir, fx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "tickets:Event:Finalize:t1\ntickets:Event:Finalize:t1"
	if l.line() != want {
		t.Fatalf("runs:\n%s\nwant:\n%s", l.line(), want)
	}
	if got := describeChanges(l.changes[1]); got != "Deleted tickets ns/t1" {
		t.Errorf("the second Finalize run's changes: %s, want the ticket deleted", got)
	}
}

// Admission and conversion events run their hooks as the webhook server
// would: the answer is reported with the run, a denial is an answer (not a
// failure), a mutating patch is reported decoded, operations the hook
// writes besides are applied, and a conversion runs the chain of two
// hooks' rules, each step a run.
func TestReplayAdmissionAndConversion(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "policy.sh", `configVersion: v1
kubernetesValidating:
- name: policy.example.com
  rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]`,
		`if [[ $(jq -r '.[0].review.request.object.data.mode' "$BINDING_CONTEXT_PATH") == bad ]]; then
  echo '{"allowed": false, "message": "mode bad is refused"}' >"$VALIDATING_RESPONSE_PATH"
else
  echo '{"allowed": true, "warnings": ["seen"]}' >"$VALIDATING_RESPONSE_PATH"
  echo '{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "audit", "namespace": "default"}}}' >"$KUBERNETES_PATCH_PATH"
fi`)
	writeScript(t, dir, "alpha.sh", `configVersion: v1
kubernetesCustomResourceConversion:
- name: a1_to_a2
  crdName: crontabs.example.com
  conversions: [{fromVersion: example.com/v1alpha1, toVersion: example.com/v1alpha2}]`,
		`jq '{convertedObjects: [.[0].review.request.objects[] | .apiVersion = "example.com/v1alpha2"]}' "$BINDING_CONTEXT_PATH" >"$CONVERSION_RESPONSE_PATH"`)
	writeScript(t, dir, "stable.sh", `configVersion: v1
kubernetesCustomResourceConversion:
- name: a2_to_v1
  crdName: crontabs.example.com
  conversions: [{fromVersion: v1alpha2, toVersion: v1}]`,
		`jq '{convertedObjects: [.[0].review.request.objects[] | .apiVersion = "example.com/v1"]}' "$BINDING_CONTEXT_PATH" >"$CONVERSION_RESPONSE_PATH"`)
	events := writeEvents(t, `
- admission:
    binding: policy.example.com
    request: {operation: CREATE, object: {apiVersion: v1, kind: ConfigMap, metadata: {name: ok, namespace: default}, data: {mode: good}}}
- admission:
    binding: policy.example.com
    request: {operation: CREATE, object: {apiVersion: v1, kind: ConfigMap, metadata: {name: no, namespace: default}, data: {mode: bad}}}
- conversion:
    crd: crontabs.example.com
    desiredAPIVersion: example.com/v1
    objects: [{apiVersion: example.com/v1alpha1, kind: CronTab, metadata: {name: c, namespace: default}}]
`)
	fx, err := fixture.Read("", events)
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	var answers []string
	var created []string
	sum, err := replay.Run(context.Background(), replay.Options{
		Hooks: loadHooks(t, dir), Fixture: fx, HookTimeout: time.Minute, Log: log,
		Report: func(r executor.Report, changes []memcluster.Change) {
			data, _ := json.Marshal(r.Answer)
			answers = append(answers, r.Hook.Name+" "+string(data))
			for _, c := range changes {
				created = append(created, c.Type+" "+c.New.GetName())
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`policy.sh {"allowed":true,"warnings":["seen"]}`,
		`policy.sh {"allowed":false,"message":"mode bad is refused"}`,
		`alpha.sh {"convertedObjects":[{"apiVersion":"example.com/v1alpha2","kind":"CronTab","metadata":{"name":"c","namespace":"default"}}]}`,
		`stable.sh {"convertedObjects":[{"apiVersion":"example.com/v1","kind":"CronTab","metadata":{"name":"c","namespace":"default"}}]}`,
	}
	if strings.Join(answers, "\n") != strings.Join(want, "\n") {
		t.Errorf("answers:\n%s\nwant:\n%s", strings.Join(answers, "\n"), strings.Join(want, "\n"))
	}
	if len(created) != 1 || created[0] != "Added audit" {
		t.Errorf("changes: %v; want the allowed request's hook to create audit", created)
	}
	if sum.Runs != 4 || sum.Failed != 0 {
		t.Errorf("summary %+v, want 4 runs, none failed", sum)
	}

	_, err = fixture.ReadEvents(writeEvents(t, "- admission: {binding: policy.example.com, request: {object: {}}}\n"))
	if err == nil || !strings.Contains(err.Error(), "no operation: set CREATE, UPDATE, DELETE or CONNECT") {
		t.Errorf("an admission event without operation: %v", err)
	}
	_, err = fixture.ReadEvents(writeEvents(t, "- conversion: {crd: x.example.com, desiredAPIVersion: v1, objects: []}\n"))
	if err == nil || !strings.Contains(err.Error(), "with its group") {
		t.Errorf("a conversion event without the desired version's group: %v", err)
	}
}

func writeEvents(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "events.yaml", content)
	return filepath.Join(dir, "events.yaml")
}

// A hook with settings.parallelism runs one context at a time in replay,
// in the order the events came, and the log says the setting applies to
// start only.
func TestReplayIgnoresParallelism(t *testing.T) {
	dir, lock := t.TempDir(), filepath.Join(t.TempDir(), "running")
	writeScript(t, dir, "par.sh",
		`{"configVersion":"v1","settings":{"parallelism":4,"sharded":true},"kubernetes":[{"name":"cms","kind":"ConfigMap"}]}`,
		`mkdir `+lock+` 2>/dev/null || { echo "another run is in progress" >&2; exit 1; }
sleep 0.05
rmdir `+lock)
	fx := &fixture.Fixture{Events: []fixture.Event{
		{Type: "Added", Object: object("v1", "ConfigMap", "ns", "a", nil)},
		{Type: "Added", Object: object("v1", "ConfigMap", "ns", "b", nil)},
		{Type: "Modified", Object: object("v1", "ConfigMap", "ns", "a", map[string]any{"data": map[string]any{"v": "1"}})},
	}}
	var logs bytes.Buffer
	log := logrus.New()
	log.SetOutput(&logs)
	var runs []string
	sum, err := replay.Run(context.Background(), replay.Options{
		Hooks: loadHooks(t, dir), Fixture: fx, HookTimeout: time.Minute, Log: log, TmpDir: t.TempDir(),
		Report: func(r executor.Report, _ []memcluster.Change) {
			var cs []struct {
				Type, WatchEvent string
				Object           struct{ Metadata struct{ Name string } }
			}
			if err := json.Unmarshal(r.Contexts, &cs); err != nil {
				t.Errorf("contexts: %v", err)
			}
			for _, c := range cs {
				runs = append(runs, strings.TrimSuffix(c.Type+":"+c.WatchEvent+":"+c.Object.Metadata.Name, "::"))
			}
		},
	})
	if err != nil || sum.Failed != 0 {
		t.Fatalf("replay: %v, %d failed runs (runs overlapped?)\n%s", err, sum.Failed, logs.String())
	}
	if want := "Synchronization Event:Added:a Event:Added:b Event:Modified:a"; strings.Join(runs, " ") != want {
		t.Errorf("runs %q, want %q", strings.Join(runs, " "), want)
	}
	if !strings.Contains(logs.String(), "settings.parallelism 4 applies to start only") {
		t.Errorf("the log does not say that parallelism applies to start only:\n%s", logs.String())
	}
	// settings.sharded: every object, as one replica owning them all.
	if !strings.Contains(logs.String(), "settings.sharded applies to start --sharding only") {
		t.Errorf("the log does not say that sharded applies to start --sharding only:\n%s", logs.String())
	}
}

// A resident hook in replay (and so in hook-operator test): one process
// serves every run, its operations are applied, and it is stopped (EOF on
// fd 3) before Run returns.
func TestReplayResidentHook(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	writeScript(t, dir, "res.sh",
		`{"configVersion":"v1","settings":{"resident":true},"kubernetes":[{"name":"cms","kind":"ConfigMap","executeHookOnSynchronization":false}]}`,
		`[[ ${HOOK_OPERATOR_RESIDENT:-} == 1 ]] || { echo "not resident" >&2; exit 1; }
echo $$ >> `+state+`/starts
while IFS= read -r line <&3; do
  [[ $line =~ \"id\":\"([0-9]+)\" ]] && id=${BASH_REMATCH[1]}
  [[ $line =~ \"KUBERNETES_PATCH_PATH\":\"([^\"]+)\" ]] && patch=${BASH_REMATCH[1]}
  echo '{"operation":"CreateIfNotExists","object":{"apiVersion":"v1","kind":"Service","metadata":{"namespace":"ns","name":"seen-'$id'"}}}' > "$patch"
  printf '{"id":"%s","exitCode":0}\n' "$id" >&4
done
echo eof > `+state+`/stopped`)
	fx := &fixture.Fixture{Events: []fixture.Event{
		{Type: "Added", Object: object("v1", "ConfigMap", "ns", "a", nil)},
		{Type: "Added", Object: object("v1", "ConfigMap", "ns", "b", nil)},
	}}
	l, sum, err := replayDir(t, dir, fx, 0)
	if err != nil || sum.Failed != 0 {
		t.Fatalf("replay: %v, %d failed runs: %v", err, sum.Failed, l.errs)
	}
	var created []string
	for _, cs := range l.changes {
		for _, c := range cs {
			created = append(created, c.New.GetName())
		}
	}
	if len(created) == 0 || !strings.HasPrefix(created[0], "seen-") {
		t.Errorf("changes %v, want the Services the resident hook created", created)
	}
	b, _ := os.ReadFile(filepath.Join(state, "starts"))
	if n := len(strings.Fields(string(b))); n != 1 {
		t.Errorf("%d runs started the hook %d times, want once", len(l.contexts), n)
	}
	if _, err := os.Stat(filepath.Join(state, "stopped")); err != nil {
		t.Errorf("the resident process was not stopped by EOF on fd 3 before Run returned: %v", err)
	}
}
