package sdk_test

// These tests feed what the SDK writes to the runtime's own parsers, so the
// two cannot drift apart: operations to ops.Parse, configurations to
// hook.ParseConfig. Only tests may import internal packages; the sdk
// package itself must not.

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/sdk"
)

// everyOperation has each operation type, with and without its options.
func everyOperation() []sdk.Operation {
	cm := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "app"},
		"data":     map[string]any{"mode": "fast"},
	}
	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app"},
		Spec:       appsv1.DeploymentSpec{Replicas: sdk.Ptr(int32(2))},
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "pw", "namespace": "app"},
		"stringData": map[string]any{"password": "s3cr3t"},
	}}
	ref := sdk.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "app", Name: "settings"}
	parent := sdk.Ref{APIVersion: "example.com/v1", Kind: "Database", Namespace: "app", Name: "db1"}
	return []sdk.Operation{
		sdk.Create(cm),
		sdk.CreateIfNotExists(u),
		sdk.CreateOrUpdate(deploy),
		sdk.Delete(ref),
		sdk.DeleteInBackground(sdk.Ref{Kind: "Job", Namespace: "app", Name: "migrate"}),
		sdk.DeleteNonCascading(sdk.Ref{Kind: "Namespace", Name: "old"}),
		sdk.MergePatch(ref, map[string]any{"data": map[string]any{"mode": nil}}),
		sdk.MergePatch(ref, map[string]any{"status": map[string]any{"x": 1}}).WithSubresource("status").WithIgnoreMissingObject(),
		sdk.JSONPatch(ref, sdk.JSONPatchStep{Op: "add", Path: "/data/a", Value: "1"}, sdk.JSONPatchStep{Op: "move", Path: "/data/b", From: "/data/a"}),
		sdk.JSONPatch(ref, sdk.JSONPatchStep{Op: "replace", Path: "/data/x", Value: nil}, sdk.JSONPatchStep{Op: "remove", Path: "/data/y"}),
		sdk.JSONPatch(ref),
		sdk.JQPatch(ref, ".data.x = \"1\"").WithIgnoreMissingObject(),
		sdk.Apply(cm),
		sdk.Apply(deploy).WithParent(parent).WithForce(),
		sdk.ApplySet(parent, "workload", cm, u),
		sdk.ApplySet(parent, "empty").WithoutOwner().WithForce(),
		sdk.Status(parent, map[string]any{"phase": "Ready", "message": nil}),
		sdk.Status(parent, struct {
			Nodes []string `json:"nodes"`
		}{[]string{"a"}}).WithObservedGeneration().WithIgnoreMissingObject(),
		sdk.Requeue(sdk.Ref{Namespace: "app", Name: "db1"}, 30*time.Second),
		sdk.Requeue(parent, 25*time.Hour/25).ForBinding("databases"),
	}
}

// TestOperationsParse writes every kind of operation through Handle, as a
// hook does, and parses the file with the runtime's parser.
func TestOperationsParse(t *testing.T) {
	want := everyOperation()
	data := runHandler(t, func(ctx *sdk.Context) error {
		ctx.Emit(want...)
		return nil
	})
	got, err := ops.Parse(data)
	if err != nil {
		t.Fatalf("ops.Parse refused what the SDK wrote:\n%v\n\nthe file:\n%s", err, data)
	}
	if len(got) != len(want) {
		t.Fatalf("parsed %d operations, want %d", len(got), len(want))
	}
	for i, op := range got {
		w := want[i]
		if op.Type != w.Type {
			t.Errorf("operation %d: type %q, want %q", i, op.Type, w.Type)
		}
		if op.Force != w.Force || op.IgnoreMissingObject != w.IgnoreMissingObject ||
			op.ObservedGeneration != w.ObservedGeneration || op.Subresource != w.Subresource || op.Binding != w.Binding {
			t.Errorf("operation %d (%s): options %+v, want those of %+v", i, op.String(), op, w)
		}
		if w.Type == sdk.OpApplySet {
			if op.Owner != w.Owner || op.SetName != w.SetName || len(op.Objects) != len(w.Objects) {
				t.Errorf("operation %d: ApplySet parsed as owner=%v name=%q %d objects, want %v %q %d",
					i, op.Owner, op.SetName, len(op.Objects), w.Owner, w.SetName, len(w.Objects))
			}
		}
		if w.Parent != nil && (op.Parent == nil || *op.Parent != ops.ObjectRef(*w.Parent)) {
			t.Errorf("operation %d: parent %v, want %v", i, op.Parent, w.Parent)
		}
		if w.Type == sdk.OpRequeue && op.After != w.After {
			t.Errorf("operation %d: after %v, want %v", i, op.After, w.After)
		}
		switch w.Type {
		case sdk.OpCreate, sdk.OpCreateIfNotExists, sdk.OpCreateOrUpdate, sdk.OpApply:
			if op.Object == nil || op.Object.GetKind() == "" || op.Name == "" {
				t.Errorf("operation %d: object %v", i, op.Object)
			}
		default:
			if w.Type != sdk.OpApplySet && (op.Name != w.Target.Name || op.Kind != w.Target.Kind || op.Namespace != w.Target.Namespace) {
				t.Errorf("operation %d: target %s, want %s", i, op.String(), w.Target)
			}
		}
	}
	// Every type of the runtime has a builder here.
	var types []string
	for _, op := range want {
		if !slices.Contains(types, op.Type) {
			types = append(types, op.Type)
		}
	}
	if !reflect.DeepEqual(types, ops.Types) {
		t.Errorf("the SDK builds %v, the runtime knows %v", types, ops.Types)
	}
}

