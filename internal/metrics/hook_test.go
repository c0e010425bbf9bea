package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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

// apply parses lines, checks them for hook and applies them, as the
// runtime does with what a hook wrote to $METRICS_PATH.
func apply(t *testing.T, h *metrics.HookMetrics, hook, lines string) {
	t.Helper()
	ops := parse(t, lines)
	if err := h.Check(hook, ops); err != nil {
		t.Fatal(err)
	}
	h.Apply(hook, ops)
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

func TestParseHookOpsErrorOfManyLinesIsBounded(t *testing.T) {
	data := strings.Repeat(`{"name": "m", "action": "explode", "value": 1}`+"\n", 50_000)
	_, err := metrics.ParseHookOps([]byte(data))
	if err == nil {
		t.Fatal("no error")
	}
	if j, ok := err.(interface{ Unwrap() []error }); !ok || len(j.Unwrap()) != 50_000 {
		t.Errorf("the error does not hold every line's problem")
	}
	msg := err.Error()
	if len(msg) > 12<<10 || !strings.HasPrefix(msg, "line 1: ") ||
		!strings.HasSuffix(msg, "... and 49990 more (50000 problems in all; fix these and run again to see the rest)") {
		t.Errorf("message of %d bytes:\n%.500s", len(msg), msg)
	}
}

func TestHookMetricsKindsGroupsAndExpire(t *testing.T) {
	m := metrics.New(metrics.DefaultPrefix)
	h := m.Hooks
	apply(t, h, "a.sh", `{"name":"runs_total","add":2,"labels":{"kind":"x"}}
{"name":"temp","set":3}
{"name":"size","action":"observe","value":4,"buckets":[1,5,10]}
{"name":"objects","action":"set","value":1,"group":"g","labels":{"obj":"one"}}
{"name":"objects","action":"set","value":1,"group":"g","labels":{"obj":"two"}}`)
	apply(t, h, "a.sh", `{"name":"runs_total","add":1,"labels":{"kind":"x"}}
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
	if got := "\n" + serve(t, m.HooksHandler()); got != want {
		t.Errorf("/metrics/hooks serves\n%s\nwant\n%s", got, want)
	}
	all := serve(t, m.Handler())
	for _, family := range append(strings.Split(want, "# HELP ")[1:], "# TYPE go_goroutines gauge\n") {
		if !strings.Contains(all, family) {
			t.Errorf("/metrics lacks\n%s\nit serves:\n%s", family, all)
		}
	}
	apply(t, h, "b.sh", `{"group":"g","action":"expire"}`)
	if got := serve(t, m.HooksHandler()); strings.Contains(got, "objects") {
		t.Errorf("after expire:\n%s", got)
	}
	// A name keeps its kind and labels.
	ops := parse(t, `{"name":"temp","add":1}
{"name":"runs_total","add":1,"labels":{"other":"y"}}`)
	err := h.Check("b.sh", ops)
	if err == nil || !strings.Contains(err.Error(), "line 1: metric temp: is a gauge (set); it cannot also be a counter (add)") ||
		!strings.Contains(err.Error(), "line 2: metric runs_total: has the labels") {
		t.Errorf("conflicts: %v", err)
	}
	// The operator's own names are not for hooks.
	err = h.Check("b.sh", parse(t, `{"name":"hook_operator_hook_runs_total","add":1}
{"name":"go_goroutines","set":1}`))
	if err == nil || !strings.Contains(err.Error(), "line 1: metric hook_operator_hook_runs_total: the name is one of the operator's own metrics") ||
		!strings.Contains(err.Error(), "line 2: metric go_goroutines: the name is one") {
		t.Errorf("reserved names: %v", err)
	}
}

// serve returns what h serves to a GET.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != metrics.ContentType {
		t.Fatalf("answer %d, %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	return rec.Body.String()
}
