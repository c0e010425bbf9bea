// Package manager starts and stops the parts of the process in a stated
// order. Parts are runnables in two groups: Always (servers, the
// hooks-folder watcher, ring membership, sharded hooks), which runs for
// the whole life of the process, and Leading (the hooks that run on the
// leader only), which runs while this replica leads. With no elector the
// Leading group starts as soon as the Always group has; with one, the
// elector only decides when it starts.
//
// The order, which callers may rely on:
//   - Start: each group's runnables start one after another, in the order
//     they were added, each once the one before it said it started; the
//     elector (or, without one, the Leading group) starts once every
//     Always runnable has started.
//   - Stop: the Leading group stops first, then the Always group, each
//     runnable in the reverse of its start order and only after the one
//     started after it has returned; the elector stops last, so that a
//     held Lease is released only once nothing of this replica runs.
//   - A lost Lease stops the Leading group at once (its context's cause is
//     ErrLeaseLost, so hooks stop without a grace period), then the Always
//     group, and Run returns ErrLeaseLost.
//   - A runnable that returns an error stops the others in the same order,
//     and Run returns that error.
//
// The model is controller-runtime's pkg/manager (runnable groups, and its
// leader election stopping the leader's runnables when the lease is lost).
package manager

import (
	"context"
	"errors"
	"sync"

	"github.com/sirupsen/logrus"
)

// ErrLeaseLost is what Run returns after this replica lost its Lease, and
// the cause of the Leading group's context then: its hooks were stopped
// at once, and the process exits so that it starts again as a standby.
var ErrLeaseLost = errors.New("leader election: the Lease could not be renewed, so hooks were stopped; exiting to start again as a standby")

// Runnable is one part of the process, as in controller-runtime's
// manager: Start runs it until ctx ends and returns once it has stopped;
// an error stops the manager. A part that takes a while to come up
// (listening, starting its hooks) says when it has by implementing
// StartNotifier; any other counts as started once Start is called.
type Runnable interface {
	Start(ctx context.Context) error
}

// StartNotifier is a Runnable that says when it has come up: Started is
// closed then. The manager starts what comes after it once Started is
// closed or Start has returned, whichever is first.
type StartNotifier interface {
	Runnable
	Started() <-chan struct{}
}

// Group says when a runnable runs.
type Group int

const (
	// Always runnables run from start to stop.
	Always Group = iota
	// Leading runnables run while this replica leads: from when the
	// elector has the Lease, or from the start without an elector.
	Leading
)

// Elector decides when the Leading group runs (election.Elector).
type Elector interface {
	// Run campaigns until ctx ends; once the Lease is held it calls lead
	// with a context that ends when the Lease is lost (or ctx ends), and
	// releases the Lease when ctx ends while leading.
	Run(ctx context.Context, lead func(leading context.Context))
}

// Options configure a Manager.
type Options struct {
	// Elector, when set, starts the Leading group once it leads; nil
	// starts it at once.
	Elector Elector
	Log     logrus.FieldLogger
}

// Manager runs the groups of runnables. Add every runnable before Run.
type Manager struct {
	opts   Options
	groups [2][]named
	// leading is set while the Leading group runs.
	mu      sync.Mutex
	leading bool
}

// New returns a manager with no runnables.
func New(opts Options) *Manager {
	if opts.Log == nil {
		opts.Log = logrus.StandardLogger()
	}
	return &Manager{opts: opts}
}

// named is a runnable and its name in the log.
type named struct {
	name string
	r    Runnable
}

// Add adds r to group g, to start after those added before it; name
// names it in the log.
func (m *Manager) Add(g Group, name string, r Runnable) {
	m.groups[g] = append(m.groups[g], named{name: name, r: r})
}

// Leading reports whether the Leading group runs now.
func (m *Manager) Leading() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leading
}

func (m *Manager) setLeading(v bool) {
	m.mu.Lock()
	m.leading = v
	m.mu.Unlock()
}

