package metrics

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ShellOperatorVersion is the shell-operator release whose own metric
// families ServeShellOperator serves.
const ShellOperatorVersion = "v1.20.3"

// shellOperator holds shell-operator v1.20.3's own metric families, served
// beside the operator's under a prefix of their own
// (--shell-operator-metrics-prefix), so that a dashboard or an alert built
// on shell-operator reads them unchanged. Each is recorded where the
// operator records its own nearest metric; docs/metrics.md says, for each,
// what it measures here and where that differs from shell-operator.
//
// Names, types, label names and buckets are v1.20.3's as it serves them on
// /metrics. Its hook run histograms are made there on first use, without
// buckets, so they get the Prometheus Go client's default buckets (the
// list of buckets it declares is registered for /metrics/hooks, where
// nothing records).
type shellOperator struct {
	prefix string

	liveTicks    *vec
	queueActions *vec
	compactions  *vec

	enableSeconds *vec
	enableErrors  *vec
	enableSuccess *vec

	runSeconds    *vec
	userCPU       *vec
	sysCPU        *vec
	maxRSS        *vec
	runErrors     *vec
	allowedErrors *vec
	successes     *vec
	waited        *vec

	jqFilter       *vec
	eventHandling  *vec
	watchErrors    *vec
	monitorMissing *vec
	informerDead   *vec

	requestResults *vec
	requestLatency *vec
}

// Buckets of shell-operator v1.20.3's histograms.
var (
	// clientDefaultBuckets are the Prometheus Go client's default buckets.
	clientDefaultBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	queueActionBuckets   = []float64{0, .0001, .0002, .0005, .001, .002, .005, .01, .02, .05, .1, .2, .5}
	kubeEventBuckets     = []float64{0, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10}
)

// The error types of kubernetes_client_watch_errors_total that the watch
// reports (WatchError): a resourceVersion too old, a connection ended
// (cleanly or not) during a list or a watch's answer, anything else.
const (
	WatchErrorExpired       = "expired"
	WatchErrorEOF           = "eof"
	WatchErrorUnexpectedEOF = "unexpected-eof"
	WatchErrorFail          = "fail"
)

// shellOperatorComponent is the component label of shell-operator's
// Kubernetes client metrics: its main client's (the one whose requests
// they count).
const shellOperatorComponent = "main"

func newShellOperator(r *registry, prefix string) *shellOperator {
	f := factory{r, prefix}
	run := []string{"hook", "binding", "queue"}
	return &shellOperator{
		prefix:    prefix,
		liveTicks: f.counter("live_ticks", "Increments every 10 seconds while the operator's loops are alive (shell-operator's name)."),
		queueActions: f.histogram("tasks_queue_action_duration_seconds", "How long operations on a queue's tasks take under the queues' lock: AddLast (a task queued), RemoveFirst (the head taken to run, with the tasks merged into it), Remove (a task of a parallel hook taken), AddFirst (a failed task put back for its retry), DeleteFunc (tasks dropped).",
			queueActionBuckets, "queue_name", "queue_action"),
		compactions: factory{r, "d8_telemetry_" + prefix}.counter("tasks_queue_compaction_operations_total", "Times pending tasks of a hook were merged into the task about to run (the task count falls; their binding contexts run together).",
			"queue_name", "hook"),

		enableSeconds: f.gauge("hook_enable_kubernetes_bindings_seconds", "Seconds from the start of the hook's kubernetes bindings until every one of them had listed, for their last start.", "hook"),
		enableErrors:  f.counter("hook_enable_kubernetes_bindings_errors_total", "Failed lists of the watches of the hook's kubernetes bindings before they had all listed (retried).", "hook"),
		enableSuccess: f.gauge("hook_enable_kubernetes_bindings_success", "1 once the hook's kubernetes bindings started last have all listed, 0 until then.", "hook"),

		runSeconds:    f.histogram("hook_run_seconds", "How long hook runs take, from start to the end of their operations.", clientDefaultBuckets, run...),
		userCPU:       f.histogram("hook_run_user_cpu_seconds", "User CPU time of each run's hook processes (and the children they waited for).", clientDefaultBuckets, run...),
		sysCPU:        f.histogram("hook_run_sys_cpu_seconds", "System CPU time of each run's hook processes (and the children they waited for).", clientDefaultBuckets, run...),
		maxRSS:        f.gauge("hook_run_max_rss_bytes", "Peak resident memory of the last run of the hook.", run...),
		runErrors:     f.counter("hook_run_errors_total", "Hook runs that failed and are retried (allowFailure not set).", run...),
		allowedErrors: f.counter("hook_run_allowed_errors_total", "Hook runs that failed with allowFailure set: not retried.", run...),
		successes:     f.counter("hook_run_success_total", "Hook runs that succeeded.", run...),
		waited:        f.counter("task_wait_in_queue_seconds_total", "Seconds runs waited in their queue before they started: since queued, or for a retry since the failure before it.", run...),

		jqFilter: f.histogram("kube_jq_filter_duration_seconds", "How long a binding's jqFilter took on one listed or watched object (without a jqFilter: encoding the object the binding keeps).",
			kubeEventBuckets, run...),
		eventHandling: f.histogram("kube_event_duration_seconds", "How long a binding took to handle one watch event, up to handing its context to the queue.",
			kubeEventBuckets, run...),
		watchErrors:    f.counter("kubernetes_client_watch_errors_total", "Failed lists and watches, by error type: expired (resourceVersion too old), eof, unexpected-eof, fail.", "error_type"),
		monitorMissing: f.counter("binding_monitor_missing_total", "Runs not started because a kubernetes binding whose snapshot they carry had not listed (a reload restarted it): retried, rather than run with an empty snapshot.", "binding"),
		informerDead:   f.counter("factory_informer_dead_total", "Watches that delivered no event and no bookmark for --watch-idle-timeout and were ended and listed again.", "gvr", "namespace"),

		requestResults: f.counter("kubernetes_client_request_result_total", "Requests to the Kubernetes API server, by HTTP status code, method and host.", "code", "component", "host", "method"),
		requestLatency: f.histogram("kubernetes_client_rate_limiter_latency_seconds", "Latency of requests to the Kubernetes API server (shell-operator's Kubernetes client records its request latency under this name), by verb and URL with the namespace, names and query values replaced.",
			clientDefaultBuckets, "url", "verb"),
	}
}

