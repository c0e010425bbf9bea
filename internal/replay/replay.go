// Package replay runs hooks without a cluster: against the objects and
// events of a fixture, held in an in-memory cluster. It builds the binding
// contexts the live runtime would build, runs the hooks with the live
// runtime's executor, and applies their operations to memory, so that later
// events see them and the changes they cause run hooks in turn.
//
// Replay is deterministic: each context runs on its own, in the order it
// arose, and time is virtual (it moves only with wait events). A failed
// run is reported and not retried, as it would fail the same way again.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hook-operator/hook-operator/internal/binding"
	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/fixture"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/memcluster"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/run"
	"github.com/hook-operator/hook-operator/internal/watch"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// DefaultStart is where replay's virtual clock starts: objects created by
// hooks get creationTimestamps from it, so output does not depend on when
// it runs.
var DefaultStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// DefaultMaxRuns bounds the runs of one replay.
const DefaultMaxRuns = 1000

// ErrTooManyRuns is returned when a replay reaches its run limit: hooks
// keep causing changes that run hooks again.
var ErrTooManyRuns = errors.New("too many runs")

// Options configure a replay.
type Options struct {
	Hooks   []*hook.Hook
	Fixture *fixture.Fixture
	// TmpDir, Env and HookTimeout are as for the live runtime's runs.
	TmpDir      string
	Env         []string
	HookTimeout time.Duration
	// Start is the virtual clock's start; DefaultStart when zero.
	Start time.Time
	// MaxRuns stops a replay whose hooks run more often (a hot loop);
	// DefaultMaxRuns when zero.
	MaxRuns int
	// Report is told about every run, with the changes its operations made.
	Report func(r executor.Report, changes []memcluster.Change)
	Log    logrus.FieldLogger
}

// Summary counts what a replay did.
type Summary struct {
	Runs, Failed int
}

// engine is one replay.
type engine struct {
	opts     Options
	log      logrus.FieldLogger
	now      time.Time
	resolver *kube.Resolver
	cluster  *memcluster.Cluster
	memory   *watch.Memory
	exec     *executor.Executor
	applier  *ops.Applier
	fin      *finalizer.Manager

	tasks    []*queue.Task
	requeues []pendingRequeue
	ensure   []finalizer.Target
	seq      int
	summary  Summary
}

// Run replays opts.Fixture and returns what it did. A failed hook run does
// not make it fail; a fixture that cannot be loaded, or too many runs, do.
func Run(ctx context.Context, opts Options) (Summary, error) {
	e, err := newEngine(opts)
	if err != nil {
		return Summary{}, err
	}
	// Stops the resident hooks' processes: each replay (each test case)
	// starts its own.
	defer func() { _ = e.exec.Runner.Close() }()
	err = e.replay(ctx)
	return e.summary, err
}

func newEngine(opts Options) (*engine, error) {
	if opts.Log == nil {
		opts.Log = logrus.StandardLogger()
	}
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = DefaultMaxRuns
	}
	if opts.Start.IsZero() {
		opts.Start = DefaultStart
	}
	if opts.Fixture == nil {
		opts.Fixture = &fixture.Fixture{}
	}
	e := &engine{opts: opts, log: opts.Log, now: opts.Start}
	for _, h := range opts.Hooks {
		if n := h.Config.Settings.Parallelism; n > 1 {
			opts.Log.WithField("hook", h.Name).Infof("settings.parallelism %d applies to start only: replay runs every context one at a time, in order, so that its runs are the same every time", n)
		}
		if h.Config.Settings.Sharded {
			opts.Log.WithField("hook", h.Name).Info("settings.sharded applies to start --sharding only: replay gives the hook every object, as one replica that owns them all")
		}
	}
	resolver, err := Resolver(opts.Fixture)
	if err != nil {
		return nil, err
	}
	e.resolver = resolver
	e.cluster = memcluster.New(memcluster.Options{Now: func() time.Time { return e.now }})
	for i, obj := range opts.Fixture.Objects {
		res, err := resolver.Resolve(obj.GetAPIVersion(), obj.GetKind())
		if err != nil {
			return nil, fmt.Errorf("object %d (%s): %w (add its CustomResourceDefinition to the objects, or declare it under resources)", i, describe(obj), err)
		}
		if err := e.cluster.Add(res.GVR, obj); err != nil {
			return nil, fmt.Errorf("object %d (%s): %w", i, describe(obj), err)
		}
	}
	e.memory, err = watch.NewMemory(opts.Hooks, resolver, e.cluster, sensor{e}, opts.Log)
	if err != nil {
		return nil, err
	}
	// A foreground Delete of an object held by finalizers fails at once
	// instead of waiting: nothing else runs while replay waits.
	e.applier = &ops.Applier{Dynamic: e.cluster, Resolver: resolver, FieldManager: ops.DefaultFieldManager, DeleteTimeout: time.Millisecond, Log: opts.Log}
	e.fin = finalizer.New(e.cluster, opts.Log)
	e.exec = &executor.Executor{
		Objects:  e.memory,
		Resolver: resolver,
		Runner:   &run.Runner{TmpDir: opts.TmpDir, Env: opts.Env, DefaultTimeout: opts.HookTimeout, Log: opts.Log},
		Sink:     e,
		Requeue:  e.requeue,
		Report:   e.report,
		Log:      opts.Log,
	}
	return e, nil
}

