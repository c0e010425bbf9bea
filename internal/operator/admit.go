package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/run"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// webhookQueue labels the runs of admission requests, which wait in no queue.
const webhookQueue = "(webhook)"

// AdmitError is why a hook gave no answer, in words that can be shown to
// the client.
type AdmitError struct {
	Msg string
	// TimedOut: the hook did not answer within the binding's timeout.
	TimedOut bool
}

func (e *AdmitError) Error() string { return e.Msg }

// Admit runs hook h for one admission request to its binding b, at once
// and outside the queues (the API server is waiting), and returns the
// hook's answer. The context is a Validating or Mutating one with the
// review and the snapshots the binding's group and includeSnapshotsFrom
// name. The whole run, the hook's stop included, ends within within (see
// AdmissionTimeout). Everything the hook wrote is checked
// before anything is used: the response, its metrics, and the object
// operations it may write besides, which are applied before the answer is
// given. An error says why there is no answer, in words that can be shown
// to the client: never the hook's output (its stderr, the API server's
// message about an operation it wrote), which goes to the log only.
func (e *Executor) Admit(ctx context.Context, h *hook.Hook, b hook.WebhookBinding, mutating bool, review []byte, within time.Duration) (*webhook.AdmissionResponse, error) {
	typ := binding.TypeValidating
	if mutating {
		typ = binding.TypeMutating
	}
	data, err := e.snapshotContext(h, binding.Context{Binding: b.Name, Type: typ, Review: review}, b.Common)
	if err != nil {
		return nil, err
	}
	log := e.Log.WithFields(logrus.Fields{"hook": h.Name, "binding": b.Name, "type": typ})
	rep := Report{ID: e.runs.Add(1), Hook: h, Queue: webhookQueue, Bindings: b.Name, Contexts: data}
	ctx = context.WithValue(ctx, runIDKey{}, rep.ID)
	resp, err := e.admit(ctx, h, b, mutating, data, within, log, &rep)
	if e.Report != nil {
		rep.Err = err
		if err == nil {
			rep.Answer = resp
		}
		e.Report(rep)
	}
	return resp, err
}

func (e *Executor) admit(ctx context.Context, h *hook.Hook, b hook.WebhookBinding, mutating bool, data []byte, within time.Duration, log logrus.FieldLogger, rep *Report) (*webhook.AdmissionResponse, error) {
	res, err := e.Runner.Run(ctx, run.Request{Hook: h, Contexts: data, Binding: b.Name, Queue: webhookQueue, Within: within})
	if res.Duration > 0 {
		rep.Result, rep.Operations = &res, res.Operations
	}
	if e.Metrics != nil && res.Duration > 0 {
		e.Metrics.Run(h.Name, b.Name, webhookQueue, res.Duration, res.UserCPU, res.SystemCPU, res.MaxRSS, err, false)
	}
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		log.WithError(err).Warn("admission hook did not answer in time; the request is denied")
		return nil, &AdmitError{Msg: fmt.Sprintf("hook %s did not answer in time for binding %s: it was stopped so that its run ends within %s, before the API server gives up", h.Name, b.Name, within.Round(10*time.Millisecond)), TimedOut: true}
	case err != nil:
		log.WithError(err).Warn("admission hook failed; the request is denied")
		return nil, &AdmitError{Msg: fmt.Sprintf("hook %s failed for binding %s; the operator's log says why", h.Name, b.Name)}
	}
	resp, err := webhook.ParseAdmissionResponse(res.ValidatingResponse, mutating)
	if err != nil {
		log.WithError(err).Warn("admission hook wrote an invalid response; the request is denied")
		return nil, fmt.Errorf("hook %s, binding %s: invalid response in $VALIDATING_RESPONSE_PATH: %v", h.Name, b.Name, err)
	}
	if err := e.applyExtras(ctx, h, res); err != nil {
		log.WithError(err).Warn("what the admission hook wrote besides its answer failed; the request is denied")
		return nil, &AdmitError{Msg: fmt.Sprintf("hook %s, binding %s: %s; the operator's log says why", h.Name, b.Name, publicReason(err))}
	}
	log.WithFields(logrus.Fields{"allowed": resp.Allowed, "duration": res.Duration.Round(time.Millisecond).String()}).Info("admission hook answered")
	return resp, nil
}

// applyExtras checks and applies what a hook that answered a webhook
// request wrote besides its answer: object operations, metrics and
// requeues, all checked before any is applied, as for any run.
func (e *Executor) applyExtras(ctx context.Context, h *hook.Hook, res run.Result) error {
	operations, err := ops.Parse(res.Operations)
	if err != nil {
		return fail(invalidOps(err), fmt.Errorf("hook %s: invalid operations in $KUBERNETES_PATCH_PATH, none applied: %w", h.Name, err))
	}
	hookMetrics, err := metrics.ParseHookOps(res.Metrics)
	if err == nil && e.Metrics != nil {
		err = e.Metrics.Hooks.Check(h.Name, hookMetrics)
	}
	if err != nil {
		return fail(invalidMetrics, fmt.Errorf("hook %s: invalid metrics in $METRICS_PATH, no operation applied: %w", h.Name, err))
	}
	requeues, err := e.resolveRequeues(h, operations)
	if err != nil {
		return fail(invalidOps(err), fmt.Errorf("hook %s: invalid operations in $KUBERNETES_PATCH_PATH, none applied: %w", h.Name, err))
	}
	e.noteStatusWrites(h, operations)
	if len(operations) > 0 {
		err := e.Sink.Apply(ctx, h.Name, operations)
		e.countOperations(h.Name, operations, err)
		if err != nil {
			return fail(applyStatus(err), fmt.Errorf("hook %s: %w", h.Name, err))
		}
	}
	if e.Metrics != nil {
		e.Metrics.Hooks.Apply(h.Name, hookMetrics)
	}
	if e.Requeue != nil {
		for _, r := range requeues {
			e.Requeue(r)
		}
	}
	return nil
}

// snapshotContext returns c with the snapshots of the bindings that group
// and includeSnapshotsFrom name, encoded as the hook's binding contexts,
// or an error when one of them has not listed: the hook would see it
// empty.
func (e *Executor) snapshotContext(h *hook.Hook, c binding.Context, common hook.Common) ([]byte, error) {
	if names := e.unsynchronized(h, common); len(names) > 0 {
		return nil, fmt.Errorf("hook %s, binding %s: binding(s) %s, whose snapshots the hook gets, have not synchronized (is the kind served?), so the hook is not run; `hook-operator debug hooks` says why",
			h.Name, common.Name, strings.Join(names, ", "))
	}
	var from []string
	from = append(from, groupMembers(h, common.Group)...)
	from = append(from, common.IncludeSnapshotsFrom...)
	if len(from) > 0 {
		c = binding.Shape(c, "", nil, from)
	}
	contexts := []binding.Context{c}
	binding.FillSnapshots(contexts, func(name string) []binding.Object {
		if wb := e.Objects.Binding(h.Name, name); wb != nil {
			return wb.Snapshot()
		}
		return nil
	})
	data, err := binding.Encode(contexts)
	if err != nil {
		return nil, fmt.Errorf("hook %s: %w", h.Name, err)
	}
	return data, nil
}
