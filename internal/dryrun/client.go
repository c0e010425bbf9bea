// Package dryrun holds the sinks of `hook-operator start --dry-run`: the
// operator watches and runs hooks as usual, and their writes go here
// instead of to the cluster.
//
// Client applies each run's operations to an in-memory copy of the objects
// they touch, read from the live cluster, and reports diffs against the
// live objects. Server sends every write to the API server with dryRun=All
// and reports what it answered: the resulting object, or the rejection
// (schema validation, admission, conflicts). Neither changes the cluster,
// and Client needs no write permissions.
package dryrun

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/memcluster"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/transcript"
)

// deleteTimeout is how long a foreground Delete waits in a dry-run: the
// object is never going away, so it reports that at once.
const deleteTimeout = time.Millisecond

// Client is the client-side dry-run sink. Each run starts from the live
// cluster: what an earlier run would have written is not seen.
type Client struct {
	Live     dynamic.Interface
	Resolver ops.Resolver
	Options  transcript.Options
	Log      logrus.FieldLogger

	runs perRun[*memcluster.Cluster]
}

func (c *Client) cluster(ctx context.Context) *memcluster.Cluster {
	return c.runs.get(ctx, func() *memcluster.Cluster {
		return memcluster.New(memcluster.Options{ReadThrough: c.Live})
	})
}

// Apply implements executor.Sink.
func (c *Client) Apply(ctx context.Context, hookName string, operations []ops.Operation) error {
	return apply(ctx, c.cluster(ctx), c.Resolver, hookName, operations)
}

// EnsureFinalizer implements executor.Sink: it only logs.
func (c *Client) EnsureFinalizer(t finalizer.Target) { logFinalizer(c.Log, t) }

// RemoveFinalizer implements executor.Sink.
func (c *Client) RemoveFinalizer(ctx context.Context, t finalizer.Target) error {
	return removeFinalizer(ctx, c.cluster(ctx), c.Log, t)
}

// Changes returns, and forgets, what run id would have changed.
func (c *Client) Changes(id uint64) []transcript.Change {
	m, ok := c.runs.take(id)
	if !ok {
		return nil
	}
	return transcript.FromMemory(m.TakeChanges(), c.Options)
}

// The two sinks differ only in the client a run writes through: these
// are the writes themselves.

func apply(ctx context.Context, d dynamic.Interface, r ops.Resolver, hookName string, operations []ops.Operation) error {
	a := &ops.Applier{Dynamic: d, Resolver: r, FieldManager: ops.DefaultFieldManager, DeleteTimeout: deleteTimeout}
	return a.ApplyFor(ctx, hookName, operations)
}

func logFinalizer(log logrus.FieldLogger, t finalizer.Target) {
	log.WithField("object", t.String()).Info("dry-run: the finalizer would be added")
}

func removeFinalizer(ctx context.Context, d dynamic.Interface, log logrus.FieldLogger, t finalizer.Target) error {
	_, err := finalizer.New(d, log).Remove(ctx, t)
	return err
}
