package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hook-operator/hook-operator/internal/metrics"
)

func parse(t *testing.T, lines string) []metrics.HookOp {
	t.Helper()
	ops, err := metrics.ParseHookOps([]byte(lines))
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

func TestParseHookOpsErrors(t *testing.T) {
	in := strings.Join([]string{
		`{"name":"ok_total","action":"add","value":1}`,
		``,
		`{"name":"1bad","action":"set","value":1}`,
		`{"name":"x","action":"observe","value":1}`,
		`{"name":"x","action":"add","value":-1}`,
		`{"name":"x","action":"set","value":1,"labels":{"hook":"h"}}`,
		`{"action":"expire"}`,
		`not json`,
		`{"name":"x","action":"bump","value":1}`,
		`{"name":"x","add":1,"action":"add","value":1}`,
		`{"name":"x","set":2,"labels":{"a":"b"}}`,
	}, "\n")
	_, err := metrics.ParseHookOps([]byte(in))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{"line 3: name \"1bad\"", "line 4: observe needs \"buckets\"", "line 5: add -1: a counter only goes up",
		"line 6: label \"hook\" is set by the runtime", "line 7: action expire needs the group", "line 8: not a metric operation",
		"line 9: action \"bump\"", "line 10: write either"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "line 1:") || strings.Contains(msg, "line 11:") {
		t.Errorf("valid lines reported:\n%s", msg)
	}
}

func TestHookMetricsKindsGroupsAndExpire(t *testing.T) {
	h := metrics.NewHookMetrics()
	apply := func(hook, lines string) {
		t.Helper()
		ops := parse(t, lines)
		if err := h.Check(hook, ops); err != nil {
			t.Fatal(err)
		}
		h.Apply(hook, ops)
	}
	apply("a.sh", `{"name":"runs_total","add":2,"labels":{"kind":"x"}}
{"name":"temp","set":3}
{"name":"size","action":"observe","value":4,"buckets":[1,5,10]}
{"name":"objects","action":"set","value":1,"group":"g","labels":{"obj":"one"}}
{"name":"objects","action":"set","value":1,"group":"g","labels":{"obj":"two"}}`)
	apply("a.sh", `{"name":"runs_total","add":1,"labels":{"kind":"x"}}
{"name":"objects","action":"set","value":5,"group":"g","labels":{"obj":"two"}}`)
	want := `
# HELP objects Written by hooks to $METRICS_PATH.
# TYPE objects gauge
objects{hook="a.sh",obj="two"} 5
# HELP runs_total Written by hooks to $METRICS_PATH.
# TYPE runs_total counter
runs_total{hook="a.sh",kind="x"} 3
# HELP size Written by hooks to $METRICS_PATH.
# TYPE size histogram
size_bucket{hook="a.sh",le="1"} 0
size_bucket{hook="a.sh",le="5"} 1
size_bucket{hook="a.sh",le="10"} 1
size_bucket{hook="a.sh",le="+Inf"} 1
size_sum{hook="a.sh"} 4
size_count{hook="a.sh"} 1
# HELP temp Written by hooks to $METRICS_PATH.
# TYPE temp gauge
temp{hook="a.sh"} 3
`
	if err := testutil.CollectAndCompare(h, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	apply("b.sh", `{"group":"g","action":"expire"}`)
	if n := testutil.CollectAndCount(h, "objects"); n != 0 {
		t.Errorf("after expire: %d objects series", n)
	}
	// A name keeps its kind and labels.
	ops := parse(t, `{"name":"temp","add":1}
{"name":"runs_total","add":1,"labels":{"other":"y"}}`)
	err := h.Check("b.sh", ops)
	if err == nil || !strings.Contains(err.Error(), "line 1: metric temp: is a gauge (set); it cannot also be a counter (add)") ||
		!strings.Contains(err.Error(), "line 2: metric runs_total: has the labels") {
		t.Errorf("conflicts: %v", err)
	}
	// Served through a registry as a whole.
	r := prometheus.NewRegistry()
	r.MustRegister(h)
	if _, err := r.Gather(); err != nil {
		t.Errorf("gather: %v", err)
	}
}
