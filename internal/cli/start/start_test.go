package start

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/shard"
)

// parse defines start's flags, parses args and applies env as the root
// command does.
func parse(args []string, env map[string]string) (Flags, *pflag.FlagSet, error) {
	var f Flags
	fs := pflag.NewFlagSet("start", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bindFlags(fs, &f)
	if err := fs.Parse(args); err != nil {
		return f, fs, err
	}
	return f, fs, envflag.Apply(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

// shell-operator's host and port settings of a listener (flags or
// variables) make one host:port, each with shell-operator's default when
// not given; ours win over its; a value of ours without a port is a host.
func TestListenAddressesFromShellOperatorSettings(t *testing.T) {
	type addrs struct{ metrics, webhook, conversion string }
	def := addrs{":9115", ":9680", ""}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want addrs
		err  string
	}{
		{want: def},
		{env: map[string]string{"SHELL_OPERATOR_LISTEN_PORT": "9650"}, want: addrs{":9650", ":9680", ""}},
		{env: map[string]string{"SHELL_OPERATOR_LISTEN_ADDRESS": "0.0.0.0", "SHELL_OPERATOR_LISTEN_PORT": "9115"}, want: def},
		{env: map[string]string{"SHELL_OPERATOR_LISTEN_ADDRESS": "127.0.0.1"}, want: addrs{"127.0.0.1:9115", ":9680", ""}},
		{env: map[string]string{"SHELL_OPERATOR_LISTEN_ADDRESS": "::1", "SHELL_OPERATOR_LISTEN_PORT": "80"}, want: addrs{"[::1]:80", ":9680", ""}},
		{env: map[string]string{"SHELL_OPERATOR_LISTEN_PORT": "http"}, err: "use a port number"},
		// Its flags, as a v1.20 Deployment's args give them.
		{args: []string{"--listen-address=0.0.0.0", "--listen-port=9650"}, want: addrs{":9650", ":9680", ""}},
		{args: []string{"--listen-port", "9650"}, env: map[string]string{"SHELL_OPERATOR_LISTEN_ADDRESS": "127.0.0.1"}, want: addrs{"127.0.0.1:9650", ":9680", ""}},
		{args: []string{"--listen-address=127.0.0.1"}, want: addrs{"127.0.0.1:9115", ":9680", ""}},
		{args: []string{"--listen-port=80"}, env: map[string]string{"SHELL_OPERATOR_LISTEN_PORT": "81"}, want: addrs{":80", ":9680", ""}},
		{args: []string{"--validating-webhook-listen-address=10.0.0.1", "--validating-webhook-listen-port=9443"}, want: addrs{":9115", "10.0.0.1:9443", ""}},
		{args: []string{"--validating-webhook-listen-port=9443"}, want: addrs{":9115", ":9443", ""}},
		{args: []string{"--conversion-webhook-listen-port=9444"}, want: addrs{":9115", ":9680", ":9444"}},
		{args: []string{"--conversion-webhook-listen-address=0.0.0.0"}, want: addrs{":9115", ":9680", ":9681"}},
		{env: map[string]string{"CONVERSION_WEBHOOK_LISTEN_PORT": "9444"}, want: addrs{":9115", ":9680", ":9444"}},
		{args: []string{"--validating-webhook-listen-port=https"}, err: "use a port number"},
		// Ours win; ours with a port is taken as it is.
		{args: []string{"--listen-address=:8080"}, env: map[string]string{"SHELL_OPERATOR_LISTEN_PORT": "81"}, want: addrs{":8080", ":9680", ""}},
		{env: map[string]string{"HOOK_OPERATOR_LISTEN_ADDRESS": "127.0.0.1:1", "SHELL_OPERATOR_LISTEN_ADDRESS": "10.0.0.1"}, want: addrs{"127.0.0.1:1", ":9680", ""}},
		{args: []string{"--listen-address="}, want: addrs{"", ":9680", ""}},
	} {
		f, _, err := parse(tc.args, tc.env)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v %v: error %v, want %q", tc.args, tc.env, err, tc.err)
			}
			continue
		}
		got := addrs{f.ListenAddress, f.Webhook.ListenAddress, f.Webhook.Conversion.ListenAddress}
		if err != nil || got != tc.want {
			t.Errorf("%v %v: %+v, %v; want %+v", tc.args, tc.env, got, err, tc.want)
		}
	}
}

