package memcluster_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/memcluster"
	"github.com/hook-operator/hook-operator/internal/ops"
)

// resolver knows ConfigMaps and Deployments, as replay's stand-in for
// discovery would.
type resolver struct{}

func (resolver) Resolve(apiVersion, kind string) (kube.Resource, error) {
	switch strings.ToLower(kind) {
	case "configmap", "configmaps":
		return kube.Resource{GVR: configMaps, GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true}, nil
	case "deployment", "deployments":
		return kube.Resource{GVR: deployments, GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Namespaced: true}, nil
	}
	return kube.Resource{}, fmt.Errorf("%w: %s %s", kube.ErrUnknownKind, apiVersion, kind)
}

const applierOps = `
- operation: Create
  object:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings, namespace: ns}
    data: {a: "1"}
- operation: MergePatch
  kind: ConfigMap
  namespace: ns
  name: settings
  mergePatch: {data: {b: "2"}}
- operation: Apply
  object:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: ns}
    spec: {replicas: 2}
- operation: Apply
  parent: {kind: Deployment, namespace: ns, name: web}
  object:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: owned, namespace: ns}
- operation: Status
  apiVersion: apps/v1
  kind: Deployment
  namespace: ns
  name: web
  observedGeneration: true
  status: {readyReplicas: 2}
- operation: Delete
  kind: ConfigMap
  namespace: ns
  name: settings
`

func TestApplierRunsAgainstMemory(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	a := &ops.Applier{Dynamic: c, Resolver: resolver{}}
	parsed, err := ops.Parse([]byte(applierOps))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ApplyFor(ctx, "hookname", parsed); err != nil {
		t.Fatal(err)
	}

	if _, held := c.Get(configMaps, "ns", "settings"); held {
		t.Error("settings is held after Delete")
	}
	web := mustGet(t, c, deployments, "ns", "web")
	if fmt.Sprint(web.Object["spec"], web.Object["status"]) != "map[replicas:2] map[observedGeneration:1 readyReplicas:2]" {
		t.Errorf("web: spec %v, status %v", web.Object["spec"], web.Object["status"])
	}
	owned := mustGet(t, c, configMaps, "ns", "owned")
	if refs := owned.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != web.GetUID() {
		t.Errorf("owned's owner references: %v", refs)
	}
	want := strings.Join([]string{
		"Added configmaps ns/settings 1",
		"Modified configmaps ns/settings 2",
		"Added deployments ns/web 3",
		"Added configmaps ns/owned 4",
		"Modified deployments ns/web 5",
		"Deleted configmaps ns/settings 6",
	}, "\n")
	changes := c.TakeChanges()
	if got := describe(changes); got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
	if len(changes) == 6 && fmt.Sprint(changes[1].New.Object["data"]) != "map[a:1 b:2]" {
		t.Errorf("settings after MergePatch: %v", changes[1].New.Object["data"])
	}

	// A Status that changes nothing writes nothing; a foreground Delete
	// (which waits for the object to be gone) takes the owned object first.
	again, err := ops.Parse([]byte(`
- {operation: Status, apiVersion: apps/v1, kind: Deployment, namespace: ns, name: web, status: {readyReplicas: 2}}
- {operation: Delete, kind: Deployment, namespace: ns, name: web}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ApplyFor(ctx, "hookname", again); err != nil {
		t.Fatal(err)
	}
	wantChanges(t, c, "Deleted configmaps ns/owned 7\nDeleted deployments ns/web 8")
}

func TestFinalizerManagerRunsAgainstMemory(t *testing.T) {
	ctx := context.Background()
	c := newCluster(memcluster.Options{})
	cm := configMap("ns", "x", map[string]string{"app": "a"})
	cm.SetFinalizers([]string{"hook-operator.dev/h"})
	mustCreate(t, c, configMaps, cm)
	if err := c.Resource(configMaps).Namespace("ns").Delete(ctx, "x", deleteOptions()); err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.Out = io.Discard
	m := finalizer.New(c, log)
	holders, err := m.Holders(ctx, configMaps, "ns", "app=a", "hook-operator.dev/h")
	if err != nil || len(holders) != 1 {
		t.Fatalf("holders %v, %v", holders, err)
	}
	removed, err := m.Remove(ctx, holders[0])
	if err != nil || !removed {
		t.Fatalf("remove: %v, %v", removed, err)
	}
	if _, held := c.Get(configMaps, "ns", "x"); held {
		t.Error("the object is held after its finalizer was removed")
	}
}
