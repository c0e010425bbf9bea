package watch

import (
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
)

// A binding whose kind is missing from a group/version that is served
// says so, with a did-you-mean (KindMissing, for readiness); one whose
// whole group/version is not served waits quietly, as for a CRD not
// installed yet; both are Unserved.
func TestResolveKindMissingFromServedGroupVersion(t *testing.T) {
	lists := append(kube.BuiltinResources(), &metav1.APIResourceList{GroupVersion: "hello.example.com/v1", APIResources: []metav1.APIResource{
		{Name: "greetings", SingularName: "greeting", Kind: "Greeting", Namespaced: true},
	}})
	log := logrus.New()
	h := &hook.Hook{Name: "greet.sh", Config: hook.Config{Kubernetes: []hook.KubernetesBinding{
		{Common: hook.Common{Name: "typo"}, APIVersion: "hello.example.com/v1", Kind: "Greting"},
		{Common: hook.Common{Name: "later"}, APIVersion: "later.example.com/v1", Kind: "Later"},
		{Common: hook.Common{Name: "right"}, APIVersion: "hello.example.com/v1", Kind: "Greeting"},
	}}}
	w := New(&kube.Clients{Resolver: kube.NewStaticResolver(lists)}, []*hook.Hook{h}, nil, log)
	byName := map[string]*Binding{}
	for _, b := range w.Bindings() {
		byName[b.Name()] = b
		_ = w.resolve(b)
	}
	if got := byName["typo"].KindMissing(); !strings.Contains(got, `did you mean "Greeting"?`) || byName["typo"].Phase() != Unserved {
		t.Errorf("typo: KindMissing %q, phase %s; want the did-you-mean, Unserved", got, byName["typo"].Phase())
	}
	if got := byName["later"].KindMissing(); got != "" || byName["later"].Waiting() == "" || byName["later"].Phase() != Unserved {
		t.Errorf("later: KindMissing %q, Waiting %q, phase %s; want no KindMissing, a Waiting, Unserved", got, byName["later"].Waiting(), byName["later"].Phase())
	}
	if got := byName["right"].KindMissing(); got != "" || byName["right"].Phase() != Listing {
		t.Errorf("right: KindMissing %q, phase %s; want none, Listing", got, byName["right"].Phase())
	}
}
