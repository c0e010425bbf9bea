package start

import "net"

// healthPort is the port of --health-listen-address's default (:9116).
const healthPort = "9116"

// healthDefault reports whether --health-listen-address has its default,
// which the user did not ask for: a listener that must never keep the
// operator from starting (see server.Options.HealthOptional).
func (f Flags) healthDefault() bool {
	return f.givenAs == nil || f.givenAs("health-listen-address") == ""
}

// withHealthAddress returns f with the probe listener's address: the one
// given, else port 9116 on --listen-address's host, so that an operator
// told to listen on one interface (127.0.0.1, as shell-operator users run
// several on one host) does not open another on every interface.
func (f Flags) withHealthAddress() Flags {
	if !f.healthDefault() || f.HealthListenAddress == "" || f.ListenAddress == "" {
		return f
	}
	if host, _, err := net.SplitHostPort(f.ListenAddress); err == nil {
		f.HealthListenAddress = net.JoinHostPort(host, healthPort)
	}
	return f
}