// Resolver resolves kinds offline: the built-in kinds of Kubernetes, those
// of the CustomResourceDefinitions among the fixture's objects, and its
// declared resources.
func Resolver(f *fixture.Fixture) (*kube.Resolver, error) {
	lists := [][]*metav1.APIResourceList{kube.BuiltinResources()}
	for i, obj := range f.Objects {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd, err := kube.ResourcesFromCRD(obj)
		if err != nil {
			return nil, fmt.Errorf("object %d (%s): %w", i, describe(obj), err)
		}
		lists = append(lists, crd)
	}
	var declared []*metav1.APIResourceList
	for _, r := range f.Resources {
		declared = append(declared, r.APIResourceList())
	}
	lists = append(lists, declared)
	return kube.NewStaticResolver(kube.MergeResources(lists...)), nil
}

func describe(obj *unstructured.Unstructured) string {
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s %s %s", obj.GetAPIVersion(), obj.GetKind(), name)
}

// replay runs start-up, Synchronization, then each event, each step until
// nothing more is to run.
func (e *engine) replay(ctx context.Context) error {
	for _, h := range executor.StartupOrder(e.opts.Hooks) {
		e.tasks = append(e.tasks, executor.StartupTask(h))
		if err := e.drain(ctx); err != nil {
			return err
		}
	}
	e.memory.Synchronize()
	if err := e.drain(ctx); err != nil {
		return err
	}
	for i, ev := range e.opts.Fixture.Events {
		if err := e.event(ctx, ev); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	return nil
}

// event applies one fixture event and runs what it causes.
func (e *engine) event(ctx context.Context, ev fixture.Event) error {
	switch {
	case ev.Schedule != "":
		return e.schedule(ctx, ev.Schedule, ev.Hook)
	case ev.Wait.Duration > 0:
		return e.wait(ctx, ev.Wait.Duration)
	case ev.Admission != nil:
		return e.admission(ctx, ev.Admission)
	case ev.Conversion != nil:
		return e.conversion(ctx, ev.Conversion)
	}
	obj := ev.Object
	res, err := e.resolver.Resolve(obj.GetAPIVersion(), obj.GetKind())
	if err != nil {
		return fmt.Errorf("%s: %w", describe(obj), err)
	}
	switch ev.Type {
	case "Added", "Modified":
		err = e.store(res, ev.Type, obj)
	case "Deleted":
		err = e.cluster.Resource(res.GVR).Namespace(obj.GetNamespace()).Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
	default:
		err = fmt.Errorf("unknown event type %q", ev.Type)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", ev.Type, describe(obj), err)
	}
	for _, c := range e.cluster.TakeChanges() {
		// A recorded deletion carries the resourceVersion the live watch
		// reported; the object then reads exactly as it did live.
		if rv := obj.GetResourceVersion(); c.Type == "Deleted" && rv != "" && c.New != nil &&
			c.New.GetNamespace() == obj.GetNamespace() && c.New.GetName() == obj.GetName() && c.Resource.GroupResource() == res.GVR.GroupResource() {
			c.New.SetResourceVersion(rv)
		}
		e.notify(c)
	}
	return e.drain(ctx)
}

// store puts an added or modified object into memory as the event gives
// it, resourceVersion and uid included (a recorded fixture's objects are
// then exactly those the live watch saw), and delivers the event.
func (e *engine) store(res kube.Resource, event string, obj *unstructured.Unstructured) error {
	cur, held := e.cluster.Get(res.GVR, obj.GetNamespace(), obj.GetName())
	switch {
	case event == "Added" && held:
		return fmt.Errorf("the object exists already (use Modified to change it)")
	case event == "Modified" && !held:
		return fmt.Errorf("the object does not exist (use Added to create it)")
	}
	next := obj.DeepCopy()
	if held {
		inherit(next, cur)
	}
	if err := e.cluster.Add(res.GVR, next); err != nil {
		return err
	}
	e.deliverChanges()
	stored, _ := e.cluster.Get(res.GVR, obj.GetNamespace(), obj.GetName())
	e.notify(memcluster.Change{Type: event, Resource: res.GVR, New: stored})
	return nil
}

// inherit completes a hand-written new version of cur with what the API
// server would keep or set: uid, creationTimestamp, and a generation that
// grows when more than metadata and status changed.
func inherit(next, cur *unstructured.Unstructured) {
	if next.GetUID() == "" {
		next.SetUID(cur.GetUID())
	}
	if ts := next.GetCreationTimestamp(); ts.IsZero() {
		next.SetCreationTimestamp(cur.GetCreationTimestamp())
	}
	if next.GetGeneration() == 0 && cur.GetGeneration() != 0 {
		gen := cur.GetGeneration()
		if !equality.Semantic.DeepEqual(content(next), content(cur)) {
			gen++
		}
		next.SetGeneration(gen)
	}
}

// content is an object without metadata and status.
func content(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" {
			out[k] = v
		}
	}
	return out
}