// TestConfigParses prints configurations with --config and validates them
// with the runtime's parser.
func TestConfigParses(t *testing.T) {
	full := sdk.Config{
		OnStartup: sdk.Ptr(5),
		Schedule: []sdk.ScheduleBinding{
			{Crontab: "*/5 * * * *"},
			{Name: "tick", Crontab: "*/30 * * * * *", AllowFailure: true, Queue: "ticks", Group: "g", IncludeSnapshotsFrom: []string{"nodes"}},
		},
		Kubernetes: []sdk.KubernetesBinding{{
			Name:                         "pods",
			APIVersion:                   "v1",
			Kind:                         "Pod",
			ExecuteHookOnEvent:           sdk.OnEvents(sdk.EventAdded, sdk.EventModified),
			ExecuteHookOnSynchronization: sdk.Ptr(false),
			WaitForSynchronization:       sdk.Ptr(false),
			KeepFullObjectsInMemory:      sdk.Ptr(false),
			NameSelector:                 &sdk.NameSelector{MatchNames: []string{"a", "b"}},
			LabelSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"frontend"}},
					{Key: "canary", Operator: metav1.LabelSelectorOpDoesNotExist},
				},
			},
			FieldSelector: &sdk.FieldSelector{MatchExpressions: []sdk.FieldRequirement{
				{Field: "status.phase", Operator: "Equals", Value: "Running"},
				{Field: "spec.nodeName", Operator: "!=", Value: ""},
			}},
			Namespace: &sdk.NamespaceSelector{
				NameSelector:  &sdk.NameSelector{MatchNames: []string{"shop"}},
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"watch": "true"}},
			},
			JQFilter:                ".status.phase",
			AllowFailure:            true,
			Queue:                   "pods",
			IncludeSnapshotsFrom:    []string{"nodes"},
			ResynchronizationPeriod: 90 * time.Minute,
		}, {
			Name:               "nodes",
			Kind:               "Node",
			ExecuteHookOnEvent: sdk.OnEvents(),
			Group:              "g",
		}, {
			Name:                         "dbs",
			APIVersion:                   "example.com/v1",
			Kind:                         "Database",
			Finalizer:                    "example.com/cleanup",
			ExecuteHookOnOwnStatusChange: true,
		}},
		Settings: &sdk.Settings{ExecutionMinInterval: 10 * time.Second, ExecutionBurst: 3, Timeout: 2 * time.Minute},
	}
	sharded := sdk.Config{
		Kubernetes: []sdk.KubernetesBinding{{Kind: "ConfigMap"}},
		Settings:   &sdk.Settings{Parallelism: 4, Sharded: true},
	}
	if st := parseConfig(t, sharded).Settings; st.Parallelism != 4 || !st.Sharded {
		t.Errorf("parallelism and sharded parsed as %+v", st)
	}
	cfg := parseConfig(t, full)
	if cfg.OnStartup == nil || *cfg.OnStartup != 5 || len(cfg.Schedule) != 2 || len(cfg.Kubernetes) != 3 {
		t.Fatalf("parsed %+v", cfg)
	}
	pods, nodes, dbs := cfg.Kubernetes[0], cfg.Kubernetes[1], cfg.Kubernetes[2]
	if !reflect.DeepEqual(pods.ExecuteHookOnEvent, []string{"Added", "Modified"}) || pods.ExecuteHookOnSynchronization ||
		pods.WaitForSynchronization || pods.KeepFullObjectsInMemory || pods.ResynchronizationPeriod != 90*time.Minute ||
		pods.FieldSelector != `status.phase=Running,spec.nodeName!=` || !reflect.DeepEqual(pods.NameSelector, []string{"a", "b"}) ||
		!reflect.DeepEqual(pods.Namespace.Names, []string{"shop"}) || pods.Queue != "pods" || !pods.AllowFailure {
		t.Errorf("pods binding parsed as %+v", pods)
	}
	if nodes.ExecuteHookOnEvent == nil || len(nodes.ExecuteHookOnEvent) != 0 || nodes.Group != "g" {
		t.Errorf("OnEvents() should make a snapshot-only binding, parsed %+v", nodes)
	}
	if !reflect.DeepEqual(dbs.ExecuteHookOnEvent, []string{"Added", "Modified", "Deleted"}) || !dbs.ExecuteHookOnSynchronization ||
		!dbs.KeepFullObjectsInMemory || dbs.Finalizer != "example.com/cleanup" || !dbs.ExecuteHookOnOwnStatusChange {
		t.Errorf("an ExecuteHookOnEvent left nil should mean all events (and other defaults), parsed %+v", dbs)
	}
	if cfg.Settings.ExecutionMinInterval != 10*time.Second || cfg.Settings.ExecutionBurst != 3 || cfg.Settings.Timeout != 2*time.Minute {
		t.Errorf("settings parsed as %+v", cfg.Settings)
	}

	minimal := parseConfig(t, sdk.Config{Kubernetes: []sdk.KubernetesBinding{{Kind: "ConfigMap"}}})
	if b := minimal.Kubernetes[0]; b.Name != "kubernetes" || b.Queue != "main" || len(b.ExecuteHookOnEvent) != 3 {
		t.Errorf("minimal binding parsed as %+v", b)
	}
}

