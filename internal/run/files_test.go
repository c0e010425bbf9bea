package run

import (
	"strings"
	"testing"
)

func TestRunDirEnvHasEachContractVariableOnce(t *testing.T) {
	d := &runDir{contexts: "/r/c", patch: "/r/p", metrics: "/r/m", validating: "/r/v", conversion: "/r/x"}
	env := d.env([]string{"A=1", "METRICS_PATH=/old", "KUBERNETES_PATCH_PATH=/old", "B=METRICS_PATH=2"})
	want := []string{
		"A=1", "B=METRICS_PATH=2",
		"BINDING_CONTEXT_PATH=/r/c", "KUBERNETES_PATCH_PATH=/r/p", "METRICS_PATH=/r/m",
		"VALIDATING_RESPONSE_PATH=/r/v", "ADMISSION_RESPONSE_PATH=/r/v", "CONVERSION_RESPONSE_PATH=/r/x",
	}
	if strings.Join(env, " ") != strings.Join(want, " ") {
		t.Errorf("env = %q\nwant  %q", env, want)
	}
}
