package run

import (
	"strings"
	"testing"
)

func TestRunDirEnvHasEachContractVariableOnce(t *testing.T) {
	d := &runDir{contexts: "/r/c", patch: "/r/p", metrics: "/r/m", validating: "/r/v", conversion: "/r/x"}
	env := d.env([]string{"A=1", "METRICS_PATH=/old", "KUBERNETES_PATCH_PATH=/old", "B=METRICS_PATH=2", "TRACEPARENT=00-x", "TRACE_SPANS_PATH=/x"}, nil)
	want := []string{
		"A=1", "B=METRICS_PATH=2",
		"BINDING_CONTEXT_PATH=/r/c", "KUBERNETES_PATCH_PATH=/r/p", "METRICS_PATH=/r/m",
		"VALIDATING_RESPONSE_PATH=/r/v", "ADMISSION_RESPONSE_PATH=/r/v", "CONVERSION_RESPONSE_PATH=/r/x",
	}
	if strings.Join(env, " ") != strings.Join(want, " ") {
		t.Errorf("env = %q\nwant  %q", env, want)
	}
}

// With tracing on, the run's trace context replaces any the operator
// inherited, and TRACESTATE comes only when set.
func TestRunDirEnvCarriesTheRunsTrace(t *testing.T) {
	d := &runDir{contexts: "/r/c", patch: "/r/p", metrics: "/r/m", validating: "/r/v", conversion: "/r/x", spans: "/r/s"}
	parent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		state string
		want  []string
	}{
		{"", []string{"TRACEPARENT=" + parent, "TRACE_SPANS_PATH=/r/s"}},
		{"k=v", []string{"TRACEPARENT=" + parent, "TRACE_SPANS_PATH=/r/s", "TRACESTATE=k=v"}},
	} {
		env := d.env([]string{"TRACEPARENT=00-old", "TRACESTATE=old", "A=1"}, &Trace{Parent: parent, State: tc.state})
		want := append([]string{"A=1",
			"BINDING_CONTEXT_PATH=/r/c", "KUBERNETES_PATCH_PATH=/r/p", "METRICS_PATH=/r/m",
			"VALIDATING_RESPONSE_PATH=/r/v", "ADMISSION_RESPONSE_PATH=/r/v", "CONVERSION_RESPONSE_PATH=/r/x"}, tc.want...)
		if strings.Join(env, " ") != strings.Join(want, " ") {
			t.Errorf("env = %q\nwant  %q", env, want)
		}
	}
}
