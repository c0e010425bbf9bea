package executor

import (
	"context"

	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/ops"
)

// Sink is where the runtime's writes go: every operation of a hook, and
// the finalizers of bindings with the finalizer option. The live operator
// writes to the cluster (ClusterSink); dry-run writes to memory or sends
// dry-run requests; replay writes to its in-memory cluster. It is one of
// the two seams between those forms; the other is Objects.
type Sink interface {
	// Apply applies a hook's validated operations (see ops.Applier.ApplyFor).
	Apply(ctx context.Context, hookName string, operations []ops.Operation) error
	// EnsureFinalizer asks that t's finalizer be added to its object. It
	// must not block: the watch calls it.
	EnsureFinalizer(t finalizer.Target)
	// RemoveFinalizer removes t's finalizer once its Finalize run succeeded.
	RemoveFinalizer(ctx context.Context, t finalizer.Target) error
}

// ClusterSink writes to the cluster: operations through an ops.Applier,
// finalizers through a finalizer.Manager (whose Run must be going).
type ClusterSink struct {
	Applier    *ops.Applier
	Finalizers *finalizer.Manager
}

// Apply implements Sink.
func (s *ClusterSink) Apply(ctx context.Context, hookName string, operations []ops.Operation) error {
	return s.Applier.ApplyFor(ctx, hookName, operations)
}

// EnsureFinalizer implements Sink.
func (s *ClusterSink) EnsureFinalizer(t finalizer.Target) { s.Finalizers.Ensure(t) }

// RemoveFinalizer implements Sink.
func (s *ClusterSink) RemoveFinalizer(ctx context.Context, t finalizer.Target) error {
	_, err := s.Finalizers.Remove(ctx, t)
	return err
}
