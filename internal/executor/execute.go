// Package executor runs one hook: a queued task, or the run of an
// admission or conversion request. It completes the task's binding
// contexts with snapshots, runs the hook process (run), checks everything
// the hook wrote before any of it is used, and hands the operations to a
// Sink. The live operator (internal/operator), start --dry-run, replay and
// test all run hooks through its Executor: they differ only at its two
// seams, Objects (where bindings and their snapshots come from) and Sink
// (where writes go). How tasks are queued and when hooks start, reload or
// stop is the operator's; the executor is handed one task at a time.
package executor

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/run"
	"github.com/hook-operator/hook-operator/internal/tracing"
	"github.com/hook-operator/hook-operator/internal/watch"
)

// Objects is where the executor finds bindings and their snapshots: the
// live *watch.Watcher, or *watch.Memory for replay. This is one of the two
// seams between the live runtime and its offline and dry-run forms; the
// other is Sink.
type Objects interface {
	Bindings() []*watch.Binding
	Binding(hookName, name string) *watch.Binding
	StatusWritten(hookName, resource, namespace, name string)
}

// Executor runs one queued task: it completes the task's binding contexts
// with snapshots, runs the hook, validates the operations the hook wrote as
// a whole, and hands them to the sink. The live operator, dry-run and
// replay all run hooks through it.
type Executor struct {
	Objects  Objects
	Resolver ops.Resolver
	Runner   *run.Runner
	Sink     Sink
	// Requeue is handed each Requeue request of a successful run.
	Requeue func(RequeueRequest)
	// Report, when set, is told about every run, successful or not, after
	// its operations went to the sink (dry-run and replay print it).
	Report func(Report)
	// Metrics, when set, counts runs and operations and holds the metrics
	// hooks write. Without it, hooks' metrics files are still validated.
	Metrics *metrics.Metrics
	// Failed, when set, is told about every failed run (Kubernetes Events).
	Failed func(t *queue.Task, err error)
	// Tracer, when set, traces runs (nil: tracing off).
	Tracer *tracing.Tracer
	Log    logrus.FieldLogger
	// RestrictWrites fails a run whose operations need access its hook's
	// declared writes do not grant, none applied, and one whose hook
	// declares no writes and writes (--restrict-writes). Without it such
	// operations of a hook that declares writes are applied, counted and
	// warned of.
	RestrictWrites bool

	runs         atomic.Uint64
	writesWarned writeWarnings
}

// Report describes one hook run.
type Report struct {
	// ID numbers the executor's runs from 1; RunID(ctx) gives it to the
	// Sink during the run.
	ID    uint64
	Hook  *hook.Hook
	Queue string
	// Bindings names the bindings of the run's contexts, comma-separated.
	Bindings string
	// Contexts is the JSON the hook read from $BINDING_CONTEXT_PATH.
	Contexts []byte
	// Operations is what the hook wrote to $KUBERNETES_PATCH_PATH, as
	// written; nil when the hook did not run.
	Operations []byte
	// Parsed are the operations when they were valid.
	Parsed []ops.Operation
	// Result is the run's result, or nil when the hook did not start.
	Result *run.Result
	// Err is why the run failed (the hook, its operations, or applying
	// them), or nil.
	Err error
	// Answer is what the hook of an admission or conversion request
	// answered, checked (*webhook.AdmissionResponse or
	// *webhook.ConversionResponse); nil for other runs.
	Answer any
}

type runIDKey struct{}

// RunID returns the ID of the run whose operations a Sink is given (see
// Report.ID), or 0 outside a run.
func RunID(ctx context.Context) uint64 {
	id, _ := ctx.Value(runIDKey{}).(uint64)
	return id
}

type deadlineKey struct{}

// WithRunDeadline returns ctx carrying d, the deadline of the queued run
// whose context it is: Execute hands it to the run (run.Request.Deadline),
// so that the caller may move it while the hook runs (a reload that
// changes the hook's timeout).
func WithRunDeadline(ctx context.Context, d *run.Deadline) context.Context {
	return context.WithValue(ctx, deadlineKey{}, d)
}

