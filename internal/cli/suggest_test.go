package cli

import (
	"bytes"
	"strings"
	"testing"
)

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
