package sdk_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/sdk"
)

// printJSON prints v as indented JSON, as the examples show it.
func printJSON(v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(string(data))
}

// printLine prints v as one line of JSON, as Run writes operations.
func printLine(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(string(data))
}

// A whole hook: it watches ConfigMaps labelled greet=true and annotates
// each with a greeting. Build it with go build, put the binary in the hooks
// folder, and hook-operator runs it like any other hook.
func Example_hook() {
	config := sdk.Config{
		Kubernetes: []sdk.KubernetesBinding{{
			Name:          "configmaps",
			APIVersion:    "v1",
			Kind:          "ConfigMap",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"greet": "true"}},
			JQFilter:      ".data.name",
		}},
	}
	greet := func(ctx *sdk.Context) error {
		for _, c := range ctx.Contexts {
			// A Synchronization lists every object; an Event brings one.
			objects := c.Objects
			if c.Type == sdk.TypeEvent && c.WatchEvent != sdk.EventDeleted {
				objects = []sdk.ObjectAndFilter{{Object: c.Object, FilterResult: c.FilterResult}}
			}
			for _, o := range objects {
				var name string
				if err := o.DecodeFilterResult(&name); err != nil {
					return err
				}
				ctx.Log.Info("greeting", "configmap", o.Object.GetName(), "name", name)
				// The ConfigMap may be gone by the time the patch is applied.
				ctx.Emit(sdk.MergePatch(o.Object.Ref(), map[string]any{
					"metadata": map[string]any{"annotations": map[string]any{"greeting": "hello, " + name}},
				}).WithIgnoreMissingObject())
			}
		}
		return nil
	}
	// In the hook's main function:
	sdk.Run(config, greet)
}

// A configuration declared in Go, as `<hook> --config` prints it. Only what
// is set is printed; the runtime fills in the defaults.
func ExampleConfig() {
	cfg := sdk.Config{
		OnStartup: sdk.Ptr(10),
		Schedule: []sdk.ScheduleBinding{{
			Name:                 "every-5-minutes",
			Crontab:              "*/5 * * * *",
			IncludeSnapshotsFrom: []string{"pods"},
		}},
		Kubernetes: []sdk.KubernetesBinding{{
			Name:               "pods",
			APIVersion:         "v1",
			Kind:               "Pod",
			ExecuteHookOnEvent: sdk.OnEvents(sdk.EventAdded, sdk.EventDeleted),
			LabelSelector:      &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Namespace:          &sdk.NamespaceSelector{NameSelector: &sdk.NameSelector{MatchNames: []string{"shop"}}},
			JQFilter:           ".status.phase",
		}, {
			Name:                    "nodes",
			Kind:                    "Node",
			ExecuteHookOnEvent:      sdk.OnEvents(), // snapshot only
			KeepFullObjectsInMemory: sdk.Ptr(false),
			JQFilter:                ".metadata.name",
			ResynchronizationPeriod: 10 * time.Minute,
		}},
		Settings: &sdk.Settings{ExecutionMinInterval: 5 * time.Second, ExecutionBurst: 3},
	}
	printJSON(cfg)
	// Output:
	// {
	//   "configVersion": "v1",
	//   "onStartup": 10,
	//   "schedule": [
	//     {
	//       "name": "every-5-minutes",
	//       "crontab": "*/5 * * * *",
	//       "includeSnapshotsFrom": [
	//         "pods"
	//       ]
	//     }
	//   ],
	//   "kubernetes": [
	//     {
	//       "name": "pods",
	//       "apiVersion": "v1",
	//       "kind": "Pod",
	//       "executeHookOnEvent": [
	//         "Added",
	//         "Deleted"
	//       ],
	//       "labelSelector": {
	//         "matchLabels": {
	//           "app": "web"
	//         }
	//       },
	//       "namespace": {
	//         "nameSelector": {
	//           "matchNames": [
	//             "shop"
	//           ]
	//         }
	//       },
	//       "jqFilter": ".status.phase"
	//     },
	//     {
	//       "name": "nodes",
	//       "kind": "Node",
	//       "executeHookOnEvent": [],
	//       "keepFullObjectsInMemory": false,
	//       "jqFilter": ".metadata.name",
	//       "resynchronizationPeriod": "10m"
	//     }
	//   ],
	//   "settings": {
	//     "executionMinInterval": "5s",
	//     "executionBurst": 3
	//   }
	// }
}

// The three create operations take the whole object: here a typed struct,
// with its TypeMeta set so that the runtime knows the kind.
func ExampleCreateOrUpdate() {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "app"},
		Data:       map[string]string{"mode": "fast"},
	}
	printLine(sdk.Create(cm))
	printLine(sdk.CreateIfNotExists(cm))
	printLine(sdk.CreateOrUpdate(cm))
	// Output:
	// {"operation":"Create","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","namespace":"app"},"data":{"mode":"fast"}}}
	// {"operation":"CreateIfNotExists","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","namespace":"app"},"data":{"mode":"fast"}}}
	// {"operation":"CreateOrUpdate","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","namespace":"app"},"data":{"mode":"fast"}}}
}

