package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/tracing"
)

// DefaultFieldManager is the field manager of every write when
// Applier.FieldManager is empty.
const DefaultFieldManager = "hook-operator"

// DefaultDeleteTimeout is how long a Delete waits for the object to be gone
// when Applier.DeleteTimeout is zero.
const DefaultDeleteTimeout = time.Minute

// Resolver is what Apply needs from internal/kube: *kube.Resolver, or a
// stand-in where no cluster is asked (dry-run, replay).
type Resolver interface {
	Resolve(apiVersion, kind string) (kube.Resource, error)
}

// Applier applies operations to a cluster.
type Applier struct {
	Dynamic  dynamic.Interface
	Resolver Resolver
	// FieldManager names the writer in managedFields; DefaultFieldManager
	// when empty.
	FieldManager string
	// DeleteTimeout bounds how long a Delete (foreground) waits for the
	// object, and so its blocking dependents, to be gone;
	// DefaultDeleteTimeout when zero.
	DeleteTimeout time.Duration
	// Log receives a record per operation applied; nothing is logged when nil.
	Log logrus.FieldLogger
	// Cached, when set, returns the resourceVersion of an object the
	// runtime's watch cache holds, or false. CreateOrUpdate then updates
	// it without trying to create it first: with that resourceVersion
	// alone when the kind's status cannot be lost by it (see
	// createOrUpdate), else after reading the object.
	Cached func(res kube.Resource, namespace, name string) (resourceVersion string, ok bool)
}

// conflictBackoff paces the retries of a read-modify-write that lost a race
// with another writer; the jitter keeps writers that collided from
// colliding again.
var conflictBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.5, Cap: time.Second}

// step is an operation checked against the cluster, ready to apply.
type step struct {
	// op has APIVersion and Kind as resolved, and for the create types its
	// target taken from Object.
	op  Operation
	res kube.Resource
	// obj is the object a create type or Apply writes.
	obj *unstructured.Unstructured
	// parent is the parent of Apply (or nil) and ApplySet.
	parent *target
	// children are the objects of ApplySet, as they are to be applied.
	children []child
	// pending lists kinds that CRDs created earlier in the file define:
	// applying waits until the API server serves them.
	pending []kube.Resource
}

// child is one object of an ApplySet.
type child struct {
	res kube.Resource
	obj *unstructured.Unstructured
}

// Check resolves and checks every operation against the cluster's API
// (kinds known, namespace given for namespaced kinds and absent for
// cluster-scoped ones) without writing anything. The error joins one *Error
// per operation that fails.
func (a *Applier) Check(ops []Operation) error {
	_, err := a.plan(ops)
	return err
}

// Apply checks every operation as Check does and applies nothing if any
// fails; then applies them in order and stops at the first error. Errors
// are *Error values naming the operation's index, type and target and the
// reason; an apply error also says which operations were applied.
// Requeue operations are checked but not applied: running the hook again
// is the runtime's business, which schedules them once the other
// operations of the file are applied.
//
// Apply is not a transaction: a failure leaves the operations before it
// applied, so hooks should write operations that can be applied again.
func (a *Applier) Apply(ctx context.Context, ops []Operation) error {
	return a.ApplyFor(ctx, "", ops)
}

