package start

import "testing"

// The probe listener follows --listen-address's host unless it is given.
func TestHealthAddressFollowsListenAddress(t *testing.T) {
	for _, c := range []struct {
		listen, health, given, want string
	}{
		{":9115", ":9116", "", ":9116"},
		{"127.0.0.1:20001", ":9116", "", "127.0.0.1:9116"},
		{"[::1]:9115", ":9116", "", "[::1]:9116"},
		{"", ":9116", "", ":9116"},
		{"127.0.0.1:20001", ":9200", "--health-listen-address", ":9200"},
		{"127.0.0.1:20001", "", "HOOK_OPERATOR_HEALTH_LISTEN_ADDRESS", ""},
	} {
		f := Flags{ListenAddress: c.listen, HealthListenAddress: c.health,
			givenAs: func(flag string) string {
				if flag == "health-listen-address" {
					return c.given
				}
				return ""
			}}
		if got := f.withHealthAddress().HealthListenAddress; got != c.want {
			t.Errorf("--listen-address %q, --health-listen-address %q given as %q: %q, want %q", c.listen, c.health, c.given, got, c.want)
		}
	}
}
