package operator

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/tracing"
)

// traceRoot records, with tracing on, the root span of t's context c:
// where the context arose (a watch event of one binding, a
// Synchronization, a schedule tick, onStartup, a trigger or a requeue),
// and keeps its span context in t, under which t's wait in its queue and
// its runs are traced.
func (o *Operator) traceRoot(t *queue.Task, c binding.Context) {
	tr := o.opts.Tracer
	if !tr.On() {
		return
	}
	name := tracing.SpanEvent
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, attribute.String("hook.name", t.Hook.Name), attribute.String("hook.binding", c.Binding))
	switch c.Type {
	case binding.TypeSynchronization:
		name = tracing.SpanSynchronization
		attrs = append(attrs, attribute.Int("hook.objects", len(c.Objects)))
	case binding.TypeSchedule:
		name = tracing.SpanSchedule
		for _, s := range t.Hook.Config.Schedule {
			if s.Name == c.Binding {
				attrs = append(attrs, attribute.String("hook.crontab", s.Crontab))
			}
		}
	case "":
		name = tracing.SpanStartup
	case binding.TypeEvent:
		if c.WatchEvent == executor.Requeue {
			name = tracing.SpanRequeue
		}
		attrs = append(attrs, attribute.String("k8s.event.type", c.WatchEvent))
		for _, k := range t.Hook.Config.Kubernetes {
			if k.Name == c.Binding {
				attrs = append(attrs, attribute.String("k8s.object.kind", k.Kind))
			}
		}
		if c.Object != nil {
			attrs = append(attrs, attribute.String("k8s.namespace.name", c.Object.Namespace), attribute.String("k8s.object.name", c.Object.Name))
		}
	}
	if t.Origin == OriginTrigger {
		name = tracing.SpanTrigger
	}
	t.Trace = tr.Root(name, time.Now(), attrs...)
}

// traceReview starts, with tracing on, the span of an admission or
// conversion review, under the API server's own span when its request
// carried a traceparent (ctx has it then: see webhook.RequestContext).
func (o *Operator) traceReview(ctx context.Context, name, hookName, bindingName string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs = append(attrs, attribute.String("hook.name", hookName), attribute.String("hook.binding", bindingName))
	return o.opts.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// admissionAttributes are what an AdmissionReview's span says about its
// request: the API server's uid, the operation and the object.
func admissionAttributes(review json.RawMessage) []attribute.KeyValue {
	var r struct {
		Request struct {
			UID       string `json:"uid"`
			Operation string `json:"operation"`
			Kind      struct {
				Kind string `json:"kind"`
			} `json:"kind"`
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
			DryRun    *bool  `json:"dryRun"`
		} `json:"request"`
	}
	_ = json.Unmarshal(review, &r)
	q := r.Request
	return []attribute.KeyValue{
		attribute.String("k8s.review.uid", q.UID), attribute.String("k8s.review.operation", q.Operation),
		attribute.String("k8s.object.kind", q.Kind.Kind), attribute.String("k8s.namespace.name", q.Namespace),
		attribute.String("k8s.object.name", q.Name), attribute.Bool("k8s.review.dry_run", q.DryRun != nil && *q.DryRun),
	}
}
