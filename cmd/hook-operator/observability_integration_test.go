package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// Runs that succeed and fail move the metrics; the failing run leaves an
// Event on its object and holds its queue, which debug shows; the hook's
// own metrics are served with a hook label.
func TestIntegrationMetricsEventsAndDebug(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	marks := t.TempDir()
	must(t, os.WriteFile(filepath.Join(marks, "broken"), nil, 0o600))
	h.hook(t, "watch.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}},"labelSelector":{"matchLabels":{"app":"obs"}},"jqFilter":".data"}]}`, `jq -c '.[] | (.objects // [{object: .object}])[] | .object.metadata.name | {name: "test_obs_seen_total", action: "add", value: 1, labels: {cm: .}}' "$BINDING_CONTEXT_PATH" >> "$METRICS_PATH"
if [[ -f `+marks+`/broken ]] && jq -e 'any(.[]; .object.metadata.name == "bad")' "$BINDING_CONTEXT_PATH" >/dev/null; then
  echo "boom: cannot handle bad" >&2
  exit 3
fi
`))
	o := h.start(t)
	o.waitReady(t)
	if code, body := o.get(t, "/healthz"); code != 200 {
		t.Errorf("/healthz: %d %s", code, body)
	}
	ctx := context.Background()
	create := func(name string) { h.configMap(t, name, map[string]string{"app": "obs"}, map[string]string{"k": name}) }
	runs := `hook_operator_hook_runs_total{binding="cms",hook="watch.sh",queue="main"}`
	errs := `hook_operator_hook_run_errors_total{binding="cms",hook="watch.sh",queue="main"}`
	o.waitFor(t, "the Synchronization run counted", func() bool { return o.metric(t, runs) == 1 })

	create("good")
	o.waitFor(t, "the good run counted, with the hook's metric", func() bool {
		return o.metric(t, runs) == 2 && o.metric(t, `test_obs_seen_total{cm="good",hook="watch.sh"}`) == 1
	})
	if v := o.metric(t, errs); v > 0 {
		t.Errorf("errors before any failure: %v", v)
	}
	if v := o.metric(t, `hook_operator_binding_objects{binding="cms",hook="watch.sh"}`); v != 1 {
		t.Errorf("objects held: %v, want 1", v)
	}

	create("bad")
	o.waitFor(t, "failed runs counted", func() bool { return o.metric(t, errs) >= 2 })
	if v := o.metric(t, `test_obs_seen_total{cm="bad",hook="watch.sh"}`); v != -1 {
		t.Errorf("a failed run's metrics were applied: %v", v)
	}

	// The Event on the object the failed run was about: the exit status,
	// not the hook's stderr (the log has that).
	o.waitFor(t, "a HookFailed Event on bad", func() bool {
		evs, err := h.c.Client.CoreV1().Events(h.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=bad,reason=HookFailed"})
		return err == nil && len(evs.Items) > 0 && strings.Contains(evs.Items[0].Message, "exit code 3") &&
			!strings.Contains(evs.Items[0].Message, "boom") &&
			evs.Items[0].Type == corev1.EventTypeWarning && evs.Items[0].InvolvedObject.Kind == "ConfigMap"
	})

	// debug shows the queue held by the retried task.
	queues := o.debug(t, "queues")
	if !regexp.MustCompile(`main\s+(retry in \S+|running)\s+watch\.sh\s+cms\s+\d+\s+[1-9]`).MatchString(queues) || !strings.Contains(queues, "exit code 3") {
		t.Errorf("debug queues does not show the retried task:\n%s", queues)
	}
	var qs []struct {
		Name    string
		Running *struct{ Attempts int }
		Pending []struct {
			Hook      string
			Attempts  int
			LastError string
		}
	}
	must(t, json.Unmarshal([]byte(o.debug(t, "queues", "-o", "json")), &qs))
	held := false
	for _, q := range qs {
		for _, p := range q.Pending {
			held = held || (p.Hook == "watch.sh" && p.Attempts > 0 && strings.Contains(p.LastError, "boom"))
		}
		held = held || (q.Running != nil && q.Running.Attempts > 0)
	}
	if !held {
		t.Errorf("debug queues -o json shows no held task: %+v", qs)
	}
	if hooksOut := o.debug(t, "hooks"); !strings.Contains(hooksOut, "synchronized") || !strings.Contains(hooksOut, "watch.sh") {
		t.Errorf("debug hooks:\n%s", hooksOut)
	}
	wantAll(t, "debug snapshots", o.debug(t, "snapshots", "watch.sh"), "good", "bad", `{"k":"good"}`)
	// Fixing the hook lets the queue go on.
	must(t, os.Remove(filepath.Join(marks, "broken")))
	o.waitFor(t, "the queue drained", func() bool { return strings.Contains(o.debug(t, "queues"), "idle") })
}

// proxy forwards TCP connections to target until stopped; restart listens
// on the same port again. Stopping it is the API server going away, for
// one operator only.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// proxiedKubeconfig writes a kubeconfig like the one at path that reaches
// the API server through a proxy of the test's own.
func proxiedKubeconfig(t *testing.T, path string) (*proxy, string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	must(t, err)
	var server string
	for _, cl := range cfg.Clusters {
		server = cl.Server
	}
	p := newProxy(t, strings.TrimPrefix(server, "https://"))
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + p.addr
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*cfg, kubeconfig))
	return p, kubeconfig
}

func (p *proxy) restart(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	must(t, err)
	p.serve(ln)
}

// The metric prefix's variable renames the operator's own metrics and
// leaves the hooks' alone; /metrics/hooks serves only the hooks' metrics,
// as shell-operator does.
func TestIntegrationMetricsPrefixAndHooksPath(t *testing.T) {
	h := newHarness(t)
	h.hook(t, "count.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}}}]}`, `echo '{"name":"test_prefix_runs_total","action":"add","value":1}' >> "$METRICS_PATH"
`))
	t.Setenv("HOOK_OPERATOR_METRICS_PREFIX", "custom_")
	o := h.start(t)
	runs := `custom_hook_runs_total{binding="cms",hook="count.sh",queue="main"}`
	o.waitFor(t, "the Synchronization run counted under the prefix", func() bool {
		return o.metric(t, runs) == 1
	})
	_, all := o.get(t, "/metrics")
	if strings.Contains(all, "hook_operator_") {
		t.Errorf("/metrics still has a hook_operator_ metric with another prefix set:\n%s", all)
	}
	if !strings.Contains(all, "custom_binding_objects{") || !strings.Contains(all, "custom_kube_requests_total{") {
		t.Errorf("/metrics lacks the prefixed binding_objects or kube_requests_total:\n%s", all)
	}
	if !strings.Contains(all, `test_prefix_runs_total{hook="count.sh"} 1`) {
		t.Errorf("/metrics lacks the hook's metric under its own name:\n%s", all)
	}
	code, hooksOnly := o.get(t, "/metrics/hooks")
	if code != 200 || !strings.Contains(hooksOnly, `test_prefix_runs_total{hook="count.sh"} 1`) {
		t.Errorf("/metrics/hooks: %d, want the hook's metric:\n%s", code, hooksOnly)
	}
	for _, other := range []string{"custom_", "go_", "process_"} {
		if strings.Contains(hooksOnly, "\n"+other) || strings.HasPrefix(hooksOnly, other) {
			t.Errorf("/metrics/hooks serves %s metrics too:\n%s", other, hooksOnly)
		}
	}

	// A prefix that cannot start a metric name is refused before anything starts.
	if out := startFails(t, h.hooks, operatorOpts{flags: []string{"--metrics-prefix", "9-bad"}}, time.Minute); !strings.Contains(out, "--metrics-prefix") {
		t.Errorf("start --metrics-prefix 9-bad does not name the flag:\n%s", out)
	}
}

