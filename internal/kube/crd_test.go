package kube_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/hook-operator/hook-operator/internal/kube"
)

const flightTicketCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: flighttickets.flights.com
spec:
  group: flights.com
  scope: Namespaced
  names:
    plural: flighttickets
    singular: flightticket
    kind: FlightTicket
    shortNames: [ft]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v1alpha1
    served: false
    storage: false
`

func parseCRD(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestResourcesFromCRD(t *testing.T) {
	lists, err := kube.ResourcesFromCRD(parseCRD(t, flightTicketCRD))
	if err != nil {
		t.Fatal(err)
	}
	verbs := metav1.Verbs{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}
	want := []*metav1.APIResourceList{{
		GroupVersion: "flights.com/v1",
		APIResources: []metav1.APIResource{
			{Name: "flighttickets", SingularName: "flightticket", Namespaced: true, Kind: "FlightTicket", Verbs: verbs, ShortNames: []string{"ft"}},
			{Name: "flighttickets/status", Namespaced: true, Kind: "FlightTicket", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "flighttickets/scale", Namespaced: true, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: metav1.Verbs{"get", "patch", "update"}},
		},
	}}
	if !reflect.DeepEqual(lists, want) {
		t.Errorf("ResourcesFromCRD =\n%+v\nwant\n%+v", lists, want)
	}
}

func TestStaticResolverCRD(t *testing.T) {
	crd, err := kube.ResourcesFromCRD(parseCRD(t, flightTicketCRD))
	if err != nil {
		t.Fatal(err)
	}
	r := kube.NewStaticResolver(kube.MergeResources(kube.BuiltinResources(), crd))
	for _, k := range [][2]string{
		{"", "ft"}, {"", "FlightTicket"}, {"", "flighttickets"}, {"", "flightticket"},
		{"flights.com/v1", "FlightTicket"}, {"flights.com/v1", "ft"},
	} {
		res, err := r.Resolve(k[0], k[1])
		if err != nil {
			t.Errorf("Resolve(%q, %q): %v", k[0], k[1], err)
			continue
		}
		if res.GVR.String() != "flights.com/v1, Resource=flighttickets" || res.GVK.Kind != "FlightTicket" || !res.Namespaced {
			t.Errorf("Resolve(%q, %q) = %s kind %s namespaced %v", k[0], k[1], res.GVR, res.GVK.Kind, res.Namespaced)
		}
	}
	if _, err := r.Resolve("flights.com/v1alpha1", "FlightTicket"); !errors.Is(err, kube.ErrUnknownKind) {
		t.Errorf("unserved version: want ErrUnknownKind, got %v", err)
	}
	if res, err := r.Resolve("", "Pod"); err != nil || res.GVR.Resource != "pods" {
		t.Errorf("Pod next to the CRD: %v, %v", res, err)
	}
}

func TestResourcesFromCRDClusterScoped(t *testing.T) {
	doc := strings.Replace(flightTicketCRD, "scope: Namespaced", "scope: Cluster", 1)
	lists, err := kube.ResourcesFromCRD(parseCRD(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range lists[0].APIResources {
		if r.Namespaced {
			t.Errorf("%s: namespaced in a Cluster-scoped CRD", r.Name)
		}
	}
}

func TestResourcesFromCRDErrors(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"no group", "  group: flights.com\n", "", "spec.group is missing"},
		{"no plural", "    plural: flighttickets\n", "", "spec.names.plural is missing"},
		{"no kind", "    kind: FlightTicket\n", "", "spec.names.kind is missing"},
		{"no versions", "  versions:\n", "  oldVersions:\n", "spec.versions is missing"},
		{"empty versions", "  versions:\n", "  versions: []\n  oldVersions:\n", "spec.versions is missing"},
		{"version without name", "  - name: v1\n", "  - served: true\n", "spec.versions[0].name is missing"},
		{"bad scope", "scope: Namespaced", "scope: Galaxy", `spec.scope is "Galaxy"`},
		{"wrong kind", "kind: CustomResourceDefinition", "kind: ConfigMap", "want an apiextensions.k8s.io/v1 CustomResourceDefinition"},
		{"v1beta1", "apiextensions.k8s.io/v1\n", "apiextensions.k8s.io/v1beta1\n", "want an apiextensions.k8s.io/v1 CustomResourceDefinition"},
	}
	for _, tt := range tests {
		doc := strings.Replace(flightTicketCRD, tt.from, tt.to, 1)
		if doc == flightTicketCRD {
			t.Fatalf("%s: %q is not in the fixture", tt.name, tt.from)
		}
		_, err := kube.ResourcesFromCRD(parseCRD(t, doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		} else if !strings.Contains(err.Error(), "flighttickets.flights.com") {
			t.Errorf("%s: %v does not name the CRD", tt.name, err)
		}
	}
	if _, err := kube.ResourcesFromCRD(nil); err == nil {
		t.Error("nil CRD: no error")
	}
}
