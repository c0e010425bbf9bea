package main_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// stallingProxy is an HTTPS proxy in front of the API server that, while
// frozen, stops delivering on the requests whose path contains match, as
// an API server whose watch cache stopped delivering would: a watch open
// when the freeze begins goes silent (its events and bookmarks are dropped,
// the connection stays open); a new watch or list gets no answer until the
// thaw. Every other request is forwarded with the cluster's own
// credentials.
type stallingProxy struct {
	kubeconfig string // reaches the cluster through the proxy
	match      string
	mu         sync.Mutex
	thaw       chan struct{} // non-nil while frozen; closed by unfreeze
	held       atomic.Int64  // requests held or silenced
}

func newStallingProxy(t *testing.T, c *testcluster.Cluster, match string) *stallingProxy {
	t.Helper()
	p := &stallingProxy{match: match}
	p.kubeconfig = c.Proxy(t, func(upstream http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.URL.Path, p.match) {
				upstream.ServeHTTP(w, r)
				return
			}
			if thaw := p.frozen(); thaw != nil {
				p.held.Add(1)
				select {
				case <-thaw:
				case <-r.Context().Done():
					return
				}
			}
			upstream.ServeHTTP(&silenceable{ResponseWriter: w, p: p}, r)
		})
	})
	return p
}

// frozen returns the channel closed at the thaw while frozen, else nil.
func (p *stallingProxy) frozen() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.thaw
}

func (p *stallingProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thaw == nil {
		p.thaw = make(chan struct{})
	}
}

func (p *stallingProxy) unfreeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thaw != nil {
		close(p.thaw)
		p.thaw = nil
	}
}

// silenceable passes a response on until a freeze; from then on it drops
// what the API server sends, for good: the response stays open and silent.
type silenceable struct {
	http.ResponseWriter
	p      *stallingProxy
	silent bool
}

func (s *silenceable) Write(b []byte) (int, error) {
	if !s.silent && s.p.frozen() != nil {
		s.silent = true
		s.p.held.Add(1)
	}
	if s.silent {
		return len(b), nil
	}
	return s.ResponseWriter.Write(b)
}