// ApplyFor is Apply for the operations of the hook hookName (its path under
// the hooks folder, "db/sampledb.sh"): Apply and ApplySet write under a
// field manager of the hook's own (see FieldManagerFor), so that two hooks
// applying the same object conflict instead of undoing each other's fields,
// and ApplySet's sets are the hook's own.
func (a *Applier) ApplyFor(ctx context.Context, hookName string, ops []Operation) error {
	steps, err := a.plan(ops)
	if err != nil {
		return err
	}
	steps = slices.DeleteFunc(steps, func(s step) bool { return s.op.Type == Requeue })
	// Foreground deletions started and not yet waited for: consecutive
	// Delete operations are waited for together, before the next other
	// operation and at the end.
	var deleting []step
	last := -1 // the position of the last of them
	settle := func() error {
		if len(deleting) == 0 {
			return nil
		}
		err := a.waitGone(ctx, deleting)
		deleting = deleting[:0]
		var g *goneError
		if errors.As(err, &g) {
			return &Error{Index: g.s.op.Index, Op: g.s.op.String(), Err: fmt.Errorf("%w%s", err, progress(last, len(steps)))}
		}
		return err
	}
	for i, s := range steps {
		if err := ctx.Err(); err != nil {
			return &Error{Index: s.op.Index, Op: s.op.String(), Err: fmt.Errorf("not applied: %w%s", err, progress(i, len(steps)))}
		}
		if s.op.Type != Delete {
			if err := settle(); err != nil {
				return err
			}
		}
		sctx, span := traceStep(ctx, s)
		err := a.awaitServed(sctx, s)
		if err == nil && s.op.Type == Delete {
			var started bool
			if started, err = a.delete(sctx, s, metav1.DeletePropagationForeground); started {
				deleting = append(deleting, s)
				last = i
			}
		} else if err == nil {
			err = a.apply(sctx, s, hookName)
		}
		endStep(span, err)
		if errors.Is(err, errParentGone) {
			// The parent was deleted (often while the run was pending or
			// retried with its old contexts): children applied now would be
			// garbage-collected at once, and failing would hold the queue
			// until a restart.
			a.log(s).WithError(err).Warn("the parent is gone; operation skipped")
			continue
		}
		if err != nil {
			if apierrors.IsForbidden(err) {
				err = fmt.Errorf("%w (the operator's ServiceAccount may not do this: declare the write under writes in the hook's configuration and regenerate its RBAC with hook-operator rbac)", err)
			}
			return &Error{Index: s.op.Index, Op: s.op.String(), Err: fmt.Errorf("%w%s", err, progress(i, len(steps)))}
		}
	}
	return settle()
}

// progress tells, after the error of the i-th of n operations, which ones
// took effect.
func progress(i, n int) string {
	phrase := func(k int, where string) string {
		if k == 1 {
			return "the operation " + where + " it was"
		}
		return fmt.Sprintf("the %d operations %s it were", k, where)
	}
	before, after := i, n-i-1
	switch {
	case before == 0 && after == 0:
		return ""
	case before == 0:
		return " (" + phrase(after, "after") + " not applied)"
	case after == 0:
		return " (" + phrase(before, "before") + " applied)"
	}
	return " (" + phrase(before, "before") + " applied, " + phrase(after, "after") + " not)"
}

func (a *Applier) plan(ops []Operation) ([]step, error) {
	var errs []error
	steps := make([]step, 0, len(ops))
	for i, op := range ops {
		s, err := a.check(op, ops[:i])
		if err != nil {
			// An ApplySet reports each of its objects' problems.
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = append(errs, j.Unwrap()...)
			} else {
				errs = append(errs, err)
			}
			continue
		}
		steps = append(steps, s)
	}
	if len(errs) > 0 {
		return nil, limit.Join(errs)
	}
	return steps, nil
}

func (a *Applier) check(op Operation, earlier []Operation) (step, error) {
	if takesObject(op.Type) && op.Object != nil {
		o := op.Object
		op.APIVersion, op.Kind, op.Namespace, op.Name = o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName()
	}
	fail := func(field string, err error) (step, error) {
		if takesObject(op.Type) {
			switch field {
			case "kind":
				field = "object.kind"
			case "namespace":
				field = "object.metadata.namespace"
			}
		}
		return step{}, &Error{Index: op.Index, Op: op.String(), Field: field, Err: err}
	}
	if err := op.complete(); err != nil {
		return fail("", err)
	}
	switch {
	case op.Type == ApplySet:
		return a.checkApplySet(op, earlier)
	case op.Type == Requeue && op.Kind == "":
		// The runtime finds the kind from the binding.
		return step{op: op}, nil
	}
	res, pending, err := a.resolve(op.APIVersion, op.Kind, earlier)
	if err != nil {
		return fail("kind", err)
	}
	op.APIVersion, op.Kind = res.APIVersion(), res.GVK.Kind
	if err := checkScope(res, op.Namespace); err != nil {
		return fail("namespace", err)
	}
	s := step{op: op, res: res}
	if pending {
		s.pending = append(s.pending, res)
	}
	if takesObject(op.Type) {
		s.obj = newObject(op.Object, res)
	}
	if op.Parent != nil {
		parent, pending, field, err := a.checkParent(op.Parent, earlier)
		if err != nil {
			return fail(field, err)
		}
		if err := checkOwnership(parent, target{res: res, namespace: op.Namespace, name: op.Name}); err != nil {
			return fail("parent", err)
		}
		s.parent = &parent
		if pending {
			s.pending = append(s.pending, parent.res)
		}
	}
	return s, nil
}

