package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/recorder"
	"github.com/hook-operator/hook-operator/internal/tracing"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// conversionTarget is the hook and binding that declared a rule.
type conversionTarget struct {
	hook    *hook.Hook
	binding hook.ConversionBinding
	rule    hook.ConversionRule
}

// conversionCRD is what the hooks declare for one CRD: its rules, in the
// order of the hooks and bindings, and who declared each.
type conversionCRD struct {
	rules   []webhook.ConversionRule
	targets map[webhook.ConversionRule]conversionTarget
}

// conversions collects the conversion rules of hooks by CRD. Two
// bindings that declare the same rule for a CRD are an error: which one
// runs would be a matter of chance.
func conversions(hooks []*hook.Hook) (map[string]*conversionCRD, error) {
	crds := map[string]*conversionCRD{}
	for _, h := range hooks {
		for _, b := range h.Config.Conversion {
			c := crds[b.CRDName]
			if c == nil {
				c = &conversionCRD{targets: map[webhook.ConversionRule]conversionTarget{}}
				crds[b.CRDName] = c
			}
			for _, r := range b.Conversions {
				wr := webhook.ConversionRule{From: r.FromVersion, To: r.ToVersion}
				if prev, ok := c.targets[wr]; ok {
					return nil, fmt.Errorf("hook %s, kubernetesCustomResourceConversion %s: the conversion %s of %s is declared by hook %s, binding %s too; declare each conversion of a CRD once",
						h.Name, b.Name, wr, b.CRDName, prev.hook.Name, prev.binding.Name)
				}
				c.targets[wr] = conversionTarget{hook: h, binding: b, rule: r}
				c.rules = append(c.rules, wr)
			}
		}
	}
	return crds, nil
}

// Convert brings the objects of a ConversionReview for CRD crd to the
// desired version with the conversions of the current hook set
// (webhook.Hooks), and counts it. All the steps of its chain must end
// within executor.ConversionTimeout. A failed conversion is recorded as an
// Event on the CRD.
func (o *Operator) Convert(ctx context.Context, crd string, req webhook.ConversionRequest) ([]json.RawMessage, error) {
	start := time.Now()
	c := o.hooks.Load().webhooks.crds[crd]
	if c == nil {
		return nil, webhook.NotServed("no hook converts %s: no kubernetesCustomResourceConversion binding names it", crd)
	}
	ctx, cancel := context.WithDeadline(ctx, start.Add(executor.ConversionTimeout))
	defer cancel()
	var span trace.Span
	if o.opts.Tracer.On() {
		ctx, span = o.opts.Tracer.Start(ctx, tracing.SpanConversion, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("k8s.review.uid", req.UID), attribute.String("k8s.crd.name", crd),
			attribute.String("k8s.review.desired_api_version", req.DesiredAPIVersion), attribute.Int("k8s.review.objects", len(req.Objects))))
	}
	var last conversionTarget
	objects, err := webhook.Convert(ctx, crd, c.rules, req, func(ctx context.Context, crd string, rule webhook.ConversionRule, req webhook.ConversionRequest) ([]json.RawMessage, error) {
		last = c.targets[rule]
		// The step's run, its stop included, ends before the request's
		// deadline, with time left to answer.
		within := executor.AnswerMargin
		if d, ok := ctx.Deadline(); ok {
			within = time.Until(d) - executor.AnswerMargin
		}
		if within <= 0 {
			return nil, &executor.ConvertError{Msg: fmt.Sprintf("no time was left for the step %s of the conversion of %s", rule, crd), TimedOut: true}
		}
		return o.exec.Convert(ctx, last.hook, last.binding, last.rule, req, within)
	})
	hookName, bindingName := "", ""
	if last.hook != nil {
		hookName, bindingName = last.hook.Name, last.binding.Name
	}
	result, code := "converted", http.StatusOK
	var ce *executor.ConvertError
	var cf *webhook.ConversionFailure
	switch {
	case err == nil:
	case errors.As(err, &ce) && ce.Refused, errors.As(err, &cf):
		result, code = "refused", http.StatusUnprocessableEntity
	default:
		result, code = "error", http.StatusInternalServerError
	}
	o.opts.Metrics.Admission(hookName, bindingName, "conversion", result, code, time.Since(start), errors.As(err, &ce) && ce.TimedOut)
	if span != nil {
		span.SetAttributes(attribute.String("hook.name", hookName), attribute.String("hook.binding", bindingName), attribute.String("hook.result", result))
		tracing.End(span, err)
	}
	if err != nil {
		o.conversionFailed(crd, req, err)
	}
	return objects, err
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// conversionFailed records a Warning Event on the CRD crd about a failed
// conversion (the Event recorder folds repeats into one).
func (o *Operator) conversionFailed(crd string, req webhook.ConversionRequest, err error) {
	if o.events == nil {
		return
	}
	ref := recorder.ObjectRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd, UID: o.crdUIDs.get(crd, func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		u, err := o.dyn.Resource(crdGVR).Get(ctx, crd, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return string(u.GetUID()), nil
	})}
	// The desired apiVersion is the caller's: shown cut, quoted, escaped.
	o.events.Record(ref, "ConversionFailed", fmt.Sprintf("conversion of %d object(s) to %q failed: %v", len(req.Objects), cutText(req.DesiredAPIVersion, 100), err))
}

// uidCache remembers the uids of CRDs, read once each.
type uidCache struct {
	mu   sync.Mutex
	uids map[string]string
}

func (c *uidCache) get(name string, read func() (string, error)) types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	if uid, ok := c.uids[name]; ok {
		return types.UID(uid)
	}
	uid, err := read()
	if err != nil {
		return ""
	}
	if c.uids == nil {
		c.uids = map[string]string{}
	}
	c.uids[name] = uid
	return types.UID(uid)
}

// cutText cuts s to at most n bytes at a character's boundary, marking
// the cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
