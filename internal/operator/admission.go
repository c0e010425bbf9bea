package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// Admissions lists the hooks' mutating (mutating) or validating bindings,
// in the order of the hooks and of their bindings.
func (o *Operator) Admissions(mutating bool) []webhook.Admission {
	var out []webhook.Admission
	for _, h := range o.current() {
		list := h.Config.Validating
		if mutating {
			list = h.Config.Mutating
		}
		for _, b := range list {
			out = append(out, webhook.Admission{Hook: h.Name, Binding: b})
		}
	}
	return out
}

// admissionTarget is what a webhook path leads to.
type admissionTarget struct {
	hook     *hook.Hook
	binding  hook.WebhookBinding
	mutating bool
	timeout  time.Duration
}

// AdmissionHandler returns the handler of the admission requests to the
// hooks' bindings, each at the path webhook.Path gives it, or nil when no
// hook has an admission binding. At most max requests run hooks at once;
// the others wait for a free slot as long as the API server waits for
// them. A hook's run, its stop included, ends a little before the
// binding's timeoutSeconds (AdmissionTimeout), so that the API server gets
// a denial that says why rather than a timeout.
// With dryRun every request is allowed: what the hook answered is logged
// and sent back as a warning, which kubectl shows, so that a policy can be
// tried on a live cluster before it blocks anyone.
func (o *Operator) AdmissionHandler(max int, dryRun bool) http.Handler {
	targets := map[string]admissionTarget{}
	for _, mutating := range []bool{false, true} {
		for _, a := range o.Admissions(mutating) {
			h := o.hook(a.Hook)
			targets[webhook.Path(a.Binding.Name)] = admissionTarget{hook: h, binding: a.Binding, mutating: mutating, timeout: AdmissionTimeout(a.Binding)}
		}
	}
	if len(targets) == 0 {
		return nil
	}
	slots := o.webhookSlots(max)
	return &webhook.AdmissionHandler{Log: o.log, Run: func(ctx context.Context, path string, review json.RawMessage) (*webhook.AdmissionResponse, error) {
		start := time.Now()
		t, ok := targets[path]
		if !ok {
			return nil, fmt.Errorf("no admission binding is served at %s", path)
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		case <-ctx.Done():
			o.opts.Metrics.Admission(t.hook.Name, t.binding.Name, kindOf(t.mutating), "error", http.StatusInternalServerError, time.Since(start), false)
			return nil, fmt.Errorf("binding %s: every one of the %d webhook slots stayed busy until the API server gave up", t.binding.Name, cap(slots))
		}
		resp, err := o.exec.Admit(ctx, t.hook, t.binding, t.mutating, review, t.timeout)
		kind, result, code := kindOf(t.mutating), "allowed", http.StatusOK
		var ae *AdmitError
		switch {
		case err != nil:
			result, code = "error", http.StatusInternalServerError
		case !resp.Allowed:
			result, code = "denied", http.StatusForbidden
		}
		o.opts.Metrics.Admission(t.hook.Name, t.binding.Name, kind, result, code, time.Since(start), errors.As(err, &ae) && ae.TimedOut)
		if dryRun {
			return o.dryRunAnswer(t, resp, err), nil
		}
		return resp, err
	}}
}

// dryRunAnswer allows a request whatever the hook answered, logs the
// answer (not the patch, which may hold an object's data: only how many
// operations it has) and tells the client as a warning.
func (o *Operator) dryRunAnswer(t admissionTarget, resp *webhook.AdmissionResponse, err error) *webhook.AdmissionResponse {
	log := o.log.WithFields(logrus.Fields{"hook": t.hook.Name, "binding": t.binding.Name})
	out := &webhook.AdmissionResponse{Allowed: true}
	var would string
	switch {
	case err != nil:
		log.WithError(err).Warn("dry-run: the request would have been denied (the hook gave no answer); allowed")
		would = "would deny it: " + err.Error()
	case !resp.Allowed:
		log.WithField("message", resp.Message).Info("dry-run: the hook would have denied the request; allowed")
		would = "would deny it: " + resp.Message
		out.Warnings = resp.Warnings
	default:
		var patchOps []json.RawMessage
		_ = json.Unmarshal(resp.Patch, &patchOps)
		log.WithField("patchOperations", len(patchOps)).Info("dry-run: the hook allowed the request")
		would = "allows it"
		if len(patchOps) > 0 {
			would = fmt.Sprintf("allows it with a patch of %d operation(s), not applied", len(patchOps))
		}
		out.Warnings = resp.Warnings
	}
	out.Warnings = append(out.Warnings, fmt.Sprintf("hook-operator dry run: %s, binding %s %s", t.hook.Name, t.binding.Name, would))
	return out
}

// answerMargin is what an admission or conversion run leaves of the
// API server's wait for the answer to travel back to it.
const answerMargin = 500 * time.Millisecond

// AdmissionTimeout is how long a run of the hook of binding b may last,
// the hook's SIGTERM grace, kill and output grace included
// (run.Request.Within): its timeoutSeconds (10 by default) less
// answerMargin, so that the API server gets a denial that says why rather
// than a timeout of its own.
func AdmissionTimeout(b hook.WebhookBinding) time.Duration {
	seconds := int64(10)
	if n, ok := b.Raw["timeoutSeconds"].(int64); ok {
		seconds = n
	}
	return time.Duration(seconds)*time.Second - answerMargin
}

// ConversionTimeout is how long one step of a conversion may take when no
// request's deadline is nearer: the whole budget of a request.
const ConversionTimeout = conversionBudget

// kindOf labels the metrics of a binding: validating or mutating.
func kindOf(mutating bool) string {
	if mutating {
		return "mutating"
	}
	return "validating"
}