func TestLeaderTimingsChecked(t *testing.T) {
	for _, c := range []struct {
		lease, renew, retry time.Duration
		ok                  bool
	}{
		{15 * time.Second, 10 * time.Second, 2 * time.Second, true},
		{10 * time.Second, 5 * time.Second, time.Second, true},
		// A leader could stop only at 12 s, after a standby took over at 11 s.
		{11 * time.Second, 10 * time.Second, 2 * time.Second, false},
		{15 * time.Second, 15 * time.Second, 2 * time.Second, false},
		{15 * time.Second, 2 * time.Second, 2 * time.Second, false},
		{15 * time.Second, 10 * time.Second, 0, false},
	} {
		err := LeaderFlags{LeaseDuration: c.lease, RenewDeadline: c.renew, RetryPer: c.retry}.check()
		if (err == nil) != c.ok {
			t.Errorf("lease %s, renew %s, retry %s: %v, want ok=%t", c.lease, c.renew, c.retry, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--leader-elect-renew-deadline") {
			t.Errorf("the error does not name the flags: %v", err)
		}
	}
}

// valid are flags that pass check.
func valid() Flags {
	return Flags{HookTimeout: time.Minute, MetricsPrefix: metrics.DefaultPrefix, MaxParallel: 1, ListenMaxConns: 1,
		Leader: LeaderFlags{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPer: 2 * time.Second},
		Shard:  ShardFlags{By: shard.ByUID}}
}

// Each refusal of check names the flag and says what to use.
func TestFlagsChecked(t *testing.T) {
	if err := valid().check(); err != nil {
		t.Fatalf("valid flags: %v", err)
	}
	for _, tc := range []struct {
		change func(*Flags)
		want   string
	}{
		{func(f *Flags) { f.HookTimeout = 0 }, "--hook-timeout"},
		{func(f *Flags) { f.WatchIdle = time.Millisecond }, "--watch-idle-timeout=1ms: use 0"},
		{func(f *Flags) { f.MaxParallel = 0 }, "--max-parallel-hooks=0: use 1 or more"},
		{func(f *Flags) { f.ListenMaxConns = 0 }, "--listen-max-connections=0: use 1 or more"},
		{func(f *Flags) { f.BatchWindow = BatchWindow{Fixed: time.Hour} }, "--batch-window=1h0m0s: use auto, or a duration from 0"},
		{func(f *Flags) { f.BatchFill = BatchFill{Fixed: -1} }, "--batch-fill=-1: use auto (the default), or 0 (the window alone decides) or more"},
		{func(f *Flags) { f.Reload = ReloadFlags{Enabled: true} }, "--hooks-reload-poll-period: use at least 1s"},
		{func(f *Flags) { f.DryRun = "both" }, "--dry-run=both: use client or server"},
		{func(f *Flags) { f.DryRun, f.Leader.Enabled = "client", true }, "--leader-elect with --dry-run"},
		{func(f *Flags) { f.DryRun, f.Shard.Enabled = "client", true }, "--sharding with --dry-run"},
		{func(f *Flags) { f.Shard = ShardFlags{Enabled: true, By: "name"} }, "--shard-by=name: use uid or namespace"},
		// --sharding implies leader election, so its timings are checked too.
		{func(f *Flags) { f.Shard.Enabled, f.Leader.RenewDeadline = true, 15*time.Second }, "--leader-elect-renew-deadline 15s"},
		{func(f *Flags) { f.Leader.Enabled, f.Leader.RetryPer = true, 0 }, "--leader-elect-retry-period 0s"},
		{func(f *Flags) { f.Leader.Standby = true }, "--leader-elect-standby without --leader-elect or --sharding"},
	} {
		f := valid()
		tc.change(&f)
		if err := f.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", f, err, tc.want)
		}
	}
}

// Leader election and sharding keep their Leases in the operator's
// namespace; without one, start says which flag to set before it starts
// anything.
func TestElectionNeedsTheOperatorNamespace(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	if _, err := os.Stat(serviceAccountNamespace); err == nil {
		t.Skip("runs in a Pod: its namespace is the operator's") // never on the test machines
	}
	for _, tc := range []struct {
		f    func(*Flags)
		want string
	}{
		{func(f *Flags) { f.Leader.Enabled = true }, "--leader-elect keeps its Lease in the operator's namespace: set --operator-namespace"},
		{func(f *Flags) { f.Shard.Enabled = true }, "--sharding keeps its membership Leases in the operator's namespace: set --operator-namespace"},
	} {
		f := valid()
		tc.f(&f)
		p := &parts{f: f, log: logrus.New()}
		if _, err := p.compose(context.Background(), operator.Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// start samples allocations for heap profiles only with --pprof, which
// serves them: the records of sampled stacks are never freed, and they
// grew the operator's RSS over hours (docs/soak.md).
func TestAllocationsSampledOnlyWithPprof(t *testing.T) {
	defer func(rate int, limit int64) {
		runtime.MemProfileRate = rate
		debug.SetMemoryLimit(limit)
	}(runtime.MemProfileRate, debug.SetMemoryLimit(-1))
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 0},
		{[]string{"--pprof"}, defaultMemProfileRate},
		{[]string{"--pprof=false"}, 0},
	} {
		runtime.MemProfileRate = 4096 // neither
		cmd := New(io.Discard, quiet)
		// --hook-timeout 0 is refused by Run's first check, after the
		// process is set up and before anything starts.
		cmd.SetArgs(append(tc.args, "--hook-timeout", "0"))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--hook-timeout") {
			t.Fatalf("start %v: %v, want the --hook-timeout refusal", tc.args, err)
		}
		if runtime.MemProfileRate != tc.want {
			t.Errorf("start %v: MemProfileRate %d, want %d", tc.args, runtime.MemProfileRate, tc.want)
		}
	}
}