// The deletes name their object with a Ref.
func ExampleDelete() {
	web := sdk.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "app", Name: "web"}
	printLine(sdk.Delete(web))
	printLine(sdk.DeleteInBackground(sdk.Ref{Kind: "Job", Namespace: "app", Name: "migrate"}))
	printLine(sdk.DeleteNonCascading(sdk.Ref{Kind: "ReplicaSet", Namespace: "app", Name: "web-5d9c7"}))
	// Output:
	// {"operation":"Delete","apiVersion":"apps/v1","kind":"Deployment","namespace":"app","name":"web"}
	// {"operation":"DeleteInBackground","kind":"Job","namespace":"app","name":"migrate"}
	// {"operation":"DeleteNonCascading","kind":"ReplicaSet","namespace":"app","name":"web-5d9c7"}
}

// The three patches; a nil value in a merge patch deletes the key.
func ExampleMergePatch() {
	settings := sdk.Ref{Kind: "ConfigMap", Namespace: "app", Name: "settings"}
	printLine(sdk.MergePatch(settings, map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"checked": "true"}},
		"data":     map[string]any{"obsolete": nil},
	}))
	printLine(sdk.JSONPatch(sdk.Ref{Kind: "Deployment", Namespace: "app", Name: "web"},
		sdk.JSONPatchStep{Op: "test", Path: "/spec/replicas", Value: 2},
		sdk.JSONPatchStep{Op: "replace", Path: "/spec/replicas", Value: 3},
	))
	printLine(sdk.JQPatch(sdk.Ref{Kind: "ConfigMap", Namespace: "app", Name: "counter"},
		`.data.count = ((.data.count // "0" | tonumber) + 1 | tostring)`).WithIgnoreMissingObject())
	printLine(sdk.MergePatch(sdk.Ref{APIVersion: "example.com/v1", Kind: "Widget", Namespace: "app", Name: "w1"},
		map[string]any{"status": map[string]any{"phase": "Ready"}}).WithSubresource("status"))
	// Output:
	// {"operation":"MergePatch","kind":"ConfigMap","namespace":"app","name":"settings","mergePatch":{"data":{"obsolete":null},"metadata":{"labels":{"checked":"true"}}}}
	// {"operation":"JSONPatch","kind":"Deployment","namespace":"app","name":"web","jsonPatch":[{"op":"test","path":"/spec/replicas","value":2},{"op":"replace","path":"/spec/replicas","value":3}]}
	// {"operation":"JQPatch","kind":"ConfigMap","namespace":"app","name":"counter","jqFilter":".data.count = ((.data.count // \"0\" | tonumber) + 1 | tostring)","ignoreMissingObject":true}
	// {"operation":"MergePatch","apiVersion":"example.com/v1","kind":"Widget","namespace":"app","name":"w1","subresource":"status","mergePatch":{"status":{"phase":"Ready"}}}
}

// Apply writes an object with server-side apply; with a parent it gets a
// controller owner reference, so it is deleted with the parent.
func ExampleApply() {
	db := sdk.Ref{APIVersion: "example.com/v1", Kind: "Database", Namespace: "app", Name: "db1"}
	svc := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "db1", "namespace": "app"},
		"spec":     map[string]any{"selector": map[string]any{"app": "db1"}, "ports": []any{map[string]any{"port": 5432}}},
	}
	printLine(sdk.Apply(svc).WithParent(db))
	printLine(sdk.Apply(svc).WithForce())
	// Output:
	// {"operation":"Apply","parent":{"apiVersion":"example.com/v1","kind":"Database","namespace":"app","name":"db1"},"object":{"apiVersion":"v1","kind":"Service","metadata":{"name":"db1","namespace":"app"},"spec":{"ports":[{"port":5432}],"selector":{"app":"db1"}}}}
	// {"operation":"Apply","object":{"apiVersion":"v1","kind":"Service","metadata":{"name":"db1","namespace":"app"},"spec":{"ports":[{"port":5432}],"selector":{"app":"db1"}}},"force":true}
}

// ApplySet makes a parent's set of children exactly the objects given;
// with none, the set's objects are all deleted.
func ExampleApplySet() {
	db := sdk.Ref{APIVersion: "example.com/v1", Kind: "Database", Namespace: "app", Name: "db1"}
	config := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "db1-config", "namespace": "app"},
		"data":     map[string]any{"size": "3"},
	}
	printLine(sdk.ApplySet(db, "workload", config))
	printLine(sdk.ApplySet(db, "workload").WithoutOwner())
	// Output:
	// {"operation":"ApplySet","name":"workload","parent":{"apiVersion":"example.com/v1","kind":"Database","namespace":"app","name":"db1"},"objects":[{"apiVersion":"v1","data":{"size":"3"},"kind":"ConfigMap","metadata":{"name":"db1-config","namespace":"app"}}]}
	// {"operation":"ApplySet","name":"workload","parent":{"apiVersion":"example.com/v1","kind":"Database","namespace":"app","name":"db1"},"objects":[],"owner":false}
}

