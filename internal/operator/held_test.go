package operator

import (
	"io"
	"testing"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hook-operator/hook-operator/internal/recorder"
)

// An Event on the operator's Pod names hooks and bindings from the hooks
// folder: their control characters are escaped, as in the log.
func TestPodEventEscapesControlCharacters(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	log := logrus.New()
	log.SetOutput(io.Discard)
	rec := recorder.New(client, log, nil)
	o := &Operator{events: rec}
	o.opts.Pod = PodRef{Name: "operator-0", Namespace: "ns", UID: "uid-3"}
	o.podEvent(HeldReason, "hook a\x1b[2J.sh\nforged line")
	rec.Stop()
	var created *unstructured.Unstructured
	for _, a := range client.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok {
			created = c.GetObject().(*unstructured.Unstructured)
		}
	}
	if created == nil || created.GetNamespace() != "ns" {
		t.Fatalf("the Event on the Pod: %v; want one created in ns", created)
	}
	if msg, _, _ := unstructured.NestedString(created.Object, "message"); msg != `hook a\x1b[2J.sh\nforged line` {
		t.Errorf("message %q; want %q", msg, `hook a\x1b[2J.sh\nforged line`)
	}
}
