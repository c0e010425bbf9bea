package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hook-operator/hook-operator/internal/localcluster"
)

// The operators the harness measures: ours, and shell-operator, the
// reference, built from the pinned tool module (hack/tools/shell-operator).
const (
	ours      = "hook-operator"
	reference = "shell-operator"
)

// An implementation is one operator binary and how to start it: the two
// take the same hooks and differ in their flags and log lines.
type implementation struct {
	// name is ours or reference.
	name    string
	binary  string
	version string
	// args returns the start command line of a launch, and the debug
	// socket it serves pprof on ("" when none).
	args func(l launch) (args []string, socket string, err error)
	// failed tells whether a log line reports a failed hook run.
	failed func(line string) bool
	// connected is the log text that says the operator has connected to
	// the cluster, "" when it logs none.
	connected string
	// pprof: the binary serves CPU and heap profiles (--profile).
	pprof bool
}

// hookOperator describes the binary under test. It reads `start --help`
// for the flags that the binary grew over time (the harness runs against
// the tree it is in, and can measure an older build with --binary).
func hookOperator(binary string) (*implementation, error) {
	out, err := exec.Command(binary, "start", "--help").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s start --help: %v\n%s", binary, err, out)
	}
	help := string(out)
	// --listen-address: its default port cannot be shared by several
	// operators (and other people's tests); --debug-socket: nor its
	// default path.
	listen := strings.Contains(help, "--listen-address")
	health := strings.Contains(help, "--health-listen-address")
	socketFlag := strings.Contains(help, "--debug-socket")
	im := &implementation{
		name:      ours,
		binary:    binary,
		version:   firstLines(output("", binary, "version"), 2),
		pprof:     socketFlag && strings.Contains(help, "--pprof"),
		connected: `"msg":"connected to the cluster"`,
		failed:    func(line string) bool { return strings.Contains(line, `"msg":"hook failed`) },
	}
	im.args = func(l launch) ([]string, string, error) {
		args := []string{"start", "--hooks-dir", l.hooksDir, "--kubeconfig", l.kubeconfig,
			"--log-format", "json", "--shutdown-grace-period", "2s", "--tmp-dir", l.tmpDir}
		var socket string
		if listen {
			// The metrics listener runs as in production, on a free port.
			args = append(args, "--listen-address", "127.0.0.1:0")
		}
		if health {
			// And so does the probe listener (default :9116).
			args = append(args, "--health-listen-address", "127.0.0.1:0")
		}
		if socketFlag {
			socket = filepath.Join(l.dir, "debug.sock")
			args = append(args, "--debug-socket", socket)
		}
		if l.pprof {
			args = append(args, "--pprof")
		}
		return append(args, l.extra...), socket, nil
	}
	return im, nil
}

// shellOperator describes the reference binary. It runs with its defaults
// but for what several instances cannot share: the metrics port and the
// debug socket. Its log goes to stdout as JSON, at its default level (info),
// as ours does.
func shellOperator(binary string) (*implementation, error) {
	version := output("", binary, "version")
	if version == "?" || !strings.Contains(version, "shell-operator") {
		return nil, fmt.Errorf("%s version: no answer; is it shell-operator? (make shell-operator builds it)", binary)
	}
	return &implementation{
		name:    reference,
		binary:  binary,
		version: firstLines(version, 1),
		// "Hook failed. Will retry after delay." and the like.
		failed: func(line string) bool { return strings.Contains(line, `"msg":"Hook failed`) },
		args: func(l launch) ([]string, string, error) {
			port, err := localcluster.FreePort()
			if err != nil {
				return nil, "", err
			}
			return []string{"start", "--hooks-dir", l.hooksDir, "--kube-config", l.kubeconfig,
				"--tmp-dir", l.tmpDir, "--listen-address", "127.0.0.1", "--listen-port", port,
				"--debug-unix-socket", filepath.Join(l.dir, "debug.sock"), "--log-type", "json"}, "", nil
		},
	}, nil
}

// A subject is what one run measures: an operator with a hook.
type subject struct {
	impl *implementation
	hook string
}

// subjects lists what run rep of every scenario but scale measures, in the
// order the runs alternate: for each hook, ours and then the reference, so
// that drift in the machine's load spreads over both. Run 0, the profiled
// one, is ours only. The reference runs a resident variant's one-shot form
// (oneShot), once per repeat however many of our kinds it stands beside.
func (b *bench) subjects(rep int) []subject {
	var out []subject
	for _, kind := range b.cfg.Hooks {
		for _, im := range b.impls {
			if rep == 0 && !im.pprof {
				continue
			}
			s := subject{im, kind}
			if im.name == reference {
				s.hook = oneShot(kind)
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}