// Status merges into .status and writes only when that changes something,
// so a hook may report status on every run.
func ExampleStatus() {
	db := sdk.Ref{APIVersion: "example.com/v1", Kind: "Database", Namespace: "app", Name: "db1"}
	printLine(sdk.Status(db, map[string]any{"phase": "Ready", "replicas": 3, "message": nil}).WithObservedGeneration())
	// Output:
	// {"operation":"Status","apiVersion":"example.com/v1","kind":"Database","namespace":"app","name":"db1","status":{"message":null,"phase":"Ready","replicas":3},"observedGeneration":true}
}

// Requeue runs the hook again for an object later.
func ExampleRequeue() {
	db := sdk.Ref{Kind: "Database", Namespace: "app", Name: "db1"}
	printLine(sdk.Requeue(db, 90*time.Second).ForBinding("databases"))
	// Output:
	// {"operation":"Requeue","kind":"Database","namespace":"app","name":"db1","after":"1m30s","binding":"databases"}
}

// DecodeSnapshot turns the objects of a snapshot into typed structs;
// DecodeSnapshotFilterResults does the same for jqFilter results.
func ExampleDecodeSnapshot() {
	var contexts []sdk.BindingContext
	err := json.Unmarshal([]byte(`[{
	  "binding": "deployments", "type": "Group", "groupName": "web",
	  "snapshots": {
	    "deployments": [
	      {"object": {"apiVersion": "apps/v1", "kind": "Deployment",
	                  "metadata": {"name": "web", "namespace": "app"},
	                  "spec": {"replicas": 3}}}
	    ],
	    "pods": [
	      {"filterResult": {"name": "web-1", "phase": "Running"}},
	      {"filterResult": {"name": "web-2", "phase": "Pending"}}
	    ]
	  }
	}]`), &contexts)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := contexts[0]

	deployments, err := sdk.DecodeSnapshot[appsv1.Deployment](c, "deployments")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range deployments {
		fmt.Printf("deployment %s/%s: %d replicas\n", d.Namespace, d.Name, *d.Spec.Replicas)
	}

	type pod struct{ Name, Phase string }
	pods, err := sdk.DecodeSnapshotFilterResults[pod](c, "pods")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range pods {
		fmt.Printf("pod %s: %s\n", p.Name, p.Phase)
	}

	_, err = sdk.DecodeSnapshot[corev1.Node](c, "nodes")
	fmt.Println(err)
	// Output:
	// deployment app/web: 3 replicas
	// pod web-1: Running
	// pod web-2: Pending
	// the context of binding "deployments" carries no snapshot "nodes" (it has "deployments", "pods"); add "nodes" to the binding's includeSnapshotsFrom, or put both bindings in one group
}

// Handle is Run without the process: here it runs a handler on a binding
// context file, as the runtime would, and the operations land in the patch
// file, one JSON object per line.
func ExampleHandle() {
	dir, err := os.MkdirTemp("", "sdk-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	contextPath := filepath.Join(dir, "contexts.json")
	patchPath := filepath.Join(dir, "operations.json")
	_ = os.WriteFile(contextPath, []byte(`[{"binding": "configmaps", "type": "Event", "watchEvent": "Added",
	  "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hello", "namespace": "default"}, "data": {"name": "world"}}}]`), 0o600)
	env := map[string]string{"BINDING_CONTEXT_PATH": contextPath, "KUBERNETES_PATCH_PATH": patchPath}

	greet := func(ctx *sdk.Context) error {
		for _, c := range ctx.Contexts {
			if c.Type != sdk.TypeEvent || c.WatchEvent == sdk.EventDeleted {
				continue
			}
			var cm corev1.ConfigMap
			if err := c.DecodeObject(&cm); err != nil {
				return err
			}
			ctx.Emit(sdk.MergePatch(c.Object.Ref(), map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{"greeting": "hello, " + cm.Data["name"]}},
			}))
		}
		return nil
	}
	code := sdk.Handle(sdk.Config{}, greet, nil, func(k string) string { return env[k] }, os.Stdout, os.Stderr)
	written, _ := os.ReadFile(patchPath)
	fmt.Printf("exit %d\n%s", code, written)
	// Output:
	// exit 0
	// {"operation":"MergePatch","apiVersion":"v1","kind":"ConfigMap","namespace":"default","name":"hello","mergePatch":{"metadata":{"annotations":{"greeting":"hello, world"}}}}
}
