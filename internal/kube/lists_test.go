package kube_test

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/kube"
)

func TestMergeResources(t *testing.T) {
	res := func(name, kind string) metav1.APIResource {
		return metav1.APIResource{Name: name, Kind: kind, Verbs: metav1.Verbs{"get"}}
	}
	a := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{res("pods", "Pod"), res("configmaps", "ConfigMap")}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{res("deployments", "Deployment")}},
	}
	b := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{res("pods", "NewPod"), res("secrets", "Secret")}},
		{GroupVersion: "acme.io/v1", APIResources: []metav1.APIResource{res("widgets", "Widget")}},
	}
	got := kube.MergeResources(a, nil, b)
	want := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{res("pods", "NewPod"), res("configmaps", "ConfigMap"), res("secrets", "Secret")}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{res("deployments", "Deployment")}},
		{GroupVersion: "acme.io/v1", APIResources: []metav1.APIResource{res("widgets", "Widget")}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MergeResources =\n%+v\nwant\n%+v", got, want)
	}
	got[0].APIResources[1].Verbs[0] = "changed"
	if a[0].APIResources[1].Verbs[0] != "get" {
		t.Error("the merged lists share memory with the inputs")
	}
	if len(kube.MergeResources()) != 0 {
		t.Error("MergeResources() is not empty")
	}
}