// admission runs the hook of the admission binding the event names with
// the event's request, as the webhook server would, and then what its
// operations cause. A hook that gives no answer counts as a failed run.
func (e *engine) admission(ctx context.Context, ev *fixture.AdmissionEvent) error {
	var target *hook.Hook
	var b hook.WebhookBinding
	mutating := false
	for _, h := range e.opts.Hooks {
		for _, list := range []struct {
			bindings []hook.WebhookBinding
			mutating bool
		}{{h.Config.Validating, false}, {h.Config.Mutating, true}} {
			for _, wb := range list.bindings {
				if wb.Name == ev.Binding {
					target, b, mutating = h, wb, list.mutating
				}
			}
		}
	}
	if target == nil {
		return fmt.Errorf("admission: no hook has a kubernetesValidating or kubernetesMutating binding named %q", ev.Binding)
	}
	e.seq++
	req := maps.Clone(ev.Request)
	if _, ok := req["uid"]; !ok {
		req["uid"] = fmt.Sprintf("replay-%d", e.seq)
	}
	review, err := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
	if err != nil {
		return err
	}
	e.summary.Runs++
	if _, err := e.exec.Admit(ctx, target, b, mutating, review, executor.AdmissionTimeout(b)); err != nil {
		e.summary.Failed++
		e.log.WithError(err).WithField("hook", target.Name).Warn("admission hook gave no answer")
	}
	return e.drain(ctx)
}

// conversion converts the event's objects through the chain of the hooks'
// conversion rules for its CRD, as the webhook server would, each step a
// run. A conversion that fails counts as a failed run.
func (e *engine) conversion(ctx context.Context, ev *fixture.ConversionEvent) error {
	var rules []webhook.ConversionRule
	targets := map[webhook.ConversionRule]struct {
		h *hook.Hook
		b hook.ConversionBinding
		r hook.ConversionRule
	}{}
	for _, h := range e.opts.Hooks {
		for _, b := range h.Config.Conversion {
			if b.CRDName != ev.CRD {
				continue
			}
			for _, r := range b.Conversions {
				wr := webhook.ConversionRule{From: r.FromVersion, To: r.ToVersion}
				if _, dup := targets[wr]; !dup {
					rules = append(rules, wr)
				}
				targets[wr] = struct {
					h *hook.Hook
					b hook.ConversionBinding
					r hook.ConversionRule
				}{h, b, r}
			}
		}
	}
	if len(rules) == 0 {
		return fmt.Errorf("conversion: no hook has a kubernetesCustomResourceConversion binding for CRD %q", ev.CRD)
	}
	e.seq++
	req := webhook.ConversionRequest{UID: fmt.Sprintf("replay-%d", e.seq), DesiredAPIVersion: ev.DesiredAPIVersion}
	for _, o := range ev.Objects {
		data, err := json.Marshal(o)
		if err != nil {
			return err
		}
		req.Objects = append(req.Objects, data)
	}
	ran := false
	_, err := webhook.Convert(ctx, ev.CRD, rules, req, func(ctx context.Context, _ string, rule webhook.ConversionRule, req webhook.ConversionRequest) ([]json.RawMessage, error) {
		t := targets[rule]
		e.summary.Runs++
		ran = true
		return e.exec.Convert(ctx, t.h, t.b, t.r, req, executor.ConversionTimeout)
	})
	if err != nil {
		if !ran {
			e.summary.Runs++
		}
		e.summary.Failed++
		e.log.WithError(err).WithField("crd", ev.CRD).Warn("conversion failed")
	}
	return e.drain(ctx)
}

