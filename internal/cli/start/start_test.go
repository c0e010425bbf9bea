package start

import (
	"strings"
	"testing"
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
