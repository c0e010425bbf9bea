package executor

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/listen"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/rbac"
)

// maxWarnedWrites bounds the hook, kind and namespace triples warned of
// once; past it the set starts again empty, the sampler still bounding
// the lines.
const maxWarnedWrites = 4096

// writeWarnings warns of operations outside their hook's declared writes
// once per hook, kind and namespace, and at most a few lines a minute in
// all: a hook writing to a new namespace each time cannot flood the log.
type writeWarnings struct {
	once    sync.Once
	sampler *listen.Sampler

	mu     sync.Mutex
	warned map[string]bool
}

// first reports whether key is warned of for the first time.
func (w *writeWarnings) first(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.warned[key] {
		return false
	}
	if w.warned == nil || len(w.warned) >= maxWarnedWrites {
		w.warned = map[string]bool{}
	}
	w.warned[key] = true
	return true
}

// checkWrites checks h's operations against the writes h declares (see
// rbac.Writes.Check). Each operation outside them is counted once. With
// RestrictWrites the error lists them and nothing may be applied; else
// they are warned of and the error is nil. A hook that declares no writes
// is checked only with RestrictWrites.
func (e *Executor) checkWrites(h *hook.Hook, operations []ops.Operation) error {
	if len(h.Config.Writes) == 0 && !e.RestrictWrites {
		return nil
	}
	outside := rbac.NewWrites(h.Config.Writes, e.Resolver).WithReads(h.Config.Kubernetes).Check(operations)
	if len(outside) == 0 {
		return nil
	}
	counted := -1
	for _, o := range outside {
		if o.Index != counted {
			e.Metrics.WriteOutside(h.Name, o.Reason)
			counted = o.Index
		}
	}
	declared := rbac.Describe(h.Config.Writes)
	if e.RestrictWrites {
		errs := make([]error, len(outside))
		for i, o := range outside {
			errs[i] = o
		}
		return &writesError{first: outside[0], err: fmt.Errorf("%w\nthe hook's writes: %s", limit.Join(errs), declared)}
	}
	e.warnWrites(h, outside, declared)
	return nil
}

// warnWrites warns of operations outside h's declared writes.
func (e *Executor) warnWrites(h *hook.Hook, outside []rbac.Outside, declared string) {
	w := &e.writesWarned
	w.once.Do(func() { w.sampler = listen.NewSampler(10, time.Minute) })
	for _, o := range outside {
		a := o.Access
		if !w.first(h.Name + "\x00" + a.APIVersion + "\x00" + a.Kind + "\x00" + a.Subresource + "\x00" + a.Namespace) {
			continue
		}
		w.sampler.Log(e.Log.WithFields(logrus.Fields{
			"hook": h.Name, "operation": o.Index, "kind": a.Kind, "namespace": a.Namespace, "reason": o.Reason, "writes": declared,
		}), logrus.WarnLevel, "an operation writes outside the hook's declared writes; applied (--restrict-writes would refuse it): "+o.Error())
	}
}

// writesError is the error of operations outside their hook's declared
// writes under RestrictWrites.
type writesError struct {
	first rbac.Outside
	err   error
}

func (e *writesError) Error() string { return e.err.Error() }
func (e *writesError) Unwrap() error { return e.err }

// writesStatus says what failed for an Event: which operation, of what
// type, and why in the words of the check; never the kind or namespace
// the hook wrote.
func writesStatus(err error) string {
	what := "the hook's operations write outside its declared writes (--restrict-writes); none were applied"
	var w *writesError
	if errors.As(err, &w) {
		typ, _, _ := strings.Cut(w.first.Op, " ")
		what += fmt.Sprintf(" (the first: operation %d, a %s, reason %s)", w.first.Index, limit.Quote(typ), w.first.Reason)
	}
	return what
}