// Run starts the groups and runs until ctx ends, the Lease is lost, or a
// runnable fails; then it stops everything in order (see the package doc)
// and returns nil, ErrLeaseLost, or the first runnable's error.
func (m *Manager) Run(ctx context.Context) error {
	failed := make(chan error, len(m.groups[Always])+len(m.groups[Leading]))
	always := &running{log: m.opts.Log, failed: failed}
	leading := &running{log: m.opts.Log, failed: failed}
	err := always.start(ctx, m.groups[Always], nil)
	stopElecting, electorDone := func() {}, make(chan struct{})
	close(electorDone)
	if err == nil && ctx.Err() == nil {
		var leads <-chan context.Context
		leads, electorDone, stopElecting = m.elect()
		err = m.lead(ctx, leads, leading, failed)
	}
	cause := context.Canceled
	if errors.Is(err, ErrLeaseLost) {
		cause = ErrLeaseLost
		m.opts.Log.Warn("leader election: the Lease was lost; stopping the leader's hooks at once")
	}
	if e := leading.stop(cause); err == nil {
		err = e
	}
	m.setLeading(false)
	if e := always.stop(context.Canceled); err == nil {
		err = e
	}
	stopElecting()
	<-electorDone
	return err
}

// elect starts the elector, or, without one, hands out a lead at once.
// leads delivers the context of the lead; stop ends the campaign, and
// done is closed once the elector returned (a held Lease released).
func (m *Manager) elect() (leads <-chan context.Context, done chan struct{}, stop func()) {
	ch := make(chan context.Context, 1)
	done = make(chan struct{})
	if m.opts.Elector == nil {
		ch <- context.Background()
		close(done)
		return ch, done, func() {}
	}
	// The campaign's context ends only once the groups have stopped, so
	// that the Lease is released after them, not before.
	ectx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(done)
		m.opts.Elector.Run(ectx, func(leading context.Context) {
			select {
			case ch <- leading:
			case <-ectx.Done():
			}
		})
	}()
	return ch, done, cancel
}

// lead waits until this replica leads, starts the Leading group and runs
// until ctx ends (nil), the Lease is lost (ErrLeaseLost) or a runnable
// fails (its error).
func (m *Manager) lead(ctx context.Context, leads <-chan context.Context, leading *running, failed <-chan error) error {
	var lead context.Context
	select {
	case err := <-failed: // one that failed as the group started stops it first
		return err
	default:
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-failed:
		return err
	case lead = <-leads:
	}
	m.setLeading(true)
	if err := leading.start(ctx, m.groups[Leading], lead.Done()); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case <-lead.Done():
		return ErrLeaseLost
	case err := <-failed:
		return err
	}
}

// running is one group's runnables that started, in start order.
type running struct {
	log    logrus.FieldLogger
	failed chan error
	parts  []*part
}

// part is one started runnable.
type part struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
	// err is the error Start returned; read it once done is closed.
	err error
}

// start starts rs one after another, each once the one before it has
// started. It returns early when ctx ends (nil), lost is closed
// (ErrLeaseLost), or a runnable fails meanwhile (its error).
func (g *running) start(ctx context.Context, rs []named, lost <-chan struct{}) error {
	for _, r := range rs {
		pctx, cancel := context.WithCancelCause(context.Background())
		p := &part{cancel: cancel, done: make(chan struct{})}
		g.parts = append(g.parts, p)
		log := g.log.WithField("runnable", r.name)
		log.Debug("starting")
		go func() {
			defer log.Debug("stopped")
			err := r.r.Start(pctx)
			if err != nil && pctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.Cause(pctx))) {
				err = nil // it stopped because it was asked to
			}
			p.err = err
			close(p.done)
			if p.err != nil {
				g.failed <- p.err
			}
		}()
		select {
		case <-started(r.r):
		case <-p.done:
		case <-ctx.Done():
			return nil
		case <-lost:
			return ErrLeaseLost
		case err := <-g.failed:
			return err
		}
		select {
		case <-p.done:
			if p.err != nil {
				return p.err // it failed instead of starting
			}
		default:
		}
	}
	return nil
}

// upAtOnce is the Started of a runnable that is no StartNotifier.
var upAtOnce = func() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// started returns the channel closed once r has come up.
func started(r Runnable) <-chan struct{} {
	if n, ok := r.(StartNotifier); ok {
		return n.Started()
	}
	return upAtOnce
}

// stop stops the started runnables in the reverse of their start order,
// each once the one after it has returned, with cause as their context's
// cause. It returns the first error one returned.
func (g *running) stop(cause error) error {
	var first error
	for i := len(g.parts) - 1; i >= 0; i-- {
		p := g.parts[i]
		p.cancel(cause)
		<-p.done
		if first == nil {
			first = p.err
		}
	}
	return first
}