// shell-operator's flags set ours, in its formats: a repeated client CA
// adds up, --namespace is --operator-namespace, --kube-config
// --kubeconfig, and its prefix flag serves its own metric families under
// that prefix (ours keep theirs).
func TestShellOperatorFlagsSetOurs(t *testing.T) {
	f, _, err := parse([]string{"--validating-webhook-client-ca", "/a.pem", "--validating-webhook-client-ca=/b.pem",
		"--conversion-webhook-client-ca=/c.pem", "--namespace=ops", "--kube-config=/kc", "--kube-server=https://10.0.0.1:6443",
		"--prometheus-metrics-prefix=shell_operator_", "--debug-unix-socket=/run/d.sock", "--validating-webhook-server-cert=/v/tls.crt",
		"--conversion-webhook-server-key=/c/tls.key", "--object-patcher-kube-client-timeout=10s", "--log-proxy-hook-json"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintln(f.Webhook.ClientCA, f.Webhook.Conversion.ClientCA, f.Webhook.Namespace, f.Kube.Kubeconfig, f.Kube.Server,
		f.MetricsPrefix, f.ShellMetricsPrefix, f.DebugSocket, f.Webhook.Cert, f.Webhook.Conversion.Key)
	if want := "[/a.pem /b.pem] [/c.pem] ops /kc https://10.0.0.1:6443 hook_operator_ shell_operator_ /run/d.sock /v/tls.crt /c/tls.key\n"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// shell-operator's metrics under the prefix of the operator's own would
// share names: start refuses, naming the settings as the user gave them
// (shell-operator's variable or flag, ours, or our default) and what to
// change.
func TestMetricsPrefixesMustDiffer(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want []string
	}{
		{env: map[string]string{"SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX": "hook_operator_"},
			want: []string{`SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX="hook_operator_" with --metrics-prefix's default "hook_operator_"`, "give the two different prefixes"}},
		{args: []string{"--prometheus-metrics-prefix=x_", "--metrics-prefix=x_"},
			want: []string{`--prometheus-metrics-prefix="x_" with --metrics-prefix="x_"`, `same prefix "x_"`}},
		{args: []string{"--shell-operator-metrics-prefix=x_"}, env: map[string]string{"HOOK_OPERATOR_METRICS_PREFIX": "x_"},
			want: []string{`--shell-operator-metrics-prefix="x_" with HOOK_OPERATOR_METRICS_PREFIX="x_"`}},
	} {
		f, fs, err := parse(tc.args, tc.env)
		if err != nil {
			t.Fatal(err)
		}
		f.givenAs = func(flag string) string { return envflag.GivenAs(fs, flag) }
		f.HookTimeout, f.MaxParallel, f.ListenMaxConns = time.Minute, 1, 1
		err = f.check()
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v %v: error %v, want %q in it", tc.args, tc.env, err, w)
			}
		}
	}
	f, _, err := parse(nil, map[string]string{"SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX": "shell_operator_"})
	if err != nil || f.ShellMetricsPrefix != "shell_operator_" || f.MetricsPrefix != metrics.DefaultPrefix {
		t.Errorf("shell-operator's variable: %v, prefixes %q and %q, want shell_operator_ beside ours", err, f.ShellMetricsPrefix, f.MetricsPrefix)
	}
}

// An error that names a flag the user gave under another name (a
// variable, or shell-operator's flag or variable) says that name too.
func TestErrorsNameTheSettingAsGiven(t *testing.T) {
	f, fs, err := parse([]string{"--validating-webhook-listen-address=127.0.0.1"}, map[string]string{"VALIDATING_WEBHOOK_FAILURE_POLICY": "Sometimes"})
	if err != nil {
		t.Fatal(err)
	}
	f.givenAs = func(flag string) string { return envflag.GivenAs(fs, flag) }
	got := f.givenNames(errors.New("--webhook-failure-policy=Sometimes: use Fail or Ignore; see --webhook-failure-policy and --hook-timeout")).Error()
	if want := "use Fail or Ignore; see --webhook-failure-policy and --hook-timeout (--webhook-failure-policy is given as VALIDATING_WEBHOOK_FAILURE_POLICY)"; !strings.HasSuffix(got, want) {
		t.Errorf("%s\nwant it to end with %q", got, want)
	}
	if got := f.givenNames(errors.New("--hook-timeout: too long")).Error(); got != "--hook-timeout: too long" {
		t.Errorf("a flag given as itself, or not at all: %q", got)
	}
	if f.givenNames(nil) != nil {
		t.Errorf("no error: not nil")
	}
}