func (s *silenceable) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// A binding whose watch stops delivering (a proxy stalls the ConfigMaps of
// one namespace, as a watch cache that stopped would: no event, no
// bookmark, the connection open) has its view age grow past its staleAfter
// (binding_view_age_seconds above binding_stale_after_seconds, the
// condition of HookOperatorBindingStale); its watch is restarted at the
// binding's own threshold, well before --watch-idle-timeout's, and counted
// (watch_restarts_total{reason="idle"}); debug hooks marks it STALE; and a
// real Prometheus, scraping the operator with the shipped alerts (for:
// shortened), fires HookOperatorBindingStale for that binding alone. A
// binding of the same hook on another resource stays fresh, with the
// hook's settings.staleAfter as its threshold. After the thaw the view is
// fresh again, the alert resolves, and the change made during the freeze
// reaches the hook.
func TestIntegrationStalledBindingIsStaleAndRestarted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := newStallingProxy(t, h.c, "/namespaces/"+h.ns+"/configmaps")
	marks := t.TempDir()
	seen := filepath.Join(marks, "seen")
	inNs := `"namespace":{"nameSelector":{"matchNames":["` + h.ns + `"]}}`
	h.hook(t, "fresh.sh", bashHook(`{"configVersion":"v1","settings":{"staleAfter":"10m"},"kubernetes":[`+
		`{"name":"cms","kind":"ConfigMap",`+inNs+`,"staleAfter":"3s","executeHookOnEvent":["Added"],"executeHookOnSynchronization":false},`+
		`{"name":"secrets","kind":"Secret",`+inNs+`,"executeHookOnEvent":[]}]}`,
		`jq -r '.[] | select(.type == "Event") | .object.metadata.name' "$BINDING_CONTEXT_PATH" >>`+seen+"\n"))
	o := startOperator(t, h.hooks, operatorOpts{kubeconfig: p.kubeconfig})
	o.waitReady(t)

	// A heartbeat keeps the ConfigMaps' watch busy, so that it never goes
	// idle by itself, as a watch of objects that change often would not.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	cms := h.c.Client.CoreV1().ConfigMaps(h.ns)
	h.configMap(t, "heartbeat", nil, nil)
	go func() {
		for n := 0; ctx.Err() == nil; n++ {
			_, _ = cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "heartbeat"}, Data: map[string]string{"n": strconv.Itoa(n)}}, metav1.UpdateOptions{})
			time.Sleep(300 * time.Millisecond)
		}
	}()

	age := `hook_operator_binding_view_age_seconds{binding="cms",hook="fresh.sh"}`
	after := `hook_operator_binding_stale_after_seconds{binding="cms",hook="fresh.sh"}`
	secretsAge := `hook_operator_binding_view_age_seconds{binding="secrets",hook="fresh.sh"}`
	secretsAfter := `hook_operator_binding_stale_after_seconds{binding="secrets",hook="fresh.sh"}`
	restarts := `hook_operator_watch_restarts_total{reason="idle",resource="/v1, Resource=configmaps"}`
	if v := o.metric(t, after); v != 3 {
		t.Errorf("%s = %v, want the binding's own staleAfter, 3", after, v)
	}
	if v := o.metric(t, secretsAfter); v != 600 {
		t.Errorf("%s = %v, want the hook's settings.staleAfter, 600", secretsAfter, v)
	}
	o.waitFor(t, "the heartbeat seen", func() bool { v := o.metric(t, age); return v >= 0 && v < 3 })
	before := max(o.metric(t, restarts), 0)

	// A real Prometheus scrapes the operator and evaluates the shipped
	// alerts (each for: shortened, as in the live monitoring test).
	dir := t.TempDir()
	prom := startPrometheus(t, prometheusBinary(t), dir, map[string]any{
		"global":     map[string]any{"scrape_interval": liveInterval.String(), "evaluation_interval": liveInterval.String()},
		"rule_files": []string{liveRules(t, dir)},
		"scrape_configs": []any{map[string]any{"job_name": "hook-operator-metrics", "static_configs": []any{map[string]any{
			"targets": []string{o.addr}, "labels": map[string]string{"namespace": h.ns, "pod": "hook-operator-fresh-1"}}}}},
	})
	staleAlerts := func() (out []promAlert) {
		for _, a := range prom.alerts(t) {
			if a.Labels["alertname"] == "HookOperatorBindingStale" {
				out = append(out, a)
			}
		}
		return out
	}
	promDiag := func() string { return "firing or pending: " + prom.alertsSummary(t) + "\n" + o.logs.String() }
	waitSlowly(t, "the operator scraped, the cms binding's age among its series", func() bool {
		return hasNumber(prom.query(t, age))
	}, promDiag)
	if a := staleAlerts(); len(a) != 0 {
		t.Errorf("HookOperatorBindingStale before any freeze: %v", a)
	}

	p.freeze()
	h.configMap(t, "during-the-freeze", nil, nil)
	o.waitFor(t, "the view older than its threshold", func() bool { return o.metric(t, age) > o.metric(t, after) })
	o.waitFor(t, "the silent watch restarted and counted", func() bool { return o.metric(t, restarts) > before })
	if p.held.Load() == 0 {
		t.Fatal("the proxy held no request: the test froze nothing")
	}
	out := o.debug(t, "hooks")
	var cmsRow, secretsRow string
	for _, line := range strings.Split(out, "\n") {
		switch f := strings.Fields(line); {
		case len(f) > 1 && f[1] == "cms":
			cmsRow = line
		case len(f) > 1 && f[1] == "secrets":
			secretsRow = line
		}
	}
	if !strings.Contains(cmsRow, "STALE") || !strings.Contains(cmsRow, "> 3s") {
		t.Errorf("debug hooks does not mark cms STALE over 3s:\n%s", out)
	}
	if strings.Contains(secretsRow, "STALE") || secretsRow == "" {
		t.Errorf("debug hooks marks secrets stale, or lacks it:\n%s", out)
	}
	if v, limit := o.metric(t, secretsAge), o.metric(t, secretsAfter); v < 0 || v > limit {
		t.Errorf("%s = %v, want a fresh view (under %v): the freeze is the ConfigMaps'", secretsAge, v, limit)
	}
	// The restart does not help while the freeze lasts: the alert fires,
	// for the frozen binding alone.
	waitSlowly(t, "HookOperatorBindingStale firing for fresh.sh's cms", func() bool {
		return slices.ContainsFunc(staleAlerts(), func(a promAlert) bool {
			return a.State == "firing" && a.Labels["hook"] == "fresh.sh" && a.Labels["binding"] == "cms" &&
				a.Labels["namespace"] == h.ns && a.Labels["pod"] == "hook-operator-fresh-1"
		})
	}, promDiag)
	for _, a := range staleAlerts() {
		if a.Labels["binding"] != "cms" {
			t.Errorf("HookOperatorBindingStale (%s) for binding %q: only cms is frozen", a.State, a.Labels["binding"])
		}
	}

	p.unfreeze()
	o.waitFor(t, "the view fresh again", func() bool { v := o.metric(t, age); return v >= 0 && v < 3 })
	waitSlowly(t, "HookOperatorBindingStale resolved after the thaw", func() bool { return len(staleAlerts()) == 0 }, promDiag)
	o.waitFor(t, "the change made during the freeze delivered", func() bool {
		data, _ := os.ReadFile(seen)
		return strings.Contains(string(data), "during-the-freeze")
	})
}
