package metrics

import (
	"context"
	"errors"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// shellFamily is one family as shell-operator v1.20.3 serves it on
// /metrics: its type, its label names (sorted) and, for a histogram, its
// buckets. Read from its source at that tag: pkg/metrics/metrics.go for
// the names, labels and buckets it registers on /metrics's storage, the
// hook run families made on first use there (no buckets: the client's
// defaults), and github.com/flant/kube-client v1.9.1 for its Kubernetes
// client's.
type shellFamily struct {
	kind    dto.MetricType
	labels  []string
	buckets []float64
}

var (
	runLabels  = []string{"binding", "hook", "queue"}
	shellWants = map[string]shellFamily{
		"live_ticks":                                     {dto.MetricType_COUNTER, nil, nil},
		"tasks_queue_action_duration_seconds":            {dto.MetricType_HISTOGRAM, []string{"queue_action", "queue_name"}, []float64{0, .0001, .0002, .0005, .001, .002, .005, .01, .02, .05, .1, .2, .5}},
		"tasks_queue_length":                             {dto.MetricType_GAUGE, []string{"queue"}, nil},
		"hook_enable_kubernetes_bindings_seconds":        {dto.MetricType_GAUGE, []string{"hook"}, nil},
		"hook_enable_kubernetes_bindings_errors_total":   {dto.MetricType_COUNTER, []string{"hook"}, nil},
		"hook_enable_kubernetes_bindings_success":        {dto.MetricType_GAUGE, []string{"hook"}, nil},
		"hook_run_seconds":                               {dto.MetricType_HISTOGRAM, runLabels, []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
		"hook_run_user_cpu_seconds":                      {dto.MetricType_HISTOGRAM, runLabels, []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
		"hook_run_sys_cpu_seconds":                       {dto.MetricType_HISTOGRAM, runLabels, []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
		"hook_run_max_rss_bytes":                         {dto.MetricType_GAUGE, runLabels, nil},
		"hook_run_errors_total":                          {dto.MetricType_COUNTER, runLabels, nil},
		"hook_run_allowed_errors_total":                  {dto.MetricType_COUNTER, runLabels, nil},
		"hook_run_success_total":                         {dto.MetricType_COUNTER, runLabels, nil},
		"task_wait_in_queue_seconds_total":               {dto.MetricType_COUNTER, runLabels, nil},
		"kube_snapshot_objects":                          {dto.MetricType_GAUGE, runLabels, nil},
		"kube_jq_filter_duration_seconds":                {dto.MetricType_HISTOGRAM, runLabels, []float64{0, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10}},
		"kube_event_duration_seconds":                    {dto.MetricType_HISTOGRAM, runLabels, []float64{0, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10}},
		"kubernetes_client_watch_errors_total":           {dto.MetricType_COUNTER, []string{"error_type"}, nil},
		"binding_monitor_missing_total":                  {dto.MetricType_COUNTER, []string{"binding"}, nil},
		"factory_informer_dead_total":                    {dto.MetricType_COUNTER, []string{"gvr", "namespace"}, nil},
		"kubernetes_client_request_result_total":         {dto.MetricType_COUNTER, []string{"code", "component", "host", "method"}, nil},
		"kubernetes_client_rate_limiter_latency_seconds": {dto.MetricType_HISTOGRAM, []string{"url", "verb"}, []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
		// The telemetry pair puts the prefix after d8_telemetry_.
		"d8_telemetry_\x00tasks_queue_compaction_operations_total": {dto.MetricType_COUNTER, []string{"hook", "queue_name"}, nil},
		"d8_telemetry_\x00tasks_queue_compaction_tasks_by_hook":    {dto.MetricType_GAUGE, []string{"hook", "queue_name"}, nil},
	}
)

// shellName puts prefix into one of shellWants' names.
func shellName(prefix, n string) string {
	if before, after, ok := strings.Cut(n, "\x00"); ok {
		return before + prefix + after
	}
	return prefix + n
}

// parse reads what /metrics serves with Prometheus's own text parser.
func parse(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	var b strings.Builder
	if err := WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("Prometheus's parser: %v\n%s", err, b.String())
	}
	return fams
}

// labelNames returns the sorted label names of a family's first series.
func labelNames(f *dto.MetricFamily) []string {
	var names []string
	for _, l := range f.GetMetric()[0].GetLabel() {
		names = append(names, l.GetName())
	}
	slices.Sort(names)
	return names
}

// value returns the counter's or gauge's value of the series of f with
// labels (name, value pairs), or -1 when f has none.
func value(f *dto.MetricFamily, labels ...string) float64 {
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && got[labels[i]] == labels[i+1]
		}
		if !match {
			continue
		}
		if m.GetCounter() != nil {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	return -1
}

// serveAll serves shell-operator's families under prefix beside ours,
// and records something in each.
func serveAll(t *testing.T, prefix string) *Metrics {
	t.Helper()
	m := New(DefaultPrefix)
	if err := m.ServeShellOperator(prefix); err != nil {
		t.Fatal(err)
	}
	m.Tick()
	start := m.QueueActionStart()
	m.QueueAction("main", "AddLast", start)
	m.Compacted("main", "a.sh")
	m.QueueTasks(func() map[string]map[string]int {
		return map[string]map[string]int{"main": {"a.sh": 21, "b.sh": 2}, "idle": {}}
	})
	m.BindingStarted("a.sh", "pods")
	m.BindingsListFailed("a.sh")
	m.KubernetesBindingsEnabled("a.sh", 1500*time.Millisecond)
	m.RecordRun(HookRun{Hook: "a.sh", Binding: "pods", Queue: "main", Duration: 300 * time.Millisecond,
		UserCPU: 20 * time.Millisecond, SystemCPU: 10 * time.Millisecond, MaxRSS: 4 << 20, Waited: 2 * time.Second})
	m.FilterRan("a.sh", "pods", "main", time.Millisecond)
	m.EventHandled("a.sh", "pods", "main", 3*time.Millisecond)
	m.WatchError("/v1, Resource=pods", WatchErrorExpired)
	m.BindingNotListed("a.sh", "pods")
	m.InformerStarted("/v1, Resource=pods", "ns")
	m.InformerDead("/v1, Resource=pods", "ns")
	m.Register(snapshotCollector{name: m.ShellOperatorName(SnapshotObjects)})
	u, _ := url.Parse("https://10.0.0.1:6443/api/v1/namespaces/shop/configmaps?resourceVersion=12&watch=true")
	// As ObserveKubeClient's adapters, without client-go's one registration
	// per process.
	latencyAdapter{newVec("x", "", Histogram, []float64{1}, "verb"), m.shell}.Observe(context.Background(), "GET", *u, 40*time.Millisecond)
	resultAdapter{newVec("y", "", Counter, nil, "code", "method"), m.shell}.Increment(context.Background(), "200", "GET", "10.0.0.1:6443")
	return m
}

// snapshotCollector stands for internal/watch's collector of
// kube_snapshot_objects.
type snapshotCollector struct{ name string }

func (c snapshotCollector) Names() []string { return []string{c.name} }
func (c snapshotCollector) Collect() []Family {
	return []Family{{Name: c.name, Kind: Gauge, Labels: []string{"hook", "binding", "queue"}, Series: []Series{{Values: []string{"a.sh", "pods", "main"}, Value: 3}}}}
}

// shell-operator v1.20.3's families are served under their prefix as it
// serves them: each name with its type, its label names and its buckets,
// read by Prometheus's parser; ShellOperatorNames lists exactly them.
func TestShellOperatorFamilies(t *testing.T) {
	const prefix = "shell_operator_"
	fams := parse(t, serveAll(t, prefix))
	var want []string
	for n, w := range shellWants {
		name := shellName(prefix, n)
		want = append(want, name)
		f := fams[name]
		if f == nil {
			t.Errorf("%s is not served", name)
			continue
		}
		if f.GetType() != w.kind {
			t.Errorf("%s: a %v, want a %v", name, f.GetType(), w.kind)
		}
		if got := labelNames(f); !slices.Equal(got, w.labels) {
			t.Errorf("%s: labels %v, want %v", name, got, w.labels)
		}
		if w.kind == dto.MetricType_HISTOGRAM {
			var got []float64
			for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
				if !math.IsInf(b.GetUpperBound(), 1) {
					got = append(got, b.GetUpperBound())
				}
			}
			if !slices.Equal(got, w.buckets) {
				t.Errorf("%s: buckets %v, want %v", name, got, w.buckets)
			}
		}
	}
	slices.Sort(want)
	if got := ShellOperatorNames(prefix); !slices.Equal(got, want) {
		t.Errorf("ShellOperatorNames = %v\nwant %v", got, want)
	}
	// Ours are served as before, under their own prefix.
	if fams["hook_operator_hook_runs_total"] == nil || fams["hook_operator_live_ticks_total"] == nil {
		t.Error("the operator's own families are not served beside shell-operator's")
	}
}

// What each family holds: the run's result counters and its wait, the
// queue's tasks pending and running (a hook counted alone above 20), the
// bindings' start, and the client's URL with its values replaced.
func TestShellOperatorValues(t *testing.T) {
	fams := parse(t, serveAll(t, "so_"))
	run := []string{"hook", "a.sh", "binding", "pods", "queue", "main"}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"so_live_ticks", nil, 1},
		{"so_hook_run_success_total", run, 1},
		{"so_hook_run_errors_total", run, 0},
		{"so_hook_run_allowed_errors_total", run, 0},
		{"so_task_wait_in_queue_seconds_total", run, 2},
		{"so_hook_run_max_rss_bytes", run, 4 << 20},
		{"so_tasks_queue_length", []string{"queue", "main"}, 23},
		{"so_tasks_queue_length", []string{"queue", "idle"}, 0},
		{"d8_telemetry_so_tasks_queue_compaction_tasks_by_hook", []string{"hook", "a.sh"}, 21},
		{"d8_telemetry_so_tasks_queue_compaction_tasks_by_hook", []string{"hook", "b.sh"}, -1},
		{"d8_telemetry_so_tasks_queue_compaction_operations_total", []string{"hook", "a.sh", "queue_name", "main"}, 1},
		{"so_hook_enable_kubernetes_bindings_seconds", []string{"hook", "a.sh"}, 1.5},
		{"so_hook_enable_kubernetes_bindings_success", []string{"hook", "a.sh"}, 1},
		{"so_hook_enable_kubernetes_bindings_errors_total", []string{"hook", "a.sh"}, 1},
		{"so_binding_monitor_missing_total", []string{"binding", "pods"}, 1},
		{"so_factory_informer_dead_total", []string{"gvr", "/v1, Resource=pods", "namespace", "ns"}, 1},
		{"so_kubernetes_client_watch_errors_total", []string{"error_type", "expired"}, 1},
		{"so_kubernetes_client_watch_errors_total", []string{"error_type", "eof"}, 0},
		{"so_kubernetes_client_watch_errors_total", []string{"error_type", "unexpected-eof"}, 0},
		{"so_kubernetes_client_watch_errors_total", []string{"error_type", "fail"}, 0},
		{"so_kubernetes_client_request_result_total", []string{"code", "200", "component", "main", "host", "10.0.0.1:6443", "method", "GET"}, 1},
	} {
		if got := value(fams[c.name], c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	lat := fams["so_kubernetes_client_rate_limiter_latency_seconds"].GetMetric()[0]
	for _, l := range lat.GetLabel() {
		if want := "https://10.0.0.1:6443/api/v1/namespaces/%7Bnamespace%7D/configmaps?resourceVersion=%7Bvalue%7D&watch=%7Bvalue%7D"; l.GetName() == "url" && l.GetValue() != want {
			t.Errorf("url %q, want %q", l.GetValue(), want)
		}
	}
}

// Counters with a hook, binding and queue are served at 0 from the first
// run of those labels, whatever its result, so that increase() sees the
// first failure; a failed run counts in errors, an allowed failure in
// allowed errors.
func TestShellOperatorRunCountersStartAtZero(t *testing.T) {
	m := New(DefaultPrefix)
	if err := m.ServeShellOperator("so_"); err != nil {
		t.Fatal(err)
	}
	run := []string{"hook", "a.sh", "binding", "pods", "queue", "main"}
	m.RecordRun(HookRun{Hook: "a.sh", Binding: "pods", Queue: "main", Err: errors.New("exit 1")})
	fams := parse(t, m)
	for name, want := range map[string]float64{"so_hook_run_errors_total": 1, "so_hook_run_success_total": 0, "so_hook_run_allowed_errors_total": 0, "so_task_wait_in_queue_seconds_total": 0} {
		if got := value(fams[name], run...); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if fams["so_hook_run_user_cpu_seconds"] != nil {
		t.Error("a run without a measured process observed CPU time")
	}
	m.RecordRun(HookRun{Hook: "a.sh", Binding: "pods", Queue: "main", Err: errors.New("exit 1"), Allowed: true})
	if got := value(parse(t, m)["so_hook_run_allowed_errors_total"], run...); got != 1 {
		t.Errorf("allowed errors = %v, want 1", got)
	}
}

// Two prefixes whose names would meet are refused, naming them; off, the
// families are not served and the watch is not asked to time anything.
func TestShellOperatorPrefixes(t *testing.T) {
	for _, c := range []struct{ own, shell, want string }{
		{"hook_operator_", "hook_operator_", `same prefix "hook_operator_"`},
		{"x_tasks_", "x_", "x_tasks_queue_length"},
		{"hook_operator_", "9x", "cannot start"},
	} {
		err := CheckShellOperatorPrefix(c.own, c.shell)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckShellOperatorPrefix(%q, %q) = %v, want an error with %q", c.own, c.shell, err, c.want)
		}
		if m := New(c.own); m.ServeShellOperator(c.shell) == nil {
			t.Errorf("ServeShellOperator(%q) beside %q: no error", c.shell, c.own)
		}
	}
	if err := CheckShellOperatorPrefix(DefaultPrefix, "shell_operator_"); err != nil {
		t.Error(err)
	}
	off := New(DefaultPrefix)
	if off.TimesWatchEvents() || off.ShellOperatorName(SnapshotObjects) != "" || !off.QueueActionStart().IsZero() {
		t.Error("without ServeShellOperator, shell-operator's families are asked for")
	}
	off.Tick()
	for name := range parse(t, off) {
		if strings.HasPrefix(name, "shell_operator_") || strings.HasPrefix(name, "d8_") || name == "hook_operator_live_ticks" {
			t.Errorf("%s served without ServeShellOperator", name)
		}
	}
}

// Recording on the watch's and the queues' paths allocates nothing per
// event, served or not (after a series' first use).
func TestShellOperatorRecordingAllocatesNothing(t *testing.T) {
	var nilMetrics *Metrics
	off := New(DefaultPrefix)
	on := New(DefaultPrefix)
	if err := on.ServeShellOperator("so_"); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*Metrics{"nil": nilMetrics, "off": off, "on": on} {
		record := func() {
			if m.TimesWatchEvents() {
				m.FilterRan("a.sh", "pods", "main", time.Millisecond)
				m.EventHandled("a.sh", "pods", "main", time.Millisecond)
			}
			m.QueueAction("main", "AddLast", m.QueueActionStart())
			m.Compacted("main", "a.sh")
			m.BindingsListFailed("a.sh")
		}
		record()
		if n := testing.AllocsPerRun(100, record); n != 0 {
			t.Errorf("%s: %v allocations per event, want 0", name, n)
		}
	}
}

// docs/metrics.md's table of shell-operator's metrics names every family
// served.
func TestShellOperatorFamiliesDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "### Coming from shell-operator")
	if !ok {
		t.Fatal("docs/metrics.md has no section Coming from shell-operator")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	for _, name := range ShellOperatorNames("") {
		name = strings.TrimPrefix(name, "d8_telemetry_")
		if !strings.Contains(table, "`"+name) && !strings.Contains(table, "…"+name) && !strings.Contains(table, "_"+name) {
			t.Errorf("docs/metrics.md's shell-operator section does not name %s", name)
		}
	}
}
