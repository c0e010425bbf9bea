package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/run"
	"github.com/hook-operator/hook-operator/internal/tracing"
)

// afterRun is the post-run step of every successful hook process, a queued
// run's and a webhook request's alike. Everything the hook wrote besides
// its answer is checked before any of it is used: its object operations,
// its metrics, the bindings its Requeue operations refer to, and the
// operations against the writes the hook declares (see checkWrites). Then
// the watch is told of the status writes to come, the operations are
// applied and counted, the hook's metrics kept, finish (when not nil: what
// is left for this kind of run, such as releasing finalizers) is called
// with the requeues, and last the requeues are armed. A failed check applies
// nothing; a failed apply or finish arms no requeue. It returns the
// operations, which rep.Parsed holds too once they parsed.
func (e *Executor) afterRun(ctx context.Context, h *hook.Hook, res run.Result, rep *Report, finish func([]RequeueRequest) error) (_ []ops.Operation, err error) {
	ctx, span := startOutput(ctx)
	defer func() { tracing.End(span, err) }()
	operations, err := ops.Parse(res.Operations)
	if err != nil {
		return nil, fail(invalidOps(err), fmt.Errorf("hook %s: invalid operations in $KUBERNETES_PATCH_PATH, none applied: %w", h.Name, err))
	}
	rep.Parsed = operations
	hookMetrics, err := metrics.ParseHookOps(res.Metrics)
	if err == nil && e.Metrics != nil {
		err = e.Metrics.Hooks.Check(h.Name, hookMetrics)
	}
	if err != nil {
		return nil, fail(invalidMetrics, fmt.Errorf("hook %s: invalid metrics in $METRICS_PATH, no operation applied: %w", h.Name, err))
	}
	requeues, err := e.resolveRequeues(h, operations)
	if err != nil {
		return nil, fail(invalidOps(err), fmt.Errorf("hook %s: invalid operations in $KUBERNETES_PATCH_PATH, none applied: %w", h.Name, err))
	}
	if err := e.checkWrites(h, operations); err != nil {
		return nil, fail(writesStatus(err), fmt.Errorf("hook %s: operations outside its declared writes in $KUBERNETES_PATCH_PATH, none applied (--restrict-writes): %w", h.Name, err))
	}
	e.noteStatusWrites(h, operations)
	if len(operations) > 0 {
		err := e.Sink.Apply(ctx, h.Name, operations)
		e.countOperations(h.Name, operations, err)
		if err != nil {
			return nil, fail(applyStatus(err), fmt.Errorf("hook %s: %w", h.Name, err))
		}
	}
	if e.Metrics != nil {
		e.Metrics.Hooks.Apply(h.Name, hookMetrics)
	}
	if finish != nil {
		if err := finish(requeues); err != nil {
			return nil, err
		}
	}
	if e.Requeue != nil {
		for _, r := range requeues {
			e.Requeue(r)
		}
	}
	return operations, nil
}

// countOperations counts operations by result: applied before the one
// that failed (err names its index), failed, and not applied after it.
func (e *Executor) countOperations(hookName string, operations []ops.Operation, err error) {
	if e.Metrics == nil {
		return
	}
	failed := -1
	var opErr *ops.Error
	if errors.As(err, &opErr) {
		failed = opErr.Index
	} else if err != nil {
		failed = 0 // not tied to one operation: none counts as applied
	}
	for _, op := range operations {
		result := "applied"
		switch {
		case failed < 0:
		case op.Index == failed:
			result = "failed"
		case op.Index > failed:
			result = "not_applied"
		}
		e.Metrics.Operation(hookName, op.Type, result)
	}
}

// noteStatusWrites tells the watch which objects the hook writes status or
// (as ApplySet parents) inventory annotations to, before the writes happen,
// so that the events they cause do not run the hook again.
func (e *Executor) noteStatusWrites(h *hook.Hook, operations []ops.Operation) {
	for _, op := range operations {
		var apiVersion, kind, namespace, name string
		switch {
		case op.Type == ops.Status:
			apiVersion, kind, namespace, name = op.APIVersion, op.Kind, op.Namespace, op.Name
		case op.Type == ops.ApplySet && op.Parent != nil:
			p := op.Parent
			apiVersion, kind, namespace, name = p.APIVersion, p.Kind, p.Namespace, p.Name
		default:
			continue
		}
		if res, err := e.Resolver.Resolve(apiVersion, kind); err == nil {
			e.Objects.StatusWritten(h.Name, res.GVR.String(), namespace, name)
		}
	}
}

// runForRequest runs hook h at once for a webhook request to its binding
// name, outside the queues, the whole run ending within within, and
// counts the run. It is the part of Admit and Convert before each reads
// its own answer.
func (e *Executor) runForRequest(ctx context.Context, h *hook.Hook, name string, data []byte, within time.Duration, rep *Report) (run.Result, error) {
	res, err := e.runProcess(ctx, run.Request{Hook: h, Contexts: data, Binding: name, Queue: webhookQueue, Within: within})
	rep.ran(res)
	if e.Metrics != nil && res.Duration > 0 {
		e.Metrics.RecordRun(metrics.HookRun{Hook: h.Name, Binding: name, Queue: webhookQueue, Duration: res.Duration,
			UserCPU: res.UserCPU, SystemCPU: res.SystemCPU, MaxRSS: res.MaxRSS, Err: err})
	}
	return res, err
}

// ran records the result of a hook process that started.
func (rep *Report) ran(res run.Result) {
	if res.Duration > 0 {
		rep.Result, rep.Operations = &res, res.Operations
	}
}
