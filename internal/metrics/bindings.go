package metrics

import "time"

// bindingMetrics are the three families that shell-operator v1.20 serves
// about starting kubernetes bindings and keeping their watches alive,
// under the same names, so that its dashboards and alerts read ours.
// What each counts here is written in docs/metrics.md; in short:
//
//   - hook_enable_kubernetes_bindings_seconds{hook}: how long the hook's
//     kubernetes bindings, started together, took until every one of them
//     had listed (its Synchronization could be delivered).
//   - binding_monitor_missing_total{hook,binding}: runs that needed the
//     snapshot of a kubernetes binding of their hook that had not listed
//     (a reload had restarted it): the run is not started then, and is
//     retried, rather than given an empty or partial snapshot.
//   - factory_informer_dead_total{gvr,namespace}: watches that delivered
//     no event and no bookmark for --watch-idle-timeout, and were ended
//     and listed again.
type bindingMetrics struct {
	enableSeconds  *vec
	monitorMissing *vec
	informerDead   *vec
}

func newBindingMetrics(f factory) bindingMetrics {
	return bindingMetrics{
		enableSeconds: f.gauge("hook_enable_kubernetes_bindings_seconds",
			"Seconds from the start of a hook's kubernetes bindings until every one of them had listed, for their last start (start-up, a reload, a kind that became served).", "hook"),
		monitorMissing: f.counter("binding_monitor_missing_total",
			"Runs not started because a kubernetes binding whose snapshot they carry had not listed (a reload restarted it): retried, rather than run with an empty snapshot.", "hook", "binding"),
		informerDead: f.counter("factory_informer_dead_total",
			"Watches that delivered no event and no bookmark for --watch-idle-timeout and were ended and listed again: until then the bindings on them saw no change.", "gvr", "namespace"),
	}
}

// KubernetesBindingsEnabled records that the kubernetes bindings of hook
// started together have all listed, d after they started.
func (m *Metrics) KubernetesBindingsEnabled(hook string, d time.Duration) {
	if m == nil {
		return
	}
	m.bindings.enableSeconds.set(d.Seconds(), hook)
	if m.shell != nil {
		m.shell.enableSeconds.set(d.Seconds(), hook)
		m.shell.enableSuccess.set(1, hook)
	}
}

// BindingStarted makes binding_monitor_missing_total of a kubernetes
// binding start at 0, so that an alert's increase() sees the first one;
// in shell-operator's families also its hook's
// hook_enable_kubernetes_bindings_errors_total, and its
// hook_enable_kubernetes_bindings_success is 0 until the bindings started
// with it have listed (KubernetesBindingsEnabled).
func (m *Metrics) BindingStarted(hook, binding string) {
	if m == nil {
		return
	}
	m.bindings.monitorMissing.add(0, hook, binding)
	if s := m.shell; s != nil {
		s.monitorMissing.add(0, binding)
		s.enableErrors.add(0, hook)
		s.enableSuccess.set(0, hook)
	}
}

// BindingNotListed counts a run of hook that was not started because
// binding, whose snapshot it carries, had not listed.
func (m *Metrics) BindingNotListed(hook, binding string) {
	if m == nil {
		return
	}
	m.bindings.monitorMissing.add(1, hook, binding)
	if m.shell != nil {
		m.shell.monitorMissing.add(1, binding)
	}
}

// InformerStarted makes factory_informer_dead_total of the watches of gvr
// (a GroupVersionResource's String) in namespace ("" for all) start at 0.
func (m *Metrics) InformerStarted(gvr, namespace string) {
	if m == nil {
		return
	}
	m.bindings.informerDead.add(0, gvr, namespace)
	if m.shell != nil {
		m.shell.informerDead.add(0, gvr, namespace)
	}
}

// InformerDead counts a watch of gvr in namespace that delivered nothing
// for the idle timeout and was ended, to list again.
func (m *Metrics) InformerDead(gvr, namespace string) {
	if m == nil {
		return
	}
	m.bindings.informerDead.add(1, gvr, namespace)
	if m.shell != nil {
		m.shell.informerDead.add(1, gvr, namespace)
	}
}
