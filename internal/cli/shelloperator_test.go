package cli

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	"github.com/hook-operator/hook-operator/internal/cli/start"
)

// shellOperatorSettings reads testdata's list of shell-operator v1.20.3's
// flags and variables.
func shellOperatorSettings(t *testing.T) (flags, vars []string) {
	data, err := os.ReadFile("testdata/shell-operator-v1.20.3-settings.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		flags, vars = append(flags, f[0]), append(vars, f[1])
	}
	if len(flags) < 35 {
		t.Fatalf("only %d settings in the list", len(flags))
	}
	return flags, vars
}

// sample is a value of each of shell-operator's flags that is not a
// string; a bool flag takes none.
var sample = map[string]string{
	"--listen-address": "0.0.0.0", "--listen-port": "9650", "--kube-client-qps": "5", "--kube-client-burst": "10",
	"--object-patcher-kube-client-qps": "5", "--object-patcher-kube-client-burst": "10", "--object-patcher-kube-client-timeout": "10s",
	"--log-level": "info", "--log-type": "color", "--validating-webhook-failure-policy": "Fail",
	"--validating-webhook-listen-port": "9680", "--validating-webhook-listen-address": "0.0.0.0",
	"--conversion-webhook-listen-port": "9681", "--conversion-webhook-listen-address": "0.0.0.0",
}

// Every flag of shell-operator v1.20.3's start is accepted by ours (given
// all at once, as a Deployment's args would), and every variable beside
// them is read by a setting or named by an ignored one; docs/migrating.md
// names each. Those mapping to nothing warn once each, naming themselves.
func TestShellOperatorSettingsAccepted(t *testing.T) {
	flags, vars := shellOperatorSettings(t)
	cmd := findCommand(t, "start")
	var args []string
	for _, name := range flags {
		f := cmd.Flags().Lookup(strings.TrimPrefix(name, "--"))
		if f == nil {
			t.Errorf("shell-operator's %s is not a flag of start", name)
			continue
		}
		switch {
		case f.NoOptDefVal != "":
			args = append(args, name)
		case sample[name] != "":
			args = append(args, name+"="+sample[name])
		default:
			args = append(args, name+"=/x")
		}
	}
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatalf("start refuses shell-operator's flags %v: %v", args, err)
	}
	read := map[string]bool{}
	for _, line := range envflag.All(cmd.Flags()) {
		read[strings.SplitN(line, ":", 2)[0]] = true
	}
	for _, g := range start.Ignored {
		for _, e := range g.Env {
			read[e] = true
		}
	}
	for _, v := range vars {
		if !read[v] {
			t.Errorf("shell-operator's %s is neither read nor ignored with a warning", v)
		}
	}
	doc, err := os.ReadFile("../../docs/migrating.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Concat(flags, vars) {
		if !bytes.Contains(doc, []byte("`"+name+"`")) {
			t.Errorf("docs/migrating.md does not name %s", name)
		}
	}
	warnings := envflag.Given(cmd.Flags(), func(string) (string, bool) { return "", false })
	if len(warnings) != len(start.Ignored)-1 { // SHELL_OPERATOR_HOOK_METRICS_LISTEN_PORT has no flag
		t.Errorf("%d warnings, want one per ignored flag given (%d):\n%s", len(warnings), len(start.Ignored)-1, strings.Join(warnings, "\n"))
	}
	for _, w := range warnings {
		if !strings.Contains(w, "not taken") {
			t.Errorf("warning %q does not say the setting is not taken", w)
		}
	}
}

// shell-operator's flags stay out of --help: ours are the ones to learn.
func TestShellOperatorFlagsHidden(t *testing.T) {
	cmd := findCommand(t, "start")
	help := cmd.Flags().FlagUsages()
	for _, name := range []string{"--kube-config", "--listen-port", "--validating-webhook-server-cert", "--log-proxy-hook-json"} {
		if strings.Contains(help, name+" ") {
			t.Errorf("start --help shows shell-operator's %s", name)
		}
	}
	if !strings.Contains(help, "--kube-server") {
		t.Error("start --help does not show --kube-server")
	}
}

// findCommand returns the subcommand name of a fresh root command.
func findCommand(t *testing.T, name string) *cobra.Command {
	t.Helper()
	root := NewRootCommand(&bytes.Buffer{}, &bytes.Buffer{}, func(string) (string, bool) { return "", false })
	for _, c := range root.Commands() {
		if c.Name() == name {
			c.InheritedFlags() // merges the root's flags into c.Flags()
			return c
		}
	}
	t.Fatalf("no command %s", name)
	return nil
}

// shell-operator's commands get what to run here; a near miss of a debug
// command gets cobra's suggestion.
func TestUnknownCommandsSayWhatToRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"queue", "list"}, `unknown command "queue": shell-operator's; here use hook-operator debug queues`},
		{[]string{"hook", "snapshot", "x"}, "hook-operator debug snapshots HOOK"},
		{[]string{"debug", "queue"}, `unknown command "queue" for "hook-operator debug"; did you mean hook-operator debug queues?`},
		{[]string{"debug", "snapshot", "x"}, "did you mean hook-operator debug snapshots?"},
		{[]string{"strat"}, "Did you mean this?\n\tstart"},
	} {
		var out, errb bytes.Buffer
		if code := Execute(c.args, &out, &errb); code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q in it", c.args, code, errb.String(), c.want)
		}
	}
}

// debug reads shell-operator's DEBUG_UNIX_SOCKET (and its flag
// --debug-unix-socket), as start does.
func TestDebugTakesShellOperatorsSocketSetting(t *testing.T) {
	const sock = "/nonexistent/shell-operator-debug.socket"
	if code, _, stderr := run(map[string]string{"DEBUG_UNIX_SOCKET": sock}, "debug", "queues"); code == 0 || !strings.Contains(stderr, sock) {
		t.Errorf("DEBUG_UNIX_SOCKET: exit %d, stderr %q; want the socket named", code, stderr)
	}
	if code, _, stderr := run(nil, "debug", "queues", "--debug-unix-socket", sock); code == 0 || !strings.Contains(stderr, sock) {
		t.Errorf("--debug-unix-socket: exit %d, stderr %q; want the socket named", code, stderr)
	}
}
