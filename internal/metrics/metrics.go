// Package metrics holds what the operator serves on /metrics: its own
// metrics (runs, queues, watches, operations, API requests) and the metrics
// hooks write to $METRICS_PATH (see HookMetrics). docs/metrics.md lists
// every metric.
//
// Every method of *Metrics may be called on a nil receiver and then does
// nothing, so parts of the runtime used without metrics (replay, tests)
// need no checks.
package metrics

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultPrefix starts the names of the operator's own metrics unless
// New is given another (--metrics-prefix). Hooks' metrics keep the names
// the hooks give them, as in shell-operator.
const DefaultPrefix = "hook_operator_"

var prefixPattern = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)?$`)

// CheckPrefix says whether prefix can start a Prometheus metric name.
func CheckPrefix(prefix string) error {
	if !prefixPattern.MatchString(prefix) {
		return fmt.Errorf("%q cannot start a Prometheus metric name: use letters, digits, _ and :, not starting with a digit (for example %q)", prefix, DefaultPrefix)
	}
	return nil
}

// Metrics are the operator's own metrics and the hooks' metrics, in one
// registry.
type Metrics struct {
	registry *registry
	// hooksRegistry holds only the hooks' metrics, for /metrics/hooks.
	hooksRegistry *registry
	prefix        string
	// Hooks holds the metrics hooks write.
	Hooks *HookMetrics

	runs          *vec
	runErrors     *vec
	allowedErrors *vec
	runSeconds    *vec
	userCPU       *vec
	systemCPU     *vec
	maxRSS        *vec

	queueLength *vec
	queueWait   *vec
	combined    *vec
	hookRunning *vec
	objectWait  *vec

	processStarts   *vec
	processRestarts *vec
	processRecycles *vec

	eventsReceived   *vec
	eventsSuppressed *vec
	watchErrors      *vec
	watchRestarts    *vec

	operations *vec
	events     *vec
	reloads    *vec
	triggers   *vec

	// writesOutside counts operations outside their hook's declared
	// writes (internal/rbac's Outside).
	writesOutside *vec

	webhookRequests *vec
	webhookSeconds  *vec
	webhookTimeouts *vec
	webhookRejected *vec

	metricsReviews *vec

	liveTicks *vec
	panics    *vec

	hookMetricsDropped *vec

	leader            *vec
	leaderTransitions *vec
	ringMembers       *vec
	ringShare         *vec
	ringChanges       *vec

	bindings bindingMetrics

	// shell holds shell-operator's own families while they are served
	// (ServeShellOperator); nil otherwise.
	shell *shellOperator
}

// New returns metrics registered in a new registry, with the Go runtime and
// process collectors. prefix starts the name of each of the operator's own
// metrics (DefaultPrefix, or what CheckPrefix accepts); the Go and process
// metrics keep their standard names.
func New(prefix string) *Metrics {
	if err := CheckPrefix(prefix); err != nil {
		panic("metrics.New: " + err.Error())
	}
	r := &registry{}
	f := factory{r, prefix}
	runLabels := []string{"hook", "binding", "queue"}
	m := &Metrics{
		registry:      r,
		hooksRegistry: &registry{},
		prefix:        prefix,
		Hooks:         NewHookMetrics(),
		runs:          f.counter("hook_runs_total", "Hook runs, successful or not.", runLabels...),
		runErrors:     f.counter("hook_run_errors_total", "Hook runs that failed and are retried (allowFailure not set).", runLabels...),
		allowedErrors: f.counter("hook_run_allowed_errors_total", "Hook runs that failed with allowFailure set: not retried.", runLabels...),
		runSeconds: f.histogram("hook_run_seconds", "How long hook runs take, from start to the end of their operations.",
			[]float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}, runLabels...),
		userCPU:   f.counter("hook_run_user_cpu_seconds_total", "User CPU time of hook processes (and the children they waited for).", runLabels...),
		systemCPU: f.counter("hook_run_system_cpu_seconds_total", "System CPU time of hook processes (and the children they waited for).", runLabels...),
		maxRSS:    f.gauge("hook_run_max_rss_bytes", "Peak resident memory of the last run of the hook.", runLabels...),

		queueLength: f.gauge("queue_length", "Tasks waiting in the queue, the running one not counted.", "queue"),
		queueWait: f.histogram("queue_wait_seconds", "How long tasks wait in their queue before their run starts.",
			[]float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120}, "queue"),
		combined: f.counter("contexts_combined_total", "Binding contexts merged into a run that was already pending.", "hook", "queue"),
		objectWait: f.histogram("parallel_wait_seconds", "How long a context about one object, of a hook with settings.parallelism, waited before its run started: for its object's earlier run, a free slot, or a run without a key before it.",
			[]float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120}, "hook"),
		processStarts: f.counter("hook_process_starts_total", "Hook processes started: every one-shot run, and every start of a resident hook's process.", "hook"),
		processRestarts: f.counter("hook_process_restarts_total", "Resident hook processes replaced after a fault in a run, by reason: crashed (exited during the run), timeout, protocol (a bad reply).",
			"hook", "reason"),
		processRecycles: f.counter("hook_process_recycles_total", "Resident hook processes stopped to be replaced, by reason: runs (residentMaxRuns), memory (residentMaxMemory), changed (the executable changed), reload (a reload changed the hook's configuration).",
			"hook", "reason"),
		hookRunning: f.gauge("hook_running", "Processes of the hook running now for its queued bindings (more than 1 only with settings.parallelism, or bindings in several queues).", "hook"),

		eventsReceived:   f.counter("events_received_total", "Watch events received per binding (Added, Modified, Deleted).", "hook", "binding", "event"),
		eventsSuppressed: f.counter("events_suppressed_total", "Watch events that ran nothing: the jqFilter result did not change (reason jqFilter), or only the hook's own status write changed (reason ownStatus).", "hook", "binding", "reason"),
		watchErrors:      f.counter("watch_errors_total", "Watches that failed and were restarted, by resource.", "resource"),
		watchRestarts: f.counter("watch_restarts_total", "Watch streams that ended and were opened again, by resource and reason: timeout (the server ended it, as it does every few minutes), idle (no event and no bookmark for --watch-idle-timeout: listed again), expired (resourceVersion too old: listed again), error.",
			"resource", "reason"),

		operations: f.counter("operations_total", "Object operations of hooks by type and result (applied, failed, not_applied: after a failed one).", "hook", "type", "result"),
		reloads:    f.counter("hooks_reload_total", "Reloads of the hooks folder after it changed, by result: applied (hooks started, stopped or changed), unchanged (no configuration changed; changed scripts take effect at their next run), invalid (a configuration is not valid; the running hooks stay) or failed.", "result"),
		triggers:   f.counter("hook_triggers_total", "Runs asked for by hook-operator trigger, by hook and context type (Synchronization, Event, Schedule), counted when queued; the run counts in hook_run_* as any run.", "hook", "type"),
		events:     f.counter("kube_events_total", "Kubernetes Events about failed runs, by what became of them: sent, limited (folded into the next one sent) or dropped.", "result"),

		writesOutside: f.counter("writes_outside_declared_total", "Object operations of hooks that need access the hook's declared writes do not grant, by reason: kind, namespace, verb, or no_writes (a hook that declares none, counted with --restrict-writes only). Applied, unless --restrict-writes failed the run.",
			"hook", "reason"),

		webhookRequests: f.counter("webhook_requests_total", "Admission requests by hook, binding, kind (validating, mutating), result (allowed, denied, error: the hook gave no valid answer) and the code of the answer (200, 403, 500).",
			"hook", "binding", "kind", "result", "code"),
		webhookSeconds: f.histogram("webhook_request_seconds", "How long admission requests take to answer, waiting for a free slot included.",
			[]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}, "hook", "binding", "kind"),
		webhookTimeouts: f.counter("webhook_hook_timeouts_total", "Admission requests denied because the hook did not answer within the binding's timeoutSeconds.", "hook", "binding"),
		webhookRejected: f.counter("webhook_rejected_requests_total", "Webhook requests answered with an error before any hook ran, and failed TLS handshakes, by listener (admission, conversion) and reason (docs/metrics.md lists them).", "listener", "reason"),
		metricsReviews: f.counter("metrics_reviews_total", "Reviews the secure metrics listener needed (--metrics-secure), by review (token: TokenReview, access: SubjectAccessReview) and result: allowed, denied, error (the API server was asked), cached (it was not: a remembered answer), throttled (it was not: over the rate limit, answered 429).",
			"review", "result"),
		panics: f.counter("panics_recovered_total", "Panics recovered in one unit of work, which failed alone (a bug: the log has the stack), by where: run, admission, conversion or webhook.",
			"where"),

		liveTicks: f.counter("live_ticks_total", "Increments every 10 seconds while the operator's loops are alive."),

		hookMetricsDropped: f.counter("hook_metrics_dropped_total", "Metric operations of hooks dropped because they would add a series over a cap, by reason: per_hook_limit (--hook-metrics-max-series-per-hook), total_limit (--hook-metrics-max-series) or too_large (name, labels and buckets over 4 KiB).",
			"hook", "reason"),

		leader:            f.gauge("leader", "1 while this replica holds the leader election's Lease and runs hooks, 0 while it is a standby (only with --leader-elect).", "identity"),
		leaderTransitions: f.counter("leader_transitions_total", "Times this replica became the leader."),

		ringMembers: f.gauge("shard_ring_members", "Live members of the sharding ring as this replica sees it (only with --sharding); identity is this replica.", "identity"),
		ringShare:   f.gauge("shard_ring_share", "The fraction of the hash space each member of the sharding ring owns, as this replica sees it (only with --sharding).", "member"),
		ringChanges: f.counter("shard_ring_changes_total", "Times this replica saw the sharding ring's members change."),

		bindings: newBindingMetrics(f),
	}
	// Series with known label values start at 0, so that an alert's
	// increase() sees the first one and a dashboard shows the series.
	for _, result := range []string{"applied", "unchanged", "invalid", "failed"} {
		m.reloads.add(0, result)
	}
	for _, where := range []string{"run", "admission", "conversion", "webhook"} {
		m.panics.add(0, where)
	}
	r.Register(goCollector{})
	r.Register(processCollector{})
	// The hooks' metrics are not in r: /metrics serves r's families
	// first, so that however many series hooks write, the operator's own
	// reach the scraper.
	m.hooksRegistry.Register(m.Hooks)
	m.Hooks.reserved = r.has
	m.Hooks.counts.dropped = func(hook, reason string, n int) { m.hookMetricsDropped.add(float64(n), hook, reason) }
	m.Hooks.counts.droppedName = m.hookMetricsDropped.name
	m.Hooks.counts.limits = HookLimits{PerHook: DefaultMaxSeriesPerHook, Total: DefaultMaxSeries}
	return m
}

// Name returns name with the operator's metric prefix, for collectors of
// other packages.
func (m *Metrics) Name(name string) string { return m.prefix + name }

// Register adds a collector of another part of the runtime (objects held
// per binding) to /metrics.
func (m *Metrics) Register(c Collector) { m.registry.Register(c) }

// Gather returns what /metrics serves, sorted by name.
func (m *Metrics) Gather() []Family {
	own := m.registry.Gather()
	all := append(own, others(own, m.hooksRegistry.Gather())...)
	slices.SortFunc(all, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return all
}

// others returns the families of more whose names own has not: a name
// served once, by the operator first.
func others(own, more []Family) []Family {
	names := make(map[string]bool, len(own))
	for _, f := range own {
		names[f.Name] = true
	}
	return slices.DeleteFunc(more, func(f Family) bool { return names[f.Name] })
}

// Handler serves the metrics in the Prometheus text format: the
// operator's own families, sorted by name and sent at once, then the
// hooks', sorted by name. A scrape cut short by the hooks' part (its
// deadline, a reader that gives up) still has every family of the
// operator.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		own := m.registry.Gather()
		if err := WriteText(w, own); err != nil {
			return
		}
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		_ = WriteText(w, others(own, m.hooksRegistry.Gather()))
	})
}

// HooksHandler serves only the hooks' metrics, as shell-operator does on
// /metrics/hooks.
func (m *Metrics) HooksHandler() http.Handler { return m.hooksRegistry.handler() }

// A HookRun is one finished run of a hook, as RecordRun counts it.
type HookRun struct {
	// Hook, Binding and Queue are the run's labels: the hook, the names
	// of the bindings whose contexts it got, and its queue.
	Hook, Binding, Queue string
	// Duration is how long the run took; UserCPU and SystemCPU the CPU
	// time of its process (and of the children it waited for).
	Duration, UserCPU, SystemCPU time.Duration
	// MaxRSS is the peak resident memory of its process, in bytes; 0
	// (unknown) leaves the gauge as it was.
	MaxRSS int64
	// Waited is how long the run waited in its queue before it started:
	// since it was queued, or for a retry since the failure before it.
	Waited time.Duration
	// Err is why the run failed, if it did; Allowed says that the hook's
	// allowFailure let it fail.
	Err     error
	Allowed bool
}

// RecordRun records one finished hook run.
func (m *Metrics) RecordRun(r HookRun) {
	if m == nil {
		return
	}
	labels := []string{r.Hook, r.Binding, r.Queue}
	m.runs.add(1, labels...)
	switch {
	case r.Err != nil && r.Allowed:
		m.allowedErrors.add(1, labels...)
	case r.Err != nil:
		m.runErrors.add(1, labels...)
	}
	m.runSeconds.observe(r.Duration.Seconds(), labels...)
	m.userCPU.add(r.UserCPU.Seconds(), labels...)
	m.systemCPU.add(r.SystemCPU.Seconds(), labels...)
	if r.MaxRSS > 0 {
		m.maxRSS.set(float64(r.MaxRSS), labels...)
	}
	if m.shell != nil {
		m.shell.recordRun(r, labels)
	}
}

// Admission counts one admission request and its answer.
func (m *Metrics) Admission(hook, binding, kind, result string, code int, d time.Duration, timedOut bool) {
	if m == nil {
		return
	}
	m.webhookRequests.add(1, hook, binding, kind, result, strconv.Itoa(code))
	m.webhookSeconds.observe(d.Seconds(), hook, binding, kind)
	if timedOut {
		m.webhookTimeouts.add(1, hook, binding)
	}
}

// WebhookPanic is the reason of a webhook request whose handling panicked
// (internal/webhook answers it with a 500): WebhookRejected counts it as a
// recovered panic too.
const WebhookPanic = "panic"

// WebhookRejected counts one webhook request refused before a hook ran
// (or a failed TLS handshake), by listener (admission or conversion: a
// fixed set, as the reasons are) and reason. Reason WebhookPanic counts as
// a recovered panic (where "webhook") too.
func (m *Metrics) WebhookRejected(listener, reason string) {
	if m == nil {
		return
	}
	m.webhookRejected.add(1, listener, reason)
	if reason == WebhookPanic {
		m.PanicRecovered("webhook")
	}
}

// MetricsReview counts one review a request to the secure metrics
// listener needed (server.SecureMetrics.Reviewed).
func (m *Metrics) MetricsReview(review, result string) {
	if m == nil {
		return
	}
	m.metricsReviews.add(1, review, result)
}

// PanicRecovered counts one panic recovered at the boundary of a unit of
// work (where: run, admission, conversion or webhook), which failed alone
// instead of the process.
func (m *Metrics) PanicRecovered(where string) {
	if m == nil {
		return
	}
	m.panics.add(1, where)
}

// Leader records whether this replica, identity, leads.
func (m *Metrics) Leader(identity string, leading bool) {
	if m == nil {
		return
	}
	v := 0.0
	if leading {
		v = 1
		m.leaderTransitions.add(1)
	}
	m.leader.set(v, identity)
}

// Ring records the sharding ring as this replica, identity, sees it: its
// members and each one's share.
func (m *Metrics) Ring(identity string, members []string, share func(string) float64) {
	if m == nil {
		return
	}
	m.ringChanges.add(1)
	m.ringMembers.set(float64(len(members)), identity)
	m.ringShare.reset()
	for _, id := range members {
		m.ringShare.set(share(id), id)
	}
}

// QueueLength sets the number of tasks waiting in queue.
func (m *Metrics) QueueLength(queue string, n int) {
	if m == nil {
		return
	}
	m.queueLength.set(float64(n), queue)
}

// QueueWait records how long a task waited in queue.
func (m *Metrics) QueueWait(queue string, d time.Duration) {
	if m == nil {
		return
	}
	m.queueWait.observe(d.Seconds(), queue)
}

// Combined counts contexts merged into a pending run of hook.
func (m *Metrics) Combined(hook, queue string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.combined.add(float64(n), hook, queue)
}

// HookRunning sets how many runs of hook are in progress.
func (m *Metrics) HookRunning(hook string, n int) {
	if m == nil {
		return
	}
	m.hookRunning.set(float64(n), hook)
}

// ObjectWait records how long a task of a hook with parallelism waited.
func (m *Metrics) ObjectWait(hook string, d time.Duration) {
	if m == nil {
		return
	}
	m.objectWait.observe(d.Seconds(), hook)
}

// EventReceived counts a watch event of a binding.
func (m *Metrics) EventReceived(hook, binding, event string) {
	if m == nil {
		return
	}
	m.eventsReceived.add(1, hook, binding, event)
}

// EventSuppressed counts a watch event that ran nothing, and why.
func (m *Metrics) EventSuppressed(hook, binding, reason string) {
	if m == nil {
		return
	}
	m.eventsSuppressed.add(1, hook, binding, reason)
}

// WatchStarted makes the watch counters of resource start at 0 (every
// reason of a restart), so that an alert's increase() sees the first
// failure or restart.
func (m *Metrics) WatchStarted(resource string) {
	if m == nil {
		return
	}
	m.watchErrors.add(0, resource)
	for _, reason := range []string{"timeout", "idle", "expired", "error"} {
		m.watchRestarts.add(0, resource, reason)
	}
}

// WatchError counts a failed list or watch of resource, whose error is of
// errorType (WatchErrorExpired, WatchErrorEOF, WatchErrorUnexpectedEOF or
// WatchErrorFail: shell-operator's error types).
func (m *Metrics) WatchError(resource, errorType string) {
	if m == nil {
		return
	}
	m.watchErrors.add(1, resource)
	if m.shell != nil {
		m.shell.watchErrors.add(1, errorType)
	}
}

// WatchRestart counts a watch stream of resource that ended, by reason.
func (m *Metrics) WatchRestart(resource, reason string) {
	if m == nil {
		return
	}
	m.watchRestarts.add(1, resource, reason)
}

// Operation counts an operation of hook by type and result.
func (m *Metrics) Operation(hook, typ, result string) {
	if m == nil {
		return
	}
	m.operations.add(1, hook, typ, result)
}

// WriteOutside counts an operation of hook that needs access the hook's
// declared writes do not grant, by reason (internal/rbac's Reason
// constants, a fixed set).
func (m *Metrics) WriteOutside(hook, reason string) {
	if m == nil {
		return
	}
	m.writesOutside.add(1, hook, reason)
}

// KubeEvent counts a Kubernetes Event about a failed run by what became
// of it: sent, limited or dropped.
func (m *Metrics) KubeEvent(result string) {
	if m == nil {
		return
	}
	m.events.add(1, result)
}

// Triggered counts a run that `hook-operator trigger` queued, by hook and
// context type.
func (m *Metrics) Triggered(hook, typ string) {
	if m == nil {
		return
	}
	m.triggers.add(1, hook, typ)
}

// HooksReload counts a reload of the hooks folder by its result: applied,
// unchanged, invalid or failed.
func (m *Metrics) HooksReload(result string) {
	if m == nil {
		return
	}
	m.reloads.add(1, result)
}

// Tick counts one tick of the liveness loop.
func (m *Metrics) Tick() {
	if m == nil {
		return
	}
	m.liveTicks.add(1)
	if m.shell != nil {
		m.shell.liveTicks.add(1)
	}
}

// factory makes metrics registered in one registry.
type factory struct {
	r      *registry
	prefix string
}

func (f factory) counter(name, help string, labels ...string) *vec {
	return f.r.addVec(newVec(f.prefix+name, help, Counter, nil, labels...))
}

func (f factory) gauge(name, help string, labels ...string) *vec {
	return f.r.addVec(newVec(f.prefix+name, help, Gauge, nil, labels...))
}

func (f factory) histogram(name, help string, buckets []float64, labels ...string) *vec {
	return f.r.addVec(newVec(f.prefix+name, help, Histogram, buckets, labels...))
}

// ProcessStarted counts a process started for hook.
func (m *Metrics) ProcessStarted(hook string) {
	if m == nil {
		return
	}
	m.processStarts.add(1, hook)
}

// ProcessRestarted counts a resident process of hook replaced after a
// fault, by reason.
func (m *Metrics) ProcessRestarted(hook, reason string) {
	if m == nil {
		return
	}
	m.processRestarts.add(1, hook, reason)
}

// ProcessRecycled counts a resident process of hook stopped to be
// replaced, by reason.
func (m *Metrics) ProcessRecycled(hook, reason string) {
	if m == nil {
		return
	}
	m.processRecycles.add(1, hook, reason)
}
