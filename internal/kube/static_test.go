package kube_test

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/kube"
)

// A resolution is what Resolve(apiVersion, kind) should return: the
// resource, its kind and whether it is namespaced.
type resolution struct {
	apiVersion, kind string
	wantGVR          string
	wantKind         string
	namespaced       bool
}

// checkResolutions resolves each of want with r and reports every
// resolution that differs or fails.
func checkResolutions(t *testing.T, r *kube.Resolver, want []resolution) {
	t.Helper()
	for _, tt := range want {
		res, err := r.Resolve(tt.apiVersion, tt.kind)
		if err != nil {
			t.Errorf("Resolve(%q, %q): %v", tt.apiVersion, tt.kind, err)
			continue
		}
		if res.GVR.String() != tt.wantGVR || res.GVK.Kind != tt.wantKind || res.Namespaced != tt.namespaced {
			t.Errorf("Resolve(%q, %q) = %s kind %s namespaced %v; want %s %s %v",
				tt.apiVersion, tt.kind, res.GVR, res.GVK.Kind, res.Namespaced, tt.wantGVR, tt.wantKind, tt.namespaced)
		}
	}
}

func TestStaticResolverBuiltins(t *testing.T) {
	checkResolutions(t, kube.NewStaticResolver(kube.BuiltinResources()), []resolution{
		{"", "Pod", "/v1, Resource=pods", "Pod", true},
		{"", "pods", "/v1, Resource=pods", "Pod", true},
		{"", "pod", "/v1, Resource=pods", "Pod", true},
		{"", "po", "/v1, Resource=pods", "Pod", true},
		{"v1", "Pod", "/v1, Resource=pods", "Pod", true},
		{"", "ConfigMap", "/v1, Resource=configmaps", "ConfigMap", true},
		{"", "CONFIGMAP", "/v1, Resource=configmaps", "ConfigMap", true},
		{"", "cm", "/v1, Resource=configmaps", "ConfigMap", true},
		{"v1", "cm", "/v1, Resource=configmaps", "ConfigMap", true},
		{"", "deploy", "apps/v1, Resource=deployments", "Deployment", true},
		{"", "Deployment", "apps/v1, Resource=deployments", "Deployment", true},
		{"apps/v1", "Deployment", "apps/v1, Resource=deployments", "Deployment", true},
		{"apps/v1", "deploy", "apps/v1, Resource=deployments", "Deployment", true},
		{"", "Namespace", "/v1, Resource=namespaces", "Namespace", false},
		{"v1", "ns", "/v1, Resource=namespaces", "Namespace", false},
		{"", "ClusterRole", "rbac.authorization.k8s.io/v1, Resource=clusterroles", "ClusterRole", false},
		// Ambiguous names go to the core group, as on a live cluster.
		{"", "Event", "/v1, Resource=events", "Event", true},
		{"", "ev", "/v1, Resource=events", "Event", true},
		{"events.k8s.io/v1", "Event", "events.k8s.io/v1, Resource=events", "Event", true},
		// The preferred version of a group with two is the higher one.
		{"", "hpa", "autoscaling/v2, Resource=horizontalpodautoscalers", "HorizontalPodAutoscaler", true},
		{"autoscaling/v1", "HorizontalPodAutoscaler", "autoscaling/v1, Resource=horizontalpodautoscalers", "HorizontalPodAutoscaler", true},
	})
}

func TestStaticResolverUnknownKind(t *testing.T) {
	r := kube.NewStaticResolver(kube.BuiltinResources())
	start := time.Now()
	for _, k := range [][2]string{{"", "NoSuchKind"}, {"apps/v1", "Pod"}, {"nosuch.example.com/v1", "Pod"}, {"", "FlightTicket"}} {
		for range 3 {
			if _, err := r.Resolve(k[0], k[1]); !errors.Is(err, kube.ErrUnknownKind) {
				t.Errorf("Resolve(%q, %q): want ErrUnknownKind, got %v", k[0], k[1], err)
			}
		}
		r.Refresh()
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("unknown kinds took %v; a static resolver must not wait or retry", d)
	}
}

func TestStaticResolverEmpty(t *testing.T) {
	for _, lists := range [][]*metav1.APIResourceList{nil, {}} {
		if _, err := kube.NewStaticResolver(lists).Resolve("", "Pod"); !errors.Is(err, kube.ErrUnknownKind) {
			t.Errorf("no resources: want ErrUnknownKind, got %v", err)
		}
	}
}

func TestStaticResolverPreferredVersion(t *testing.T) {
	widget := func(gv string) *metav1.APIResourceList {
		return &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{
			{Name: "widgets", SingularName: "widget", Kind: "Widget", Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch"}},
		}}
	}
	// Listed lowest first on purpose: the order must not matter.
	r := kube.NewStaticResolver([]*metav1.APIResourceList{
		widget("acme.io/v1alpha1"), widget("acme.io/v1beta1"), widget("acme.io/v2"), widget("acme.io/v1"),
	})
	for range 5 {
		res, err := r.Resolve("", "Widget")
		if err != nil {
			t.Fatal(err)
		}
		if res.APIVersion() != "acme.io/v2" {
			t.Fatalf("Resolve(Widget) = %s, want the preferred acme.io/v2", res.APIVersion())
		}
	}
	res, err := r.Resolve("acme.io/v1beta1", "widgets")
	if err != nil || res.APIVersion() != "acme.io/v1beta1" {
		t.Errorf("Resolve(acme.io/v1beta1, widgets) = %v, %v", res, err)
	}
}