func parseConfig(t *testing.T, cfg sdk.Config) hook.Config {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := sdk.Handle(cfg, nil, []string{"--config"}, noEnv, &stdout, &stderr); code != 0 {
		t.Fatalf("--config exited %d: %s", code, stderr.String())
	}
	parsed, err := hook.ParseConfig("sdk-hook", stdout.Bytes())
	if err != nil {
		t.Fatalf("hook.ParseConfig refused what the SDK printed:\n%v\n\nprinted:\n%s", err, stdout.String())
	}
	return parsed
}

func noEnv(string) string { return "" }

// runHandler runs handler through Handle with empty binding contexts and
// returns what it wrote to the patch file.
func runHandler(t *testing.T, handler sdk.Handler) []byte {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{
		"BINDING_CONTEXT_PATH":  filepath.Join(dir, "contexts.json"),
		"KUBERNETES_PATCH_PATH": filepath.Join(dir, "operations.json"),
	}
	if err := os.WriteFile(env["BINDING_CONTEXT_PATH"], []byte(`[{"binding":"onStartup"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := sdk.Handle(sdk.Config{}, handler, nil, func(k string) string { return env[k] }, &stdout, &stderr); code != 0 {
		t.Fatalf("Handle exited %d: %s", code, stderr.String())
	}
	data, err := os.ReadFile(env["KUBERNETES_PATCH_PATH"])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestResidentConfigParses: the runtime reads the resident settings the
// SDK prints.
func TestResidentConfigParses(t *testing.T) {
	parsed := parseConfig(t, sdk.Config{
		Schedule: []sdk.ScheduleBinding{{Crontab: "@hourly"}},
		Settings: &sdk.Settings{Resident: true, ResidentMaxRuns: 500, ResidentMaxMemory: 256 << 20},
	})
	if s := parsed.Settings; !s.Resident || s.ResidentMaxRuns != 500 || s.ResidentMaxMemory != 256<<20 {
		t.Errorf("the runtime read settings %+v", s)
	}
}

// TestStaleAfterConfigParses: the runtime reads the staleAfter the SDK
// prints, in settings and on a binding.
func TestStaleAfterConfigParses(t *testing.T) {
	parsed := parseConfig(t, sdk.Config{
		Kubernetes: []sdk.KubernetesBinding{{Name: "pods", Kind: "Pod", StaleAfter: 90 * time.Second}, {Name: "nodes", Kind: "Node"}},
		Settings:   &sdk.Settings{StaleAfter: 10 * time.Minute},
	})
	if parsed.Settings.StaleAfter != 10*time.Minute || parsed.Kubernetes[0].StaleAfter != 90*time.Second || parsed.Kubernetes[1].StaleAfter != 0 {
		t.Errorf("the runtime read settings %+v and bindings %+v", parsed.Settings, parsed.Kubernetes)
	}
}
