package start

import (
	"strings"
	"testing"
	"time"
)

// shell-operator's SHELL_OPERATOR_LISTEN_ADDRESS and _PORT make one
// --listen-address, each with shell-operator's default when unset.
func TestListenAddressFromShellOperatorVariables(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
		set  bool
		err  string
	}{
		{env: map[string]string{}, set: false},
		{env: map[string]string{"SHELL_OPERATOR_LISTEN_PORT": "9650"}, want: ":9650", set: true},
		{env: map[string]string{"SHELL_OPERATOR_LISTEN_ADDRESS": "0.0.0.0", "SHELL_OPERATOR_LISTEN_PORT": "9115"}, want: ":9115", set: true},
		{env: map[string]string{"SHELL_OPERATOR_LISTEN_ADDRESS": "127.0.0.1"}, want: "127.0.0.1:9115", set: true},
		{env: map[string]string{"SHELL_OPERATOR_LISTEN_ADDRESS": "::1", "SHELL_OPERATOR_LISTEN_PORT": "80"}, want: "[::1]:80", set: true},
		{env: map[string]string{"SHELL_OPERATOR_LISTEN_PORT": "http"}, set: true, err: "use a port number"},
	} {
		got, set, err := listenAddress(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || set != tc.set {
			t.Errorf("%v: %q, %v, %v; want %q, %v", tc.env, got, set, err, tc.want, tc.set)
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
