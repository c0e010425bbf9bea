package manager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// deadline bounds every wait of these tests: generous, as none of them
// waits for time, only for what the manager does.
const deadline = 30 * time.Second

// trace records what the runnables and the elector did, in order.
type trace struct {
	mu     sync.Mutex
	events []string
	// changed is closed at each new event.
	changed chan struct{}
}

func newTrace() *trace { return &trace{changed: make(chan struct{})} }

func (tr *trace) add(e string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.events = append(tr.events, e)
	close(tr.changed)
	tr.changed = make(chan struct{})
}

func (tr *trace) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.events)
}

// waitFor waits until e has happened.
func (tr *trace) waitFor(t *testing.T, e string) {
	t.Helper()
	timeout := time.After(deadline)
	for {
		tr.mu.Lock()
		has, changed := slices.Contains(tr.events, e), tr.changed
		tr.mu.Unlock()
		if has {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%q did not happen; happened: %v", e, tr.get())
		}
	}
}

// testPart is a Runnable made of a function, which it hands a function
// that says it has started.
type testPart struct {
	run     func(ctx context.Context, started func()) error
	started chan struct{}
	once    sync.Once
}

func newPart(run func(ctx context.Context, started func()) error) *testPart {
	return &testPart{run: run, started: make(chan struct{})}
}

func (p *testPart) Start(ctx context.Context) error {
	return p.run(ctx, func() { p.once.Do(func() { close(p.started) }) })
}

func (p *testPart) Started() <-chan struct{} { return p.started }

// runnable records its start, that it started, and its stop with the
// cause of its context. It starts at once unless hold is set, in which
// case it starts when hold is closed.
func (tr *trace) runnable(name string, hold chan struct{}) Runnable {
	return newPart(func(ctx context.Context, started func()) error {
		tr.add("start " + name)
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
				tr.add("stop " + name + " while starting")
				return ctx.Err()
			}
		}
		// Recorded before the manager hears of it: once told, the manager
		// may start what comes next (the elector's "campaign") at once.
		tr.add("started " + name)
		started()
		<-ctx.Done()
		cause := "stop"
		if errors.Is(context.Cause(ctx), ErrLeaseLost) {
			cause = "stop at once"
		}
		tr.add(cause + " " + name)
		return nil
	})
}

// elector is a fake Elector: it leads when lead is closed, and the test
// loses the Lease with lose. It records a release (its context ended while
// leading) and its return.
type elector struct {
	tr         *trace
	lead, lose chan struct{}
}

func newElector(tr *trace) *elector {
	return &elector{tr: tr, lead: make(chan struct{}), lose: make(chan struct{})}
}

func (e *elector) Run(ctx context.Context, lead func(leading context.Context)) {
	e.tr.add("campaign")
	defer e.tr.add("elector returned")
	select {
	case <-e.lead:
	case <-ctx.Done():
		return
	}
	leading, cancel := context.WithCancel(ctx)
	defer cancel()
	e.tr.add("leads")
	go lead(leading)
	select {
	case <-ctx.Done():
		e.tr.add("release")
	case <-e.lose:
		e.tr.add("lost")
	}
}

// run runs m in the background; the returned function waits for its error.
func run(t *testing.T, ctx context.Context, m *Manager) func() error {
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return func() error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(deadline):
			t.Fatal("Run did not return")
			return nil
		}
	}
}

