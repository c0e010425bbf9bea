package kube_test

import (
	"errors"
	"testing"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

func TestIntegrationResolve(t *testing.T) {
	c := testcluster.Get(t)
	clients, err := kube.NewClients(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	r := clients.Resolver
	checkResolutions(t, r, []resolution{
		{"", "Pod", "/v1, Resource=pods", "Pod", true},
		{"", "pods", "/v1, Resource=pods", "Pod", true},
		{"", "po", "/v1, Resource=pods", "Pod", true},
		{"", "CONFIGMAP", "/v1, Resource=configmaps", "ConfigMap", true},
		{"", "deploy", "apps/v1, Resource=deployments", "Deployment", true},
		{"apps/v1", "Deployment", "apps/v1, Resource=deployments", "Deployment", true},
		{"v1", "Namespace", "/v1, Resource=namespaces", "Namespace", false},
		{"", "ns", "/v1, Resource=namespaces", "Namespace", false},
	})
	if _, err := r.Resolve("", "NoSuchKindAnywhere"); !errors.Is(err, kube.ErrUnknownKind) {
		t.Errorf("unknown kind: want ErrUnknownKind, got %v", err)
	}

	// A CRD installed after the first lookup becomes resolvable.
	if _, err := r.Resolve("", "Gizmo"); !errors.Is(err, kube.ErrUnknownKind) {
		t.Fatalf("Gizmo before its CRD: want ErrUnknownKind, got %v", err)
	}
	gvr := c.InstallCRD(t, testcluster.CRD{Kind: "Gizmo", ShortNames: []string{"gz"}})
	r.Refresh()
	for _, k := range []string{"Gizmo", "gizmos", "gz"} {
		res, err := r.Resolve("", k)
		if err != nil {
			t.Fatalf("Resolve(%q) after the CRD: %v", k, err)
		}
		if res.GVR != gvr || !res.Namespaced {
			t.Errorf("Resolve(%q) = %v, want %v namespaced", k, res.GVR, gvr)
		}
	}
}