// resolve resolves a kind, or finds the CRD created earlier in the file
// that defines it (pending: not served yet).
func (a *Applier) resolve(apiVersion, kind string, earlier []Operation) (res kube.Resource, pending bool, err error) {
	res, err = a.Resolver.Resolve(apiVersion, kind)
	if errors.Is(err, kube.ErrUnknownKind) {
		if res, ok := definedEarlier(earlier, apiVersion, kind); ok {
			return res, true, nil
		}
		return res, false, fmt.Errorf("%w; check the spelling, and that the kind's CRD is installed (or created earlier in this file)", err)
	}
	return res, false, err
}

// checkScope checks that namespace is given exactly when res is namespaced.
func checkScope(res kube.Resource, namespace string) error {
	switch {
	case res.Namespaced && namespace == "":
		return fmt.Errorf("required: %s is namespaced", res.GVK.Kind)
	case !res.Namespaced && namespace != "":
		return fmt.Errorf("must be empty: %s is cluster-scoped", res.GVK.Kind)
	}
	return nil
}

// checkParent resolves a parent; on error, field is the parent's field at
// fault.
func (a *Applier) checkParent(ref *ObjectRef, earlier []Operation) (t target, pending bool, field string, err error) {
	res, pending, err := a.resolve(ref.APIVersion, ref.Kind, earlier)
	if err != nil {
		return t, false, "parent.kind", err
	}
	if err := checkScope(res, ref.Namespace); err != nil {
		return t, false, "parent.namespace", err
	}
	return target{res: res, namespace: ref.Namespace, name: ref.Name}, pending, "", nil
}

// complete checks that an operation has what its type needs. Parse ensures
// it; this guards operations built in code.
func (op *Operation) complete() error {
	missing := func(field string) error {
		return fmt.Errorf("%s is missing (%s needs it)", field, op.Type)
	}
	switch {
	case takesObject(op.Type):
		if op.Object == nil {
			return missing("object")
		}
		if op.Name == "" && (op.Type != Create || op.Object.GetGenerateName() == "") {
			return missing("object.metadata.name")
		}
		return op.completeParent()
	case op.Type == ApplySet:
		if op.SetName == "" {
			return missing("name")
		}
		if op.Parent == nil {
			return missing("parent")
		}
		for i, o := range op.Objects {
			if o == nil {
				return missing(fmt.Sprintf("objects[%d]", i))
			}
		}
		return op.completeParent()
	case op.Type == Requeue:
		if op.After <= 0 || op.After > maxRequeueAfter {
			return fmt.Errorf("after is %s; it must be more than 0 and at most %s", op.After, maxRequeueAfter)
		}
		if op.Name == "" {
			return missing("name")
		}
		return nil
	case isDelete(op.Type), isPatch(op.Type), op.Type == Status:
	default:
		return fmt.Errorf("unknown operation %q", op.Type)
	}
	switch {
	case op.Kind == "":
		return missing("kind")
	case op.Name == "":
		return missing("name")
	case op.Type == MergePatch && len(op.MergePatch) == 0:
		return missing("mergePatch")
	case op.Type == JSONPatch && len(op.JSONPatch) == 0:
		return missing("jsonPatch")
	case op.Type == JQPatch && op.JQFilter == nil:
		return missing("jqFilter")
	case op.Type == Status && op.Status == nil:
		return missing("status")
	}
	return nil
}

func (op *Operation) completeParent() error {
	switch {
	case op.Parent == nil:
		return nil
	case op.Parent.Kind == "":
		return fmt.Errorf("parent.kind is missing")
	case op.Parent.Name == "":
		return fmt.Errorf("parent.name is missing")
	}
	return nil
}

// serverFields are metadata fields only the API server sets.
var serverFields = []string{
	"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields",
	"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds",
}