// RunDeadline returns the deadline of the run whose context ctx is (see
// WithRunDeadline), or nil outside a queued run of the live operator
// (webhooks, replay): its timeout stays as it starts.
func RunDeadline(ctx context.Context) *run.Deadline {
	d, _ := ctx.Value(deadlineKey{}).(*run.Deadline)
	return d
}

// Execute runs t: the live operator's queues hand it their tasks, replay
// its own. A panic while t runs fails t alone, like any failed run (see
// contain).
func (e *Executor) Execute(ctx context.Context, t *queue.Task) error {
	rep := Report{ID: e.runs.Add(1), Hook: t.Hook, Queue: t.Queue}
	ctx = context.WithValue(ctx, runIDKey{}, rep.ID)
	ctx, span := e.startRun(ctx, t)
	start := time.Now()
	err := e.contain(t.Hook, "run", func() error { return e.execute(ctx, t, &rep) })
	tracing.End(span, err)
	if e.Metrics != nil {
		var user, system time.Duration
		var rss int64
		if r := rep.Result; r != nil {
			user, system, rss = r.UserCPU, r.SystemCPU, r.MaxRSS
		}
		names := rep.Bindings
		if names == "" {
			names = BindingNames(t.Contexts)
		}
		e.Metrics.RecordRun(metrics.HookRun{Hook: t.Hook.Name, Binding: names, Queue: t.Queue, Duration: time.Since(start),
			UserCPU: user, SystemCPU: system, MaxRSS: rss, Err: err, Allowed: t.AllowFailure, Waited: t.Waited()})
	}
	if err != nil && e.Failed != nil {
		e.Failed(t, err) // err may end with the hook's stderr: see failure
	}
	if e.Report != nil {
		rep.Err = err
		e.Report(rep)
	}
	return err
}