// Readiness: not ready while onStartup and Synchronization runs are not
// done, ready after, not ready while the API server cannot be reached,
// and ready again when it can. Liveness stays ok throughout.
func TestIntegrationReadiness(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p, kubeconfig := proxiedKubeconfig(t, h.c.Kubeconfig)

	marks := t.TempDir()
	h.hook(t, "slow.sh", bashHook(`{"configVersion":"v1","onStartup":1,"kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}}}]}`, `
if jq -e '.[0].binding == "onStartup"' "$BINDING_CONTEXT_PATH" >/dev/null; then
  until [[ -f `+marks+`/go ]]; do sleep 0.1; done
fi
`))
	o := startOperator(t, h.hooks, operatorOpts{kubeconfig: kubeconfig})
	if code, body := o.get(t, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting") {
		t.Errorf("during onStartup: /readyz %d %q, want 503 naming start-up", code, body)
	}
	must(t, os.WriteFile(filepath.Join(marks, "go"), nil, 0o600))
	o.waitReady(t)

	p.stop()
	o.waitFor(t, "not ready without the API server", func() bool {
		code, body := o.get(t, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "the API server does not answer")
	})
	if code, body := o.get(t, "/healthz"); code != 200 {
		t.Errorf("/healthz without the API server: %d %s; the process is alive", code, body)
	}
	p.restart(t)
	o.waitReady(t)
}

