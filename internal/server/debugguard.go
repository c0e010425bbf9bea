package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// DebugHeader is the header a POST to the debug routes on the TCP
// listener must carry (any value): `hook-operator debug` and `trigger`
// send it. A browser sends no custom header to another site without
// asking first (a CORS preflight, which the operator does not answer), so
// a web page cannot make a visitor's browser trigger hooks.
const DebugHeader = "X-Hook-Operator-Debug"

// guardDebug serves the debug routes of the TCP listener (--debug-http)
// to the command-line tools, and not to web pages a browser on the same
// host or network runs. It answers 403 to a request
//   - whose Host is a name other than localhost and the listen address's
//     own host: a DNS rebinding attack points a name of the attacker's at
//     the operator's address, and the browser sends that name; an IP
//     address cannot be rebound, so every IP literal is accepted (the
//     Pod's address, 127.0.0.1 through kubectl port-forward);
//   - with an Origin that is not the listener's own: a page of another
//     site;
//   - a POST without DebugHeader.
//
// The debug socket needs none of this: only the operator's user can open
// it.
func guardDebug(h http.Handler, listenAddress string) http.Handler {
	own := hostOf(listenAddress)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := debugRefusal(r, own); why != "" {
			http.Error(w, "Forbidden: "+why, http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// debugRefusal says why r may not reach the debug routes, or "".
func debugRefusal(r *http.Request, own string) string {
	host := hostOf(r.Host)
	if !debugHostAllowed(host, own) {
		return fmt.Sprintf("the debug routes answer requests to an IP address or localhost only, not to Host %q "+
			"(a guard against DNS rebinding): use the operator's IP address, or kubectl port-forward and localhost", r.Host)
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host {
		return fmt.Sprintf("the debug routes do not answer requests from web pages (Origin %q); use hook-operator debug or curl", origin)
	}
	if r.Method == http.MethodPost && r.Header.Get(DebugHeader) == "" {
		return fmt.Sprintf("a POST to the debug routes needs the header %s (any value; hook-operator debug and trigger send it), "+
			"so that no web page can send one", DebugHeader)
	}
	return ""
}

// debugHostAllowed says whether host (without port) names the operator
// in a way DNS rebinding cannot forge: an IP literal, localhost, or the
// host --listen-address names.
func debugHostAllowed(host, own string) bool {
	switch {
	case host == "":
		return false
	case net.ParseIP(host) != nil:
		return true
	case host == "localhost":
		return true
	}
	return own != "" && net.ParseIP(own) == nil && host == own
}

// hostOf is the host of a host[:port] (a Host header, a listen address),
// lower case, without brackets or a trailing dot.
func hostOf(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	return strings.ToLower(host)
}