func (e *Executor) execute(ctx context.Context, t *queue.Task, rep *Report) error {
	contexts := binding.Combine(t.Contexts)
	if names := e.notListed(t.Hook.Name, contexts, t.Attempts() > 0); len(names) > 0 {
		return fail("bindings whose snapshots the run carries have not listed: not run, retried",
			fmt.Errorf("hook %s: binding(s) %s, whose snapshots the run carries, have not listed yet (a reload restarted them), so the hook is not run: it would see them empty; the run is retried", t.Hook.Name, strings.Join(names, ", ")))
	}
	if t.Attempts() > 0 {
		contexts = e.present(t.Hook.Name, contexts)
		if len(contexts) == 0 {
			e.Log.WithFields(logrus.Fields{"hook": t.Hook.Name, "queue": t.Queue}).
				Info("retry dropped: every object of its events is gone")
			return nil
		}
	}
	binding.FillSnapshots(contexts, func(name string) []binding.Object {
		if b := e.Objects.Binding(t.Hook.Name, name); b != nil {
			return b.Snapshot()
		}
		return nil
	})
	names := BindingNames(contexts)
	req := run.Request{Hook: t.Hook, Binding: names, Queue: t.Queue, Deadline: RunDeadline(ctx)}
	if e.Report != nil {
		// The report prints the contexts (dry-run, replay, test).
		data, err := binding.Encode(contexts)
		if err != nil {
			return fail("its binding contexts could not be encoded", fmt.Errorf("hook %s: encode binding contexts: %w", t.Hook.Name, err))
		}
		req.Contexts, rep.Contexts = data, data
	} else {
		// Straight into the file: a Synchronization is never held whole.
		req.WriteContexts = func(w io.Writer) error { return binding.Write(w, contexts) }
	}
	rep.Bindings = names
	fields := logrus.Fields{"hook": t.Hook.Name, "binding": names, "queue": t.Queue}
	if t.Origin != "" {
		fields["origin"] = t.Origin
	}
	log := e.Log.WithFields(fields)
	log.WithField("contexts", len(contexts)).Debug("running hook")
	res, err := e.runProcess(ctx, req)
	rep.ran(res)
	if err != nil {
		return fail(runStatus(err), err)
	}
	operations, err := e.afterRun(ctx, t.Hook, res, rep, func(requeues []RequeueRequest) error {
		if err := e.releaseFinalizers(ctx, t.Hook, contexts, requeues); err != nil {
			return fail("removing a finalizer failed: "+reasonOf(err), fmt.Errorf("hook %s: %w", t.Hook.Name, err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	log.WithFields(logrus.Fields{"contexts": len(contexts), "operations": len(operations), "duration": res.Duration.Round(time.Millisecond).String()}).
		Info("hook run succeeded")
	return nil
}

// releaseFinalizers removes the finalizer of every object this successful
// run was finalizing, letting its deletion go on, unless the run requeued
// the object: the hook is not done with it yet (a cleanup it waits for).
func (e *Executor) releaseFinalizers(ctx context.Context, h *hook.Hook, contexts []binding.Context, requeues []RequeueRequest) error {
	for _, c := range contexts {
		if c.WatchEvent != watch.Finalize || c.Object == nil {
			continue
		}
		b := e.Objects.Binding(h.Name, c.Binding)
		if b == nil {
			continue
		}
		if requeued(requeues, b, c.Object.Namespace, c.Object.Name) {
			e.Log.WithFields(logrus.Fields{"hook": h.Name, "object": c.Object.Namespace + "/" + c.Object.Name}).
				Info("the Finalize run requeued the object; the finalizer stays until a Finalize run does not")
			continue
		}
		t := finalizer.Target{Resource: b.Resource().GVR, Namespace: c.Object.Namespace, Name: c.Object.Name, Finalizer: b.Config().Finalizer}
		fctx, span := traceFinalizer(ctx, t)
		err := e.Sink.RemoveFinalizer(fctx, t)
		tracing.End(span, err)
		if err != nil {
			return fmt.Errorf("remove %s: %w", t, err)
		}
		e.Log.WithFields(logrus.Fields{"hook": h.Name, "object": t.String()}).Info("finalized; finalizer removed")
	}
	return nil
}

func requeued(requeues []RequeueRequest, b *watch.Binding, namespace, name string) bool {
	for _, r := range requeues {
		if r.Binding == b && r.Namespace == namespace && r.Name == name {
			return true
		}
	}
	return false
}

// present brings the contexts of a retried run up to date: the run was
// queued with the state of its time, and objects may have changed or gone
// during the backoff. A Synchronization gets its binding's current objects,
// an Event its object as it is now, and an Event whose object is gone is
// dropped (a Deleted event stays: it says the object is gone). Snapshots
// (group, includeSnapshotsFrom) are filled at every run anyway.
func (e *Executor) present(hookName string, contexts []binding.Context) []binding.Context {
	out := contexts[:0:0]
	for _, c := range contexts {
		b := e.Objects.Binding(hookName, c.Binding)
		if b == nil {
			out = append(out, c)
			continue
		}
		switch {
		case c.Type == binding.TypeSynchronization:
			c.Objects = b.Snapshot()
		case c.Type == binding.TypeEvent && c.WatchEvent != hook.Deleted && c.Object != nil:
			now, ok := b.Get(c.Object.Namespace, c.Object.Name)
			if !ok {
				continue
			}
			c.Object = &now
		}
		out = append(out, c)
	}
	return out
}

// BindingNames lists the distinct bindings of contexts, in order and
// comma-separated, as the log, metrics and Events name a run's bindings.
func BindingNames(contexts []binding.Context) string {
	seen := map[string]bool{}
	var out []string
	for _, c := range contexts {
		if !seen[c.Binding] {
			seen[c.Binding] = true
			out = append(out, c.Binding)
		}
	}
	return strings.Join(out, ",")
}
