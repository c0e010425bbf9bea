package start

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/spf13/pflag"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// defaultFlags returns start's flags with their defaults and args.
func defaultFlags(t *testing.T, args ...string) Flags {
	t.Helper()
	var f Flags
	fs := pflag.NewFlagSet("start", pflag.ContinueOnError)
	bindFlags(fs, &f)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

// exposureWarnings returns the surfaces warned of, in order, failing t on
// a warning that does not name its flag.
func exposureWarnings(t *testing.T, entries *logtest.Hook) []string {
	t.Helper()
	var surfaces []string
	for _, e := range entries.AllEntries() {
		surface, ok := e.Data["surface"].(string)
		if !ok {
			continue
		}
		if e.Level != logrus.WarnLevel {
			t.Errorf("%s: level %s, want warning", surface, e.Level)
		}
		flag, _ := e.Data["flag"].(string)
		if flag == "" || !strings.Contains(e.Message, flag) {
			t.Errorf("%s: the message does not name the flag %q that closes it: %s", surface, flag, e.Message)
		}
		surfaces = append(surfaces, surface)
	}
	return surfaces
}

// Each surface the flags leave open is warned of once, naming the flag
// that closes it; none is when each is closed.
func TestWarnExposures(t *testing.T) {
	admission := &hook.Hook{Name: "validate.sh"}
	admission.Config.Validating = []hook.WebhookBinding{{}, {}}
	conversion := &hook.Hook{Name: "convert.sh"}
	conversion.Config.Conversion = []hook.ConversionBinding{{}}
	plain := &hook.Hook{Name: "plain.sh"}
	for _, tc := range []struct {
		name  string
		args  []string
		hooks []*hook.Hook
		want  []string
	}{
		{"the defaults with an admission hook", nil, []*hook.Hook{admission, plain}, []string{"webhook", "metrics"}},
		{"every surface open", []string{"--debug-http", "--pprof"}, []*hook.Hook{admission, conversion}, []string{"webhook", "metrics", "debug"}},
		{"every surface closed", []string{"--webhook-client-ca", "/ca.pem", "--metrics-secure"}, []*hook.Hook{admission, conversion}, nil},
		// The listeners open only for the bindings of the hooks.
		{"no webhook bindings", []string{"--metrics-secure"}, []*hook.Hook{plain}, nil},
		{"no webhook listener", []string{"--webhook-listen-address", "", "--metrics-secure"}, []*hook.Hook{admission}, nil},
		{"conversions on the webhook listener", []string{"--metrics-secure"}, []*hook.Hook{conversion}, []string{"webhook"}},
		{"conversions in a dry run", []string{"--metrics-secure", "--dry-run"}, []*hook.Hook{conversion}, nil},
		{"a second conversion listener", []string{"--metrics-secure", "--conversion-webhook-listen-address", ":9681"}, []*hook.Hook{conversion}, []string{"conversion-webhook"}},
		{"a second conversion listener with the webhook's CA", []string{"--metrics-secure", "--conversion-webhook-listen-address", ":9681", "--webhook-client-ca", "/ca.pem"}, []*hook.Hook{conversion}, nil},
		// Plain /metrics on loopback only reaches this host (or Pod).
		{"metrics on loopback", []string{"--listen-address", "127.0.0.1:9115"}, nil, nil},
		{"metrics on localhost", []string{"--listen-address", "localhost:9115"}, nil, nil},
		{"metrics on IPv6 loopback", []string{"--listen-address", "[::1]:9115"}, nil, nil},
		{"metrics on an address", []string{"--listen-address", "10.0.0.5:9115"}, nil, []string{"metrics"}},
		{"no listener", []string{"--listen-address", "", "--debug-http"}, nil, nil},
		// The debug routes over HTTP are warned of even on loopback: any
		// local user reaches them, where the debug socket is the
		// operator's user's alone.
		{"debug routes on loopback", []string{"--listen-address", "127.0.0.1:9115", "--debug-http"}, nil, []string{"debug"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, entries := logtest.NewNullLogger()
			warnExposures(defaultFlags(t, tc.args...), tc.hooks, log)
			if got := exposureWarnings(t, entries); !slices.Equal(got, tc.want) {
				t.Errorf("warned of %v, want %v", got, tc.want)
			}
		})
	}
}

// The warnings say where each surface listens, every interface included,
// and what the debug routes serve.
func TestWarnExposuresMessages(t *testing.T) {
	admission := &hook.Hook{Name: "validate.sh"}
	admission.Config.Mutating = []hook.WebhookBinding{{}}
	log, entries := logtest.NewNullLogger()
	warnExposures(defaultFlags(t, "--debug-http", "--pprof", "--listen-address", "0.0.0.0:9115"), []*hook.Hook{admission}, log)
	want := map[string][]string{
		"webhook": {":9680 (every interface)", "--webhook-client-ca", "API server's client certificate"},
		"metrics": {"0.0.0.0:9115 (every interface)", "plain HTTP", "--metrics-secure", "127.0.0.1"},
		"debug":   {"0.0.0.0:9115 (every interface)", "--debug-http", "--pprof", "--debug-socket"},
	}
	for _, e := range entries.AllEntries() {
		surface, _ := e.Data["surface"].(string)
		for _, s := range want[surface] {
			if !strings.Contains(e.Message, s) {
				t.Errorf("%s: %q lacks %q", surface, e.Message, s)
			}
		}
		delete(want, surface)
	}
	if len(want) > 0 {
		t.Errorf("no warning of %v", want)
	}

	// Conversions: the API server presents no client certificate to them,
	// so the warning says to close the port by network as well.
	conversion := &hook.Hook{Name: "convert.sh"}
	conversion.Config.Conversion = []hook.ConversionBinding{{}}
	log, entries = logtest.NewNullLogger()
	warnExposures(defaultFlags(t, "--metrics-secure", "--conversion-webhook-url", "https://10.0.0.5:9681"), []*hook.Hook{conversion}, log)
	if e := entries.LastEntry(); e == nil || e.Data["surface"] != "conversion-webhook" ||
		!strings.Contains(e.Message, ":9681 (every interface)") || !strings.Contains(e.Message, "NetworkPolicy") || !strings.Contains(e.Message, "no client certificate to conversion webhooks") {
		t.Errorf("the conversion listener's warning: %v", e)
	}
}

// start warns of the open surfaces once the hooks are loaded, before it
// connects to the cluster (here a kubeconfig that is not there stops it).
func TestStartWarnsOfExposures(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\n" + `echo '{"configVersion":"v1","kubernetesValidating":[{"name":"v.example.com","rules":[{"apiGroups":[""],"operations":["CREATE"],"apiVersions":["v1"],"resources":["configmaps"]}]}]}'` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "validate.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f := defaultFlags(t, "--hooks-dir", dir, "--kubeconfig", filepath.Join(dir, "missing"), "--debug-http",
		"--adapt-gomaxprocs=false", "--hooks-reload=false", "--debug-socket", "")
	log, entries := logtest.NewNullLogger()
	if err := Run(context.Background(), f, io.Discard, log); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Fatalf("start: %v, want the missing kubeconfig's error", err)
	}
	if got := exposureWarnings(t, entries); !slices.Equal(got, []string{"webhook", "metrics", "debug"}) {
		t.Errorf("start warned of %v, want webhook, metrics and debug once each", got)
	}
}
