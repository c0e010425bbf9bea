package recorder

import (
	"context"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// The API server takes the recorder's Events and patches as client-go's
// recorder wrote them: one Event per repeated failure, with its count.
func TestIntegrationEventRecorder(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	logs := &testoperator.Buffer{}
	log := logrus.New()
	log.SetOutput(logs)
	rec := New(c.Dynamic, log, nil)
	ref := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "failing", UID: "3f6c1a9e-0000-4000-8000-000000000001"}
	for range 3 {
		rec.Record(ref, hookFailed, "hook h: exit code 1")
	}
	rec.Stop()

	evs, err := c.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=failing,reason=" + hookFailed})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 1 {
		t.Fatalf("%d Events; want one for the three repeats\n%s", len(evs.Items), logs.String())
	}
	ev := evs.Items[0]
	if ev.Count != 3 || ev.Type != "Warning" || ev.Message != "hook h: exit code 1" || ev.Source.Component != "hook-operator" ||
		ev.InvolvedObject.Kind != "ConfigMap" || ev.InvolvedObject.UID != ref.UID || ev.ReportingController != "hook-operator" {
		t.Errorf("Event %+v", ev)
	}
	if ev.FirstTimestamp.IsZero() || ev.LastTimestamp.Before(&ev.FirstTimestamp) || time.Since(ev.LastTimestamp.Time) > time.Minute {
		t.Errorf("firstTimestamp %v, lastTimestamp %v", ev.FirstTimestamp, ev.LastTimestamp)
	}
}
