// Command tracehook is a resident Go hook for the tracing integration
// test, written with the SDK: for each ConfigMap of $TRACE_NS labelled
// trace=go that is added, it records a span of its own ("go work", with
// the ConfigMap's name and the traceparent the SDK gives its calls) and
// labels the ConfigMap traced=go.
package main

import (
	"context"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/sdk"
)

func main() {
	cfg := sdk.Config{
		Settings: &sdk.Settings{Resident: true},
		Kubernetes: []sdk.KubernetesBinding{{
			Name:                         "cms",
			Kind:                         "ConfigMap",
			ExecuteHookOnSynchronization: sdk.Ptr(false),
			ExecuteHookOnEvent:           sdk.OnEvents(sdk.EventAdded),
			Namespace:                    &sdk.NamespaceSelector{NameSelector: &sdk.NameSelector{MatchNames: []string{os.Getenv("TRACE_NS")}}},
			LabelSelector:                &metav1.LabelSelector{MatchLabels: map[string]string{"trace": "go"}},
		}},
	}
	sdk.Run(cfg, func(ctx *sdk.Context) error {
		for _, c := range ctx.Contexts {
			if c.Type != sdk.TypeEvent {
				continue
			}
			_, span := sdk.StartSpan(context.Background(), "go work", sdk.String("configmap", c.Object.GetName()))
			span.SetAttributes(sdk.String("outgoing.traceparent", span.TraceParent()))
			ctx.Emit(sdk.MergePatch(c.Object.Ref(), map[string]any{"metadata": map[string]any{"labels": map[string]any{"traced": "go"}}}))
			span.End(nil)
		}
		return nil
	})
}