// start runs m in the background; the returned function stops it as
// SIGTERM does, cancelling Run's context, and wants Run to return nil.
func start(t *testing.T, m *Manager) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wait := run(t, ctx, m)
	return func() {
		t.Helper()
		cancel()
		if err := wait(); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

// check wants the trace to hold want, in order, and nothing else.
func check(t *testing.T, tr *trace, want ...string) {
	t.Helper()
	wantHappened(t, tr.get(), want...)
}

func wantHappened(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("happened:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// serverAndHooks is a manager with an elector, a runnable "server" in the
// always group and "hooks" in the leading group, which hold (if not nil)
// keeps starting; the trace records what they and the elector do.
func serverAndHooks(hold chan struct{}) (*trace, *elector, *Manager) {
	tr := newTrace()
	e := newElector(tr)
	m := New(Options{Elector: e})
	m.Add(Always, "server", tr.runnable("server", nil))
	m.Add(Leading, "hooks", tr.runnable("hooks", hold))
	return tr, e, m
}

func TestStartAndStopInOrder(t *testing.T) {
	tr := newTrace()
	m := New(Options{})
	m.Add(Leading, "hooks", tr.runnable("hooks", nil))
	m.Add(Always, "server", tr.runnable("server", nil))
	m.Add(Always, "sharded", tr.runnable("sharded", nil))
	m.Add(Leading, "late", tr.runnable("late", nil))
	stop := start(t, m)
	tr.waitFor(t, "started late")
	if !m.Leading() {
		t.Error("Leading() is false while the leading group runs without an elector")
	}
	stop()
	check(t, tr,
		"start server", "started server", "start sharded", "started sharded",
		"start hooks", "started hooks", "start late", "started late",
		"stop late", "stop hooks", "stop sharded", "stop server")
	if m.Leading() {
		t.Error("Leading() is true after Run returned")
	}
}

// The elector starts once the always group has; the leading group starts
// when it leads; on a stop the Lease is released only after every group
// stopped.
func TestElectorDecidesTheLeadingGroup(t *testing.T) {
	tr, e, m := serverAndHooks(nil)
	stop := start(t, m)
	tr.waitFor(t, "campaign")
	if m.Leading() {
		t.Error("Leading() is true before the elector leads")
	}
	close(e.lead)
	tr.waitFor(t, "started hooks")
	if !m.Leading() {
		t.Error("Leading() is false while leading")
	}
	stop()
	check(t, tr, "start server", "started server", "campaign", "leads", "start hooks", "started hooks",
		"stop hooks", "stop server", "release", "elector returned")
}

// A standby that is stopped never starts the leading group.
func TestStandbyStops(t *testing.T) {
	tr, _, m := serverAndHooks(nil)
	stop := start(t, m)
	tr.waitFor(t, "campaign")
	stop()
	check(t, tr, "start server", "started server", "campaign", "stop server", "elector returned")
}

// SIGTERM while a runnable starts: it is stopped, then those started
// before it; nothing after it starts, the elector included.
func TestStopDuringStartUp(t *testing.T) {
	tr := newTrace()
	m := New(Options{Elector: newElector(tr)})
	m.Add(Always, "server", tr.runnable("server", nil))
	m.Add(Always, "sharded", tr.runnable("sharded", make(chan struct{})))
	m.Add(Always, "watcher", tr.runnable("watcher", nil))
	m.Add(Leading, "hooks", tr.runnable("hooks", nil))
	stop := start(t, m)
	tr.waitFor(t, "start sharded")
	stop()
	check(t, tr, "start server", "started server", "start sharded", "stop sharded while starting", "stop server")
}

// SIGTERM while the leading group starts stops it, then the always group,
// then releases the Lease.
func TestStopWhileTheLeadingGroupStarts(t *testing.T) {
	tr, e, m := serverAndHooks(make(chan struct{}))
	stop := start(t, m)
	close(e.lead)
	tr.waitFor(t, "start hooks")
	stop()
	check(t, tr, "start server", "started server", "campaign", "leads", "start hooks",
		"stop hooks while starting", "stop server", "release", "elector returned")
}

// A lost Lease stops the leading group at once (its context's cause says
// so), then the always group; Run returns ErrLeaseLost and nothing is
// released.
func TestLostLease(t *testing.T) {
	tr, e, m := serverAndHooks(nil)
	wait := run(t, context.Background(), m)
	close(e.lead)
	tr.waitFor(t, "started hooks")
	close(e.lose)
	if err := wait(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Run: %v, want ErrLeaseLost", err)
	}
	// The elector returns when it lost the Lease, while the groups stop.
	wantHappened(t, slices.DeleteFunc(tr.get(), func(e string) bool { return e == "elector returned" }),
		"start server", "started server", "campaign", "leads", "start hooks", "started hooks",
		"lost", "stop at once hooks", "stop server")
}

// A Lease lost while the leading group starts stops it at once too.
func TestLostLeaseWhileTheLeadingGroupStarts(t *testing.T) {
	tr, e, m := serverAndHooks(make(chan struct{}))
	wait := run(t, context.Background(), m)
	close(e.lead)
	tr.waitFor(t, "start hooks")
	close(e.lose)
	if err := wait(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Run: %v, want ErrLeaseLost", err)
	}
	if got := tr.get(); slices.Contains(got, "started hooks") || slices.Index(got, "stop hooks while starting") > slices.Index(got, "stop server") {
		t.Errorf("happened: %v; want the hooks stopped while starting, before the server", got)
	}
}

// A runnable that fails stops the others in the stop order, and Run
// returns its error.
func TestFailingRunnableStopsTheOthers(t *testing.T) {
	tr := newTrace()
	e := newElector(tr)
	m := New(Options{Elector: e})
	fail := make(chan struct{})
	m.Add(Always, "server", tr.runnable("server", nil))
	m.Add(Always, "watcher", newPart(func(ctx context.Context, started func()) error {
		started()
		<-fail
		tr.add("watcher failed")
		return errors.New("inotify: too many watches")
	}))
	m.Add(Always, "sharded", tr.runnable("sharded", nil))
	m.Add(Leading, "hooks", tr.runnable("hooks", nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait := run(t, ctx, m)
	close(e.lead)
	tr.waitFor(t, "started hooks")
	close(fail)
	err := wait()
	if err == nil || err.Error() != "inotify: too many watches" {
		t.Fatalf("Run: %v, want the watcher's error", err)
	}
	check(t, tr, "start server", "started server", "start sharded", "started sharded", "campaign", "leads",
		"start hooks", "started hooks", "watcher failed", "stop hooks", "stop sharded", "stop server", "release", "elector returned")
}

// A runnable that fails to start stops those started before it; nothing
// after it starts.
func TestFailingStart(t *testing.T) {
	tr := newTrace()
	m := New(Options{})
	m.Add(Always, "server", tr.runnable("server", nil))
	m.Add(Always, "webhooks", newPart(func(context.Context, func()) error {
		return errors.New("listen tcp :9443: address already in use")
	}))
	m.Add(Always, "sharded", tr.runnable("sharded", nil))
	m.Add(Leading, "hooks", tr.runnable("hooks", nil))
	err := run(t, context.Background(), m)()
	if err == nil || !strings.HasPrefix(err.Error(), "listen") {
		t.Fatalf("Run: %v, want the webhooks' error", err)
	}
	check(t, tr, "start server", "started server", "stop server")
}

// A runnable that returns nil early is done; the others go on.
func TestRunnableDoneEarly(t *testing.T) {
	tr := newTrace()
	m := New(Options{})
	m.Add(Always, "once", newPart(func(context.Context, func()) error { tr.add("once"); return nil }))
	m.Add(Leading, "hooks", tr.runnable("hooks", nil))
	stop := start(t, m)
	tr.waitFor(t, "started hooks")
	stop()
	check(t, tr, "once", "start hooks", "started hooks", "stop hooks")
}
