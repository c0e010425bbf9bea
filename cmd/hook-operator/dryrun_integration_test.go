package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
	"github.com/hook-operator/hook-operator/internal/transcript"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// A dryRunTest is a namespace with two ConfigMaps (cm and gone), a CRD
// whose schema allows spec.number 1..10, and a hooks folder with change.sh.
type dryRunTest struct {
	c     *testcluster.Cluster
	ns    string
	hooks string
	crd   schema.GroupVersionResource
}

// dryRunSetup makes a dryRunTest whose hook, on Synchronization, patches
// one ConfigMap, creates another, deletes the second, and creates a custom
// resource with number 11 (the schema refuses it).
func dryRunSetup(t *testing.T) *dryRunTest {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	crd := c.InstallCRD(t, testcluster.CRD{Kind: "Ticket", Schema: map[string]any{
		"type": "object",
		"properties": map[string]any{"spec": map[string]any{
			"type":       "object",
			"properties": map[string]any{"number": map[string]any{"type": "integer", "minimum": 1, "maximum": 10}},
		}},
	}})
	for _, name := range []string{"cm", "gone"} {
		createConfigMap(t, c, ns, name, nil, map[string]string{"a": "1"})
	}
	hooksDir := t.TempDir()
	writeHook(t, hooksDir, "change.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+ns+`"]}},"executeHookOnEvent":[]}]}`, `cat >> "$KUBERNETES_PATCH_PATH" <<'EOF'
{"operation":"MergePatch","kind":"ConfigMap","namespace":"`+ns+`","name":"cm","mergePatch":{"data":{"a":"2"}}}
{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new","namespace":"`+ns+`"},"data":{"b":"1"}}}
{"operation":"Delete","kind":"ConfigMap","namespace":"`+ns+`","name":"gone"}
{"operation":"Create","object":{"apiVersion":"`+crd.Group+`/v1","kind":"Ticket","metadata":{"name":"t","namespace":"`+ns+`"},"spec":{"number":11}}}
EOF
`))
	return &dryRunTest{c: c, ns: ns, hooks: hooksDir, crd: crd}
}

// run starts `start --dry-run=mode` on the hooks folder and returns the
// first run it prints; it fails t if the dry run changed a ConfigMap of
// the namespace or created a Ticket.
func (d *dryRunTest) run(t *testing.T, mode string) transcript.Run {
	t.Helper()
	before := resourceVersions(t, d.c, d.ns)
	run := firstRun(t, d.c.Kubeconfig, d.hooks, mode)
	assertUnchanged(t, d.c, d.ns, d.crd, before)
	return run
}

// firstRun starts `start --dry-run=mode` and returns the first run it
// prints, then stops it. Logs must not reach stdout.
func firstRun(t *testing.T, kubeconfig, hooksDir, mode string) transcript.Run {
	t.Helper()
	cmd := exec.Command(testoperator.Binary(t), "start", "--hooks-dir", hooksDir, "--kubeconfig", kubeconfig, "--dry-run="+mode, "-o", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatalf("no run printed:\n%s", stderr.String())
		}
		var run transcript.Run
		if err := json.Unmarshal([]byte(line), &run); err != nil {
			t.Fatalf("stdout line is not a run: %v\n%s", err, line)
		}
		return run
	case <-time.After(60 * time.Second):
		t.Fatalf("no run printed within 60s:\n%s", stderr.String())
	}
	return transcript.Run{}
}

func resourceVersions(t *testing.T, c *testcluster.Cluster, ns string) map[string]string {
	t.Helper()
	list, err := c.Dynamic.Resource(configMapsGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	must(t, err)
	out := map[string]string{}
	for _, o := range list.Items {
		out[o.GetName()] = o.GetResourceVersion()
	}
	return out
}

func assertUnchanged(t *testing.T, c *testcluster.Cluster, ns string, crd schema.GroupVersionResource, before map[string]string) {
	t.Helper()
	after := resourceVersions(t, c, ns)
	for name, rv := range before {
		if after[name] != rv {
			t.Errorf("ConfigMap %s changed: resourceVersion %s, was %s", name, after[name], rv)
		}
	}
	if len(after) != len(before) {
		t.Errorf("ConfigMaps after the dry-run: %v, before: %v", after, before)
	}
	list, err := c.Dynamic.Resource(crd).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	must(t, err)
	if len(list.Items) != 0 {
		t.Errorf("the dry-run created %d Tickets", len(list.Items))
	}
}

func change(run transcript.Run, action, object string) (transcript.Change, bool) {
	for _, c := range run.Changes {
		if c.Action == action && strings.HasSuffix(c.Object, object) {
			return c, true
		}
	}
	return transcript.Change{}, false
}

// --dry-run (client): the run is printed with its contexts, operations and
// diffs against the live objects, and the cluster is left as it was.
func TestIntegrationDryRunClient(t *testing.T) {
	t.Parallel()
	d := dryRunSetup(t)
	ns := d.ns
	run := d.run(t, "client")

	if run.Hook != "change.sh" || run.Binding != "cms" || run.Error != "" {
		t.Errorf("run: hook %q binding %q error %q", run.Hook, run.Binding, run.Error)
	}
	ctxs, _ := run.Contexts.([]any)
	if js := mustJSON(t, ctxs); len(ctxs) != 1 || !strings.Contains(js, `"type":"Synchronization"`) || !strings.Contains(js, `"name":"cm"`) || !strings.Contains(js, `"name":"gone"`) {
		t.Errorf("contexts: %s", mustJSON(t, run.Contexts))
	}
	if len(run.Operations) != 4 {
		t.Errorf("operations: %d, want the 4 the hook wrote", len(run.Operations))
	}
	if ch, ok := change(run, "Updated", "ConfigMap "+ns+"/cm"); !ok || !strings.Contains(ch.Diff, `-  a: "1"`) || !strings.Contains(ch.Diff, `+  a: "2"`) {
		t.Errorf("no diff of cm's patch: %+v", run.Changes)
	}
	if _, ok := change(run, "Created", "ConfigMap "+ns+"/new"); !ok {
		t.Errorf("no Created change for new: %+v", run.Changes)
	}
	if _, ok := change(run, "Deleted", "ConfigMap "+ns+"/gone"); !ok {
		t.Errorf("no Deleted change for gone: %+v", run.Changes)
	}
}

// --dry-run=server: writes go to the API server with dryRun=All; its
// answers are printed, including the schema's refusal of number 11.
func TestIntegrationDryRunServer(t *testing.T) {
	t.Parallel()
	d := dryRunSetup(t)
	ns := d.ns
	run := d.run(t, "server")

	ch, ok := change(run, "Patch", "ConfigMap "+ns+"/cm")
	if !ok || !strings.Contains(mustJSON(t, ch.Result), `"a":"2"`) || !strings.Contains(ch.Diff, `+  a: "2"`) {
		t.Errorf("the patch's answer is missing or wrong: %+v", run.Changes)
	}
	if _, ok := change(run, "Delete", "ConfigMap "+ns+"/gone"); !ok {
		t.Errorf("no Delete answer: %+v", run.Changes)
	}
	refused, ok := change(run, "Create", "Ticket "+ns+"/t")
	if !ok || !strings.Contains(refused.Error, "spec.number") {
		t.Errorf("the schema's refusal of spec.number is not reported: %+v", run.Changes)
	}
	if !strings.Contains(run.Error, "spec.number") || !strings.Contains(run.Error, "operation 3") {
		t.Errorf("run error %q does not name operation 3 and spec.number", run.Error)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	must(t, err)
	return string(data)
}
