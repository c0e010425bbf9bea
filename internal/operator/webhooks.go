package operator

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/tracing"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// admissionTarget is what a webhook path leads to.
type admissionTarget struct {
	hook     *hook.Hook
	binding  hook.WebhookBinding
	mutating bool
	timeout  time.Duration
}

// webhookTargets are the admission and conversion bindings of one hook
// set, by path and by CRD: a request looks its hook up in the set current
// when it arrives, and runs that hook to the end whatever a reload does
// meanwhile.
type webhookTargets struct {
	bindings   webhook.Bindings
	admissions map[string]admissionTarget
	crds       map[string]*conversionCRD
	// err says why the conversions cannot be served (two bindings declare
	// the same one).
	err error
}

// newWebhookTargets collects the webhook bindings of hooks.
func newWebhookTargets(hooks []*hook.Hook) *webhookTargets {
	t := &webhookTargets{admissions: map[string]admissionTarget{}}
	for _, h := range hooks {
		for _, b := range h.Config.Validating {
			t.bindings.Validating = append(t.bindings.Validating, webhook.Admission{Hook: h.Name, Binding: b})
			t.admissions[webhook.Path(b.Name)] = admissionTarget{hook: h, binding: b, timeout: executor.AdmissionTimeout(b)}
		}
		for _, b := range h.Config.Mutating {
			t.bindings.Mutating = append(t.bindings.Mutating, webhook.Admission{Hook: h.Name, Binding: b})
			t.admissions[webhook.Path(b.Name)] = admissionTarget{hook: h, binding: b, mutating: true, timeout: executor.AdmissionTimeout(b)}
		}
		for _, b := range h.Config.Conversion {
			t.bindings.Conversions = append(t.bindings.Conversions, webhook.Conversion{Hook: h.Name, Binding: b.Name, CRD: b.CRDName})
		}
	}
	t.crds, t.err = conversions(hooks)
	return t
}

// WebhookBindings returns the admission and conversion bindings of the
// current hooks (webhook.Hooks); an error when two bindings declare the
// same conversion.
func (o *Operator) WebhookBindings() (webhook.Bindings, error) {
	t := o.hooks.Load().webhooks
	return t.bindings, t.err
}

// WebhooksChanged returns a channel closed at the next reload that
// changes an admission or conversion binding (webhook.Hooks).
func (o *Operator) WebhooksChanged() <-chan struct{} {
	o.webhooksMu.Lock()
	defer o.webhooksMu.Unlock()
	return o.webhooksChanged
}

// webhooksChange tells the webhook server that the bindings changed.
func (o *Operator) webhooksChange() {
	o.webhooksMu.Lock()
	defer o.webhooksMu.Unlock()
	close(o.webhooksChanged)
	o.webhooksChanged = make(chan struct{})
}

// Admit answers an admission request to the binding served at path with
// what its hook in the current hook set answers (webhook.Hooks), and
// counts it. A hook's run, its stop included, ends a little before the
// binding's timeoutSeconds (executor.AdmissionTimeout), so that the API
// server gets a denial that says why rather than a timeout.
func (o *Operator) Admit(ctx context.Context, path string, review json.RawMessage) (*webhook.AdmissionResponse, webhook.Admission, error) {
	start := time.Now()
	t, ok := o.hooks.Load().webhooks.admissions[path]
	if !ok {
		return nil, webhook.Admission{}, webhook.NotServed("no admission binding is served at %s", path)
	}
	a := webhook.Admission{Hook: t.hook.Name, Binding: t.binding}
	var span trace.Span
	if o.opts.Tracer.On() {
		ctx, span = o.traceReview(ctx, tracing.SpanAdmission, t.hook.Name, t.binding.Name,
			append(admissionAttributes(review), attribute.String("hook.webhook", kindOf(t.mutating)))...)
	}
	resp, err := o.exec.Admit(ctx, t.hook, t.binding, t.mutating, review, t.timeout)
	result, code := "allowed", http.StatusOK
	var ae *executor.AdmitError
	switch {
	case err != nil:
		result, code = "error", http.StatusInternalServerError
	case !resp.Allowed:
		result, code = "denied", http.StatusForbidden
	}
	if span != nil {
		span.SetAttributes(attribute.String("hook.result", result))
		tracing.End(span, err)
	}
	o.opts.Metrics.Admission(t.hook.Name, t.binding.Name, kindOf(t.mutating), result, code, time.Since(start), errors.As(err, &ae) && ae.TimedOut)
	return resp, a, err
}

// kindOf labels the metrics of a binding: validating or mutating.
func kindOf(mutating bool) string {
	if mutating {
		return "mutating"
	}
	return "validating"
}

// WebhooksReason is the reason of the Event about webhook bindings that a
// reload changed and that could not be served.
const WebhooksReason = "WebhooksFailed"

// WebhooksFailed reports, as a Warning Event on the operator's Pod, that
// the webhook bindings a reload changed could not be served or registered
// (err says why, a missing certificate say); the webhook server tries
// again.
func (o *Operator) WebhooksFailed(err error) {
	o.podEvent(WebhooksReason, "the hooks' webhook bindings changed, and serving or registering them failed: "+err.Error()+"; fix it, and the change is tried again within 10s")
}

// MisdirectedReason is the reason of the Event about webhook
// registrations that do not reach the operator's listeners.
const MisdirectedReason = "WebhookUnreachable"

// WebhooksMisdirected takes what the webhook server found wrong with
// where its registrations point (a Service that does not exist, a URL of
// another port): each new fault becomes a Warning Event on the operator's
// Pod, and the operator is not ready while any is left (Ready lists them),
// as the API server cannot reach the webhooks.
func (o *Operator) WebhooksMisdirected(problems []string) {
	var before []string
	if p := o.misdirected.Load(); p != nil {
		before = *p
	}
	for _, p := range problems {
		if !slices.Contains(before, p) {
			o.podEvent(MisdirectedReason, p)
		}
	}
	o.misdirected.Store(&problems)
}
