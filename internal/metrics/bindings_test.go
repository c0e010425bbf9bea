package metrics

import (
	"strings"
	"testing"
	"time"
)

// The three families shell-operator v1.20 serves about kubernetes
// bindings have its names under our prefix, its types, its labels (with
// hook added to binding_monitor_missing_total), and start at 0 where an
// alert takes increase() of them.
func TestBindingMetricsShellOperatorNames(t *testing.T) {
	m := New("shell_operator_")
	m.BindingStarted("a.sh", "pods")
	m.InformerStarted("/v1, Resource=pods", "")
	wantLines(t, served(t, m),
		"# TYPE shell_operator_binding_monitor_missing_total counter",
		`shell_operator_binding_monitor_missing_total{binding="pods",hook="a.sh"} 0`,
		"# TYPE shell_operator_factory_informer_dead_total counter",
		`shell_operator_factory_informer_dead_total{gvr="/v1, Resource=pods",namespace=""} 0`,
	)
	if strings.Contains(served(t, m), "hook_enable_kubernetes_bindings_seconds") {
		t.Error("hook_enable_kubernetes_bindings_seconds served before any binding listed")
	}

	m.KubernetesBindingsEnabled("a.sh", 1500*time.Millisecond)
	m.KubernetesBindingsEnabled("b.sh", 2*time.Second)
	m.KubernetesBindingsEnabled("a.sh", 250*time.Millisecond) // a later start replaces the value
	m.BindingNotListed("a.sh", "pods")
	m.BindingNotListed("a.sh", "pods")
	m.InformerDead("/v1, Resource=pods", "")
	wantLines(t, served(t, m),
		"# TYPE shell_operator_hook_enable_kubernetes_bindings_seconds gauge",
		`shell_operator_hook_enable_kubernetes_bindings_seconds{hook="a.sh"} 0.25`,
		`shell_operator_hook_enable_kubernetes_bindings_seconds{hook="b.sh"} 2`,
		`shell_operator_binding_monitor_missing_total{binding="pods",hook="a.sh"} 2`,
		`shell_operator_factory_informer_dead_total{gvr="/v1, Resource=pods",namespace=""} 1`,
	)

	var nilMetrics *Metrics
	nilMetrics.KubernetesBindingsEnabled("a.sh", time.Second)
	nilMetrics.BindingStarted("a.sh", "pods")
	nilMetrics.BindingNotListed("a.sh", "pods")
	nilMetrics.InformerStarted("/v1, Resource=pods", "")
	nilMetrics.InformerDead("/v1, Resource=pods", "")
}
