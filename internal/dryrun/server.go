package dryrun

import (
	"context"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/transcript"
)

// Server is the server-side dry-run sink: every write is sent with
// dryRun=All. Reads go to the live cluster, except that an object a run
// deleted reads as gone for the rest of that run.
type Server struct {
	Live     dynamic.Interface
	Resolver ops.Resolver
	Options  transcript.Options
	Log      logrus.FieldLogger

	runs perRun[*recorder]
}

func (s *Server) recorder(ctx context.Context) *recorder {
	return s.runs.get(ctx, func() *recorder {
		return &recorder{opts: s.Options, deleted: map[string]bool{}}
	})
}

func (s *Server) client(ctx context.Context) dynamic.Interface {
	return &dryClient{live: s.Live, rec: s.recorder(ctx)}
}

// Apply implements executor.Sink.
func (s *Server) Apply(ctx context.Context, hookName string, operations []ops.Operation) error {
	return apply(ctx, s.client(ctx), s.Resolver, hookName, operations)
}

// EnsureFinalizer implements executor.Sink: it only logs.
func (s *Server) EnsureFinalizer(t finalizer.Target) { logFinalizer(s.Log, t) }

// RemoveFinalizer implements executor.Sink.
func (s *Server) RemoveFinalizer(ctx context.Context, t finalizer.Target) error {
	return removeFinalizer(ctx, s.client(ctx), s.Log, t)
}

// Changes returns, and forgets, what the API server answered to run id's
// writes.
func (s *Server) Changes(id uint64) []transcript.Change {
	r, ok := s.runs.take(id)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changes
}