// newObject returns the object a create type writes: a copy of obj with the
// resolved apiVersion and kind.
func newObject(obj *unstructured.Unstructured, res kube.Resource) *unstructured.Unstructured {
	o := obj.DeepCopy()
	o.SetAPIVersion(res.APIVersion())
	o.SetKind(res.GVK.Kind)
	// Hooks often write back an object from their binding context; the
	// fields the server set on it would make the create or update fail
	// (a resourceVersion, a uid of an object since recreated) or overwrite
	// the live ones (managedFields).
	for _, f := range serverFields {
		unstructured.RemoveNestedField(o.Object, "metadata", f)
	}
	return o
}

// apply applies one step of every type but Delete, whose deletions ApplyFor
// starts and waits for itself (consecutive ones together).
func (a *Applier) apply(ctx context.Context, s step, hookName string) error {
	switch s.op.Type {
	case Create, CreateIfNotExists:
		return a.create(ctx, s)
	case CreateOrUpdate:
		return a.createOrUpdate(ctx, s)
	case DeleteInBackground:
		_, err := a.delete(ctx, s, metav1.DeletePropagationBackground)
		return err
	case DeleteNonCascading:
		_, err := a.delete(ctx, s, metav1.DeletePropagationOrphan)
		return err
	case MergePatch, JSONPatch:
		return a.patch(ctx, s)
	case JQPatch:
		return a.jqPatch(ctx, s)
	case Apply:
		return a.serverSideApply(ctx, s, hookName)
	case ApplySet:
		return a.applySet(ctx, s, hookName)
	case Status:
		return a.status(ctx, s)
	}
	return fmt.Errorf("unknown operation %q", s.op.Type)
}

func (a *Applier) client(s step) dynamic.ResourceInterface {
	return a.clientFor(target{res: s.res, namespace: s.op.Namespace})
}

func (a *Applier) clientFor(t target) dynamic.ResourceInterface {
	r := a.Dynamic.Resource(t.res.GVR)
	if t.res.Namespaced {
		return r.Namespace(t.namespace)
	}
	return r
}

func (a *Applier) fieldManager() string {
	if a.FieldManager == "" {
		return DefaultFieldManager
	}
	return a.FieldManager
}

var discardLog = &logrus.Logger{Out: io.Discard, Formatter: new(logrus.TextFormatter), Hooks: make(logrus.LevelHooks), Level: logrus.PanicLevel}

func (a *Applier) log(s step) logrus.FieldLogger {
	l := a.Log
	if l == nil {
		l = discardLog
	}
	return l.WithFields(logrus.Fields{"operation": s.op.Index, "op": s.op.String()})
}

// subresources returns the subresource argument of dynamic client calls.
func subresources(s step) []string {
	if s.op.Subresource == "" {
		return nil
	}
	return []string{s.op.Subresource}
}

// traceStep starts the span of applying s when ctx's span records (with
// tracing on), and otherwise returns ctx and a span that records nothing,
// allocating nothing.
func traceStep(ctx context.Context, s step) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, trace.SpanFromContext(ctx)
	}
	attrs := []attribute.KeyValue{
		attribute.String("operation.type", s.op.Type), attribute.Int("operation.index", s.op.Index),
		attribute.String("k8s.object.kind", s.res.GVK.Kind), attribute.String("k8s.object.api_version", s.res.APIVersion()),
		attribute.String("k8s.namespace.name", s.op.Namespace), attribute.String("k8s.object.name", s.op.Name),
	}
	if s.op.Subresource != "" {
		attrs = append(attrs, attribute.String("k8s.subresource", s.op.Subresource))
	}
	if s.op.Type == ApplySet {
		attrs = append(attrs, attribute.Int("operation.children", len(s.children)))
	}
	return tracing.Child(ctx, tracing.SpanOperation, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endStep ends a step's span with its result: applied, skipped (the
// parent is gone) or failed.
func endStep(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	result := "applied"
	switch {
	case errors.Is(err, errParentGone):
		result, err = "skipped", nil
	case err != nil:
		result = "failed"
	}
	span.SetAttributes(attribute.String("operation.result", result))
	tracing.End(span, err)
}
