package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/kube"
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
	// obj is the object a create type writes.
	obj *unstructured.Unstructured
	// pending marks a kind that a CRD created earlier in the file defines:
	// applying waits until the API server serves it.
	pending bool
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
//
// Apply is not a transaction: a failure leaves the operations before it
// applied, so hooks should write operations that can be applied again.
func (a *Applier) Apply(ctx context.Context, ops []Operation) error {
	steps, err := a.plan(ops)
	if err != nil {
		return err
	}
	for i, s := range steps {
		if err := ctx.Err(); err != nil {
			return &Error{Index: s.op.Index, Op: s.op.String(), Err: fmt.Errorf("not applied: %w%s", err, progress(i, len(steps)))}
		}
		var err error
		if s.pending {
			err = a.awaitServed(ctx, s)
		}
		if err == nil {
			err = a.apply(ctx, s)
		}
		if err != nil {
			return &Error{Index: s.op.Index, Op: s.op.String(), Err: fmt.Errorf("%w%s", err, progress(i, len(steps)))}
		}
	}
	return nil
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
			errs = append(errs, err)
			continue
		}
		steps = append(steps, s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return steps, nil
}

func (a *Applier) check(op Operation, earlier []Operation) (step, error) {
	if isCreate(op.Type) && op.Object != nil {
		o := op.Object
		op.APIVersion, op.Kind, op.Namespace, op.Name = o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName()
	}
	fail := func(field string, err error) (step, error) {
		if isCreate(op.Type) {
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
	res, err := a.Resolver.Resolve(op.APIVersion, op.Kind)
	pending := false
	if errors.Is(err, kube.ErrUnknownKind) {
		if res, pending = definedEarlier(earlier, op); pending {
			err = nil
		} else {
			return fail("kind", fmt.Errorf("%w; check the spelling, and that the kind's CRD is installed (or created earlier in this file)", err))
		}
	}
	if err != nil {
		return fail("kind", err)
	}
	op.APIVersion, op.Kind = res.APIVersion(), res.GVK.Kind
	switch {
	case res.Namespaced && op.Namespace == "":
		return fail("namespace", fmt.Errorf("required: %s is namespaced", op.Kind))
	case !res.Namespaced && op.Namespace != "":
		return fail("namespace", fmt.Errorf("must be empty: %s is cluster-scoped", op.Kind))
	}
	s := step{op: op, res: res, pending: pending}
	if isCreate(op.Type) {
		s.obj = newObject(op.Object, res)
	}
	return s, nil
}

// complete checks that an operation has what its type needs. Parse ensures
// it; this guards operations built in code.
func (op *Operation) complete() error {
	missing := func(field string) error {
		return fmt.Errorf("%s is missing (%s needs it)", field, op.Type)
	}
	switch {
	case isCreate(op.Type):
		if op.Object == nil {
			return missing("object")
		}
		if op.Name == "" && (op.Type != Create || op.Object.GetGenerateName() == "") {
			return missing("object.metadata.name")
		}
		return nil
	case isDelete(op.Type), isPatch(op.Type):
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

func (a *Applier) apply(ctx context.Context, s step) error {
	switch s.op.Type {
	case Create, CreateIfNotExists:
		return a.create(ctx, s)
	case CreateOrUpdate:
		return a.createOrUpdate(ctx, s)
	case Delete:
		return a.delete(ctx, s, metav1.DeletePropagationForeground)
	case DeleteInBackground:
		return a.delete(ctx, s, metav1.DeletePropagationBackground)
	case DeleteNonCascading:
		return a.delete(ctx, s, metav1.DeletePropagationOrphan)
	case MergePatch, JSONPatch:
		return a.patch(ctx, s)
	case JQPatch:
		return a.jqPatch(ctx, s)
	}
	return fmt.Errorf("unknown operation %q", s.op.Type)
}

func (a *Applier) client(s step) dynamic.ResourceInterface {
	r := a.Dynamic.Resource(s.res.GVR)
	if s.res.Namespaced {
		return r.Namespace(s.op.Namespace)
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