// GOMAXPROCS follows the load (internal/procs): an idle operator runs its
// Go code on one processor, which go_sched_gomaxprocs_threads shows;
// --adapt-gomaxprocs=false and a GOMAXPROCS variable leave the setting as
// the runtime has it.
func TestIntegrationGOMAXPROCSFollowsTheLoad(t *testing.T) {
	h := newHarness(t)
	h.hook(t, "idle.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}}}]}`, ""))
	const series = "go_sched_gomaxprocs_threads"
	adapted := h.start(t)
	adapted.waitFor(t, "GOMAXPROCS 1 while idle", func() bool { return adapted.metric(t, series) == 1 })

	fixed := h.startEnv(t, []string{"GOMAXPROCS=3"})
	off := h.start(t, "--adapt-gomaxprocs=false")
	// The governor lowers after a calm second; give it three.
	time.Sleep(3 * time.Second)
	if got := fixed.metric(t, series); got != 3 {
		t.Errorf("with GOMAXPROCS=3 set, %s is %v, want 3: the variable fixes it", series, got)
	}
	// This test process runs with the runtime's default too (same CPUs and
	// cgroup quota, no GOMAXPROCS variable, or the check above would say so).
	if got, want := off.metric(t, series), float64(runtime.GOMAXPROCS(0)); got != want {
		t.Errorf("with --adapt-gomaxprocs=false, %s is %v, want the runtime's default %v", series, got, want)
	}
}

// The operator starts itself again in place with the runtime's monitor kept
// steady (GODEBUG's schedtrace), its hooks without the setting; the flag
// off, or a schedtrace of the user's, leave the environment as it was.
func TestIntegrationSteadySysmon(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, tc := range []struct {
		name              string
		env, args         []string
		operator, forHook string
	}{
		{"default", nil, nil, "schedtrace=2147483647", "unset"},
		{"other settings", []string{"GODEBUG=gctrace=0"}, nil, "gctrace=0,schedtrace=2147483647", "gctrace=0"},
		{"flag off", nil, []string{"--steady-sysmon=false"}, "unset", "unset"},
		{"user's schedtrace", []string{"GODEBUG=schedtrace=600000"}, nil, "schedtrace=600000", "schedtrace=600000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hooks := t.TempDir()
			out := filepath.Join(hooks, "godebug")
			writeHook(t, hooks, "env.sh", bashHook(`{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["`+h.ns+`"]}}}]}`, `echo "${GODEBUG-unset}" > `+out+`.tmp && mv `+out+`.tmp `+out+`
`))
			env := tc.env
			if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") }) {
				env = append(env, "GODEBUG=") // this test process's own GODEBUG does not count
			}
			o := startOperator(t, hooks, operatorOpts{env: env, flags: tc.args})
			// The process the test started is the operator: started again
			// in place, the pid is the same.
			environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", o.pid()))
			must(t, err)
			got := "unset"
			for _, kv := range strings.Split(string(environ), "\x00") {
				if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok && v != "" {
					got = v
				}
			}
			if got != tc.operator {
				t.Errorf("the operator runs with GODEBUG %q, want %q", got, tc.operator)
			}
			o.waitFor(t, "the hook's Synchronization run", func() bool { _, err := os.Stat(out); return err == nil })
			b, err := os.ReadFile(out)
			must(t, err)
			if got := strings.TrimSpace(string(b)); got != tc.forHook {
				t.Errorf("the hook ran with GODEBUG %q, want %q", got, tc.forHook)
			}
			// schedtrace prints once its interval has passed since the
			// machine booted: for ours, 24.8 days.
			if tc.name != "user's schedtrace" && uptime(t) < 24*24*time.Hour && strings.Contains(o.logs.String(), "SCHED ") {
				t.Errorf("the operator printed the scheduler's state:\n%s", o.logs.String())
			}
		})
	}
}

func uptime(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/uptime")
	must(t, err)
	f, _, _ := strings.Cut(string(b), " ")
	sec, err := strconv.ParseFloat(f, 64)
	must(t, err)
	return time.Duration(sec * float64(time.Second))
}
