package start

import (
	"fmt"
	"net"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/hook"
)

// An exposure is a surface that start's flags leave open to whoever
// reaches the operator's ports: what it is, where, and the flag that
// closes it.
type exposure struct {
	// surface names it in the log: webhook, conversion-webhook, metrics
	// or debug.
	surface string
	address string
	// flag is the setting that closes it.
	flag    string
	message string
}

// warnExposures warns once, at start, of each surface the flags leave
// open (docs/deploy.md, "Secure by default"), so that a deployment that
// turned a default off says so in its log.
func warnExposures(f Flags, hooks []*hook.Hook, log logrus.FieldLogger) {
	for _, e := range exposures(f, hooks) {
		// Not "address": the tests' harness and the bench take the first
		// "address" of the log for the metrics listener's.
		log.WithFields(logrus.Fields{"surface": e.surface, "listensOn": e.address, "flag": e.flag}).Warn(e.message)
	}
}

// exposures returns the surfaces the flags leave open for hooks: a webhook
// listener that accepts any client, /metrics over plain HTTP beyond the
// loopback interface, and the debug routes over HTTP.
func exposures(f Flags, hooks []*hook.Hook) []exposure {
	var out []exposure
	admission, conversion := webhookBindings(hooks)
	w, c := f.Webhook, f.Webhook.Conversion
	separate := c.given()
	// The listeners the webhook server opens for these hooks (see
	// webhook.Server's listen): dry-run serves no conversions.
	if w.ListenAddress != "" && len(w.ClientCA) == 0 {
		switch {
		case admission:
			out = append(out, exposure{surface: "webhook", address: w.ListenAddress, flag: "--webhook-client-ca",
				message: fmt.Sprintf("the webhook listener %s accepts admission reviews from any client that reaches it, and a forged review runs the hooks: "+
					"set --webhook-client-ca to the CA of the API server's client certificate (docs/deploy.md, \"Who may call the webhooks\")", where(w.ListenAddress))})
		case conversion && !separate && f.DryRun == "":
			out = append(out, conversionExposure("webhook", w.ListenAddress, "--webhook-client-ca"))
		}
	}
	if w.ListenAddress != "" && conversion && separate && f.DryRun == "" && len(c.ClientCA) == 0 && len(w.ClientCA) == 0 {
		addr := c.ListenAddress
		if addr == "" {
			addr = ":9681"
		}
		out = append(out, conversionExposure("conversion-webhook", addr, "--conversion-webhook-client-ca"))
	}
	if f.ListenAddress != "" && !f.MetricsSecure && !loopback(f.ListenAddress) {
		out = append(out, exposure{surface: "metrics", address: f.ListenAddress, flag: "--metrics-secure",
			message: fmt.Sprintf("/metrics and /metrics/hooks are served over plain HTTP to any client that reaches %s: "+
				"set --metrics-secure (HTTPS, to tokens allowed to get /metrics), or bind --listen-address to 127.0.0.1", where(f.ListenAddress))})
	}
	if f.ListenAddress != "" && f.DebugHTTP {
		what := "the debug routes (queues, hooks, snapshots of objects)"
		if f.Pprof {
			what = "the debug routes (queues, hooks, snapshots of objects) and Go's profiles (--pprof)"
		}
		out = append(out, exposure{surface: "debug", address: f.ListenAddress, flag: "--debug-http",
			message: fmt.Sprintf("%s are served over plain HTTP without authentication on %s: "+
				"drop --debug-http; `hook-operator debug` reads them from --debug-socket", what, where(f.ListenAddress))})
	}
	return out
}

// conversionExposure is a listener that serves conversions to any client.
// The API server presents no client certificate to conversion webhooks
// (kubernetes/kubernetes#131810), so a client CA closes it only for an API
// server that can; otherwise the network has to.
func conversionExposure(surface, addr, flag string) exposure {
	return exposure{surface: surface, address: addr, flag: flag,
		message: fmt.Sprintf("the listener %s accepts conversion reviews from any client that reaches it: keep it reachable from the API server only (NetworkPolicy); "+
			"kube-apiserver presents no client certificate to conversion webhooks, so %s (the CA of the API server's client certificate) closes it only for an API server that can", where(addr), flag)}
}

// webhookBindings reports whether hooks have admission bindings and
// conversion bindings.
func webhookBindings(hooks []*hook.Hook) (admission, conversion bool) {
	for _, h := range hooks {
		admission = admission || len(h.Config.Validating)+len(h.Config.Mutating) > 0
		conversion = conversion || len(h.Config.Conversion) > 0
	}
	return admission, conversion
}

// given reports whether any setting of the second conversion listener was
// given, which starts it (as webhook.ConversionOptions decides).
func (c ConversionFlags) given() bool {
	return c.ListenAddress != "" || c.Cert != "" || c.Key != "" || c.CA != "" || c.ServiceName != "" || c.URL != "" || len(c.ClientCA) > 0
}

// loopback reports whether the host:port addr listens on a loopback
// interface only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// where is addr for a message, saying so when it listens on every
// interface.
func where(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return addr + " (every interface)"
	}
	return addr
}
