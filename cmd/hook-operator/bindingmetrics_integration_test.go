package main_test

import (
	"testing"
	"time"
)

// The three metrics shell-operator v1.20 serves about kubernetes bindings
// are served under its prefix by a running operator: after start-up, the
// time each hook's bindings took to list (within the time start-up took),
// binding_monitor_missing_total at 0 for each binding, and
// factory_informer_dead_total counting the watch of a quiet namespace
// that went idle (no event and no bookmark for --watch-idle-timeout) and
// was listed again.
func TestIntegrationShellOperatorBindingMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	inNs := `"namespace":{"nameSelector":{"matchNames":["` + h.ns + `"]}}`
	h.hook(t, "two.sh", bashHook(`{"configVersion":"v1","kubernetes":[`+
		`{"name":"cms","kind":"ConfigMap",`+inNs+`},`+
		`{"name":"secrets","kind":"Secret",`+inNs+`,"includeSnapshotsFrom":["cms"]}]}`, ""))
	began := time.Now()
	o := h.start(t, "--metrics-prefix", "shell_operator_", "--watch-idle-timeout", "2s")
	o.waitReady(t)
	startup := time.Since(began).Seconds()

	if v := o.metric(t, `shell_operator_hook_enable_kubernetes_bindings_seconds{hook="two.sh"}`); v <= 0 || v > startup {
		t.Errorf("hook_enable_kubernetes_bindings_seconds = %v, want above 0 and within start-up's %.2fs", v, startup)
	}
	for _, b := range []string{"cms", "secrets"} {
		if v := o.metric(t, `shell_operator_binding_monitor_missing_total{binding="`+b+`",hook="two.sh"}`); v != 0 {
			t.Errorf("binding_monitor_missing_total of %s = %v, want 0 (served, at 0)", b, v)
		}
	}
	dead := `shell_operator_factory_informer_dead_total{gvr="/v1, Resource=configmaps",namespace="` + h.ns + `"}`
	if v := o.metric(t, dead); v < 0 {
		t.Fatalf("%s not served", dead)
	}
	// Nothing changes in the namespace: its watches go idle after 2 s,
	// before the API server's next bookmark (about a minute).
	o.waitFor(t, "an idle watch counted as a dead informer", func() bool { return o.metric(t, dead) >= 1 })
}