// schedule queues a tick of every schedule binding named name (of hook
// hookName only, when given).
func (e *engine) schedule(ctx context.Context, name, hookName string) error {
	found := false
	for _, h := range e.opts.Hooks {
		if hookName != "" && h.Name != hookName {
			continue
		}
		for i := range h.Config.Schedule {
			s := &h.Config.Schedule[i]
			if s.Name == name {
				found = true
				e.tasks = append(e.tasks, executor.NewTask(h, &s.Common, executor.ScheduleContext(s)))
			}
		}
	}
	if !found {
		if hookName != "" {
			return fmt.Errorf("hook %q has no schedule binding named %q", hookName, name)
		}
		return fmt.Errorf("no hook has a schedule binding named %q", name)
	}
	return e.drain(ctx)
}

// drain runs queued tasks, in order, until none is left; the changes each
// run makes are delivered to the bindings before the next run.
func (e *engine) drain(ctx context.Context) error {
	e.ensureFinalizers(ctx)
	for len(e.tasks) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.summary.Runs >= e.opts.MaxRuns {
			return fmt.Errorf("stopped after %d runs: %w (do hooks keep changing what they watch? Raise the limit with --max-runs if this is expected)", e.summary.Runs, ErrTooManyRuns)
		}
		t := e.tasks[0]
		e.tasks = e.tasks[1:]
		e.summary.Runs++
		if err := e.exec.Execute(ctx, t); err != nil {
			e.summary.Failed++
			e.log.WithError(err).WithField("hook", t.Hook.Name).Warn("hook run failed; replay does not retry it")
		}
		e.ensureFinalizers(ctx)
		e.deliverChanges()
	}
	return nil
}

// deliverChanges hands the in-memory cluster's changes to the bindings.
// Changes are taken after each report, so those left here are the ones
// made outside runs (fixture events, finalizers added).
func (e *engine) deliverChanges() {
	for _, c := range e.cluster.TakeChanges() {
		e.notify(c)
	}
}

func (e *engine) notify(c memcluster.Change) {
	e.memory.Notify(c.Resource, c.Type, c.New)
}

// report prints a run and delivers its changes: taking them here ties each
// change to the run that made it.
func (e *engine) report(r executor.Report) {
	changes := e.cluster.TakeChanges()
	if e.opts.Report != nil {
		e.opts.Report(r, changes)
	}
	for _, c := range changes {
		e.notify(c)
	}
}

// ensureFinalizers adds the finalizers the bindings asked for.
func (e *engine) ensureFinalizers(ctx context.Context) {
	for len(e.ensure) > 0 {
		t := e.ensure[0]
		e.ensure = e.ensure[1:]
		if err := e.fin.Add(ctx, t); err != nil {
			e.log.WithError(err).WithField("object", t.String()).Warn("cannot add the finalizer")
		}
		e.deliverChanges()
	}
}

// sensor is where the bindings report: it queues their runs.
type sensor struct{ e *engine }

// Synchronization implements watch.Sink.
func (s sensor) Synchronization(b *watch.Binding, objects []binding.Object) {
	cfg := b.Config()
	if !cfg.ExecuteHookOnSynchronization {
		return
	}
	c := binding.Context{Binding: cfg.Name, Type: binding.TypeSynchronization, Objects: objects}
	s.e.tasks = append(s.e.tasks, executor.NewTask(b.Hook, &cfg.Common, c))
}

// Event implements watch.Sink.
func (s sensor) Event(b *watch.Binding, watchEvent string, obj binding.Object) {
	cfg := b.Config()
	c := binding.Context{Binding: cfg.Name, Type: binding.TypeEvent, WatchEvent: watchEvent, Object: &obj}
	s.e.tasks = append(s.e.tasks, executor.NewTask(b.Hook, &cfg.Common, c))
}

// EnsureFinalizer implements watch.Sink.
func (s sensor) EnsureFinalizer(b *watch.Binding, namespace, name string) {
	s.e.EnsureFinalizer(finalizer.Target{Resource: b.Resource().GVR, Namespace: namespace, Name: name, Finalizer: b.Config().Finalizer})
}

// EnsureFinalizer implements executor.Sink: the finalizer is added after
// the current delivery, as the live runtime adds it asynchronously.
func (e *engine) EnsureFinalizer(t finalizer.Target) {
	e.ensure = append(e.ensure, t)
}

// Apply implements executor.Sink.
func (e *engine) Apply(ctx context.Context, hookName string, operations []ops.Operation) error {
	return e.applier.ApplyFor(ctx, hookName, operations)
}

// RemoveFinalizer implements executor.Sink.
func (e *engine) RemoveFinalizer(ctx context.Context, t finalizer.Target) error {
	_, err := e.fin.Remove(ctx, t)
	return err
}