// The families of shell-operator's served by collectors, read when the
// metrics are read: the queues' (QueueTasks), and the objects each
// kubernetes binding holds (served by internal/watch).
func queueLengthName(prefix string) string { return prefix + "tasks_queue_length" }
func tasksByHookName(prefix string) string {
	return "d8_telemetry_" + prefix + "tasks_queue_compaction_tasks_by_hook"
}

// SnapshotObjects is the name, after the prefix, of shell-operator's family
// of the objects each kubernetes binding holds.
const SnapshotObjects = "kube_snapshot_objects"

// ShellOperatorNames returns the names of the families ServeShellOperator
// serves under prefix, sorted.
func ShellOperatorNames(prefix string) []string {
	r := &registry{}
	newShellOperator(r, prefix)
	names := []string{queueLengthName(prefix), tasksByHookName(prefix), prefix + SnapshotObjects}
	for _, v := range r.vecs {
		names = append(names, v.name)
	}
	slices.Sort(names)
	return names
}

// CheckShellOperatorPrefix says whether shell-operator's families can be
// served under shell beside the operator's own under own: an error names
// the names both would serve.
func CheckShellOperatorPrefix(own, shell string) error {
	if err := CheckPrefix(shell); err != nil {
		return err
	}
	if own == shell {
		return fmt.Errorf("the operator's own metrics and shell-operator's would have the same prefix %q, and several the same names (%shook_run_seconds, %shook_run_errors_total, ...)", own, own, own)
	}
	ours := New(own)
	var both []string
	for _, n := range ShellOperatorNames(shell) {
		if ours.registry.has(n) {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		return fmt.Errorf("the operator's own metrics (prefix %q) and shell-operator's (prefix %q) would both be named %s", own, shell, strings.Join(both, ", "))
	}
	return nil
}

// ServeShellOperator adds shell-operator v1.20.3's own metric families to
// /metrics under prefix, beside the operator's. Call it once, right after
// New and before the metrics are used; CheckShellOperatorPrefix tells
// beforehand whether prefix can be served.
func (m *Metrics) ServeShellOperator(prefix string) error {
	if err := CheckShellOperatorPrefix(m.prefix, prefix); err != nil {
		return err
	}
	s := newShellOperator(m.registry, prefix)
	// Series with known label values start at 0, so that an alert's
	// increase() sees the first one and a dashboard shows the series.
	s.liveTicks.add(0)
	for _, kind := range []string{WatchErrorExpired, WatchErrorEOF, WatchErrorUnexpectedEOF, WatchErrorFail} {
		s.watchErrors.add(0, kind)
	}
	m.shell = s
	return nil
}

// ShellOperatorName returns name under the prefix of shell-operator's
// families, for collectors of other packages that serve one of them; ""
// when they are not served.
func (m *Metrics) ShellOperatorName(name string) string {
	if m == nil || m.shell == nil {
		return ""
	}
	return m.shell.prefix + name
}

// TimesWatchEvents reports whether the watch is to time its jqFilters and
// its handling of events (FilterRan, EventHandled): only while
// shell-operator's families are served, which alone hold those times.
func (m *Metrics) TimesWatchEvents() bool { return m != nil && m.shell != nil }

// FilterRan records how long a binding's jqFilter took on one object (for
// a binding without one: encoding the object it keeps).
func (m *Metrics) FilterRan(hook, binding, queue string, d time.Duration) {
	if m == nil || m.shell == nil {
		return
	}
	m.shell.jqFilter.observe(d.Seconds(), hook, binding, queue)
}

// EventHandled records how long a binding took to handle one watch event.
func (m *Metrics) EventHandled(hook, binding, queue string, d time.Duration) {
	if m == nil || m.shell == nil {
		return
	}
	m.shell.eventHandling.observe(d.Seconds(), hook, binding, queue)
}

// BindingsListFailed counts a failed list of a watch of hook's kubernetes
// bindings before they had all listed.
func (m *Metrics) BindingsListFailed(hook string) {
	if m == nil || m.shell == nil {
		return
	}
	m.shell.enableErrors.add(1, hook)
}

// QueueActionStart returns the start of a queue operation to time with
// QueueAction: zero, and nothing is timed, unless shell-operator's
// families are served.
func (m *Metrics) QueueActionStart() time.Time {
	if m == nil || m.shell == nil {
		return time.Time{}
	}
	return time.Now()
}

// QueueAction records an operation on queue's tasks begun at start
// (QueueActionStart); a zero start records nothing.
func (m *Metrics) QueueAction(queue, action string, start time.Time) {
	if m == nil || m.shell == nil || start.IsZero() {
		return
	}
	m.shell.queueActions.observe(time.Since(start).Seconds(), queue, action)
}

// Compacted counts one merge of pending tasks of hook into the task of
// queue about to run.
func (m *Metrics) Compacted(queue, hook string) {
	if m == nil || m.shell == nil {
		return
	}
	m.shell.compactions.add(1, queue, hook)
}

// compactionThreshold is the count of a hook's tasks in a queue above
// which shell-operator serves it (d8_telemetry_..._tasks_by_hook).
const compactionThreshold = 20

// QueueTasks serves, while shell-operator's families are served, the
// tasks of each queue (pending and running) read from tasks (the queue
// set's Tasks, by queue and hook) whenever the metrics are read:
// tasks_queue_length{queue}, and for each hook with more than 20 in a
// queue d8_telemetry_..._tasks_queue_compaction_tasks_by_hook.
func (m *Metrics) QueueTasks(tasks func() map[string]map[string]int) {
	if m == nil || m.shell == nil {
		return
	}
	m.Register(queueTasks{length: queueLengthName(m.shell.prefix), byHook: tasksByHookName(m.shell.prefix), tasks: tasks})
}

type queueTasks struct {
	length, byHook string
	tasks          func() map[string]map[string]int
}

func (c queueTasks) Names() []string { return []string{c.length, c.byHook} }

func (c queueTasks) Collect() []Family {
	length := Family{Name: c.length, Kind: Gauge, Labels: []string{"queue"},
		Help: "Tasks in the queue, pending and running (shell-operator's name), read when /metrics is read."}
	byHook := Family{Name: c.byHook, Kind: Gauge, Labels: []string{"queue_name", "hook"},
		Help: "Tasks of a hook in a queue, pending and running, for each hook with more than 20, read when /metrics is read."}
	for queue, hooks := range c.tasks() {
		n := 0
		for hook, k := range hooks {
			n += k
			if k > compactionThreshold {
				byHook.Series = append(byHook.Series, Series{Values: []string{queue, hook}, Value: float64(k)})
			}
		}
		length.Series = append(length.Series, Series{Values: []string{queue}, Value: float64(n)})
	}
	return []Family{length, byHook}
}

// recordRun records a finished run in shell-operator's families: each of
// its three result counters moves (by 0 or 1), so all three are served
// from the run's labels' first run.
func (s *shellOperator) recordRun(r HookRun, labels []string) {
	success, failed, allowed := 0.0, 0.0, 0.0
	switch {
	case r.Err == nil:
		success = 1
	case r.Allowed:
		allowed = 1
	default:
		failed = 1
	}
	s.successes.add(success, labels...)
	s.runErrors.add(failed, labels...)
	s.allowedErrors.add(allowed, labels...)
	s.waited.add(r.Waited.Seconds(), labels...)
	s.runSeconds.observe(r.Duration.Seconds(), labels...)
	if r.MaxRSS > 0 {
		s.userCPU.observe(r.UserCPU.Seconds(), labels...)
		s.sysCPU.observe(r.SystemCPU.Seconds(), labels...)
		s.maxRSS.set(float64(r.MaxRSS), labels...)
	}
}
