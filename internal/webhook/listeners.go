package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/sirupsen/logrus"
)

// selfSignedCheck is how often the self-signed certificate is looked at
// again (and made again when it is to expire within 30 days).
const selfSignedCheck = 12 * time.Hour

// selfSigned makes (or reads) the self-signed certificates and keeps them
// in memory, renewed while ctx lasts: the private key is never written to
// a file.
func (s *Server) selfSigned(ctx context.Context) error {
	if s.o.Namespace == "" {
		return errors.New("--webhook-self-signed keeps the certificates in a Secret of the operator's namespace: set --operator-namespace (or run in a Pod)")
	}
	var hosts []string
	for _, svc := range []string{s.o.ServiceName, s.o.Conversion.ServiceName} {
		if svc != "" {
			hosts = append(hosts, ServiceHosts(svc, s.o.Namespace)...)
		}
	}
	for _, raw := range []string{s.o.URL, s.o.Conversion.URL} {
		if raw == "" {
			continue
		}
		host, err := urlHost(raw)
		if err != nil {
			return err
		}
		hosts = append([]string{host}, hosts...)
	}
	ss := &SelfSigned{Dynamic: s.o.Dynamic, Namespace: s.o.Namespace, Secret: s.o.CertSecret, Hosts: hosts, Log: s.log}
	certs, err := ss.Keep(ctx, selfSignedCheck)
	if err != nil {
		return fmt.Errorf("--webhook-self-signed: %w", err)
	}
	s.certs = certs
	return nil
}

// listen starts the listeners the bindings need and that do not run yet:
// the admission listener for admission bindings (and conversions, without
// a second listener), the second listener for conversions.
func (s *Server) listen(ctx context.Context, b Bindings, admission, conversion bool) error {
	if !s.admissionUp && (admission || (conversion && !s.separate)) {
		mux := http.NewServeMux()
		mux.Handle("/hooks/", s.admissionHandler())
		what := "admission"
		if !s.o.DryRun && !s.separate {
			mux.Handle("/", s.conversionHandler())
			what = "admission or conversion"
		}
		addr, err := s.serve(ctx, listener{name: ListenerAdmission, flag: "webhook", what: what, address: s.o.ListenAddress,
			cert: s.o.Cert, key: s.o.Key, clientCA: s.o.ClientCA, served: s.serves(true, !s.o.DryRun && !s.separate)}, mux)
		if err != nil {
			return err
		}
		s.admissionUp, s.admissionPort = true, portOf(addr)
		log := s.log.WithFields(logrus.Fields{"address": addr.String(), "validating": len(b.Validating), "mutating": len(b.Mutating)})
		if s.o.DryRun {
			log.Info("dry-run: serving admission webhooks; every request is allowed")
		} else {
			served := 0
			if !s.separate {
				served = len(b.CRDs())
			}
			log.WithField("conversions", served).Info("serving webhooks")
		}
	}
	if !s.conversionUp && conversion && s.separate {
		addr, err := s.serve(ctx, listener{name: ListenerConversion, flag: "conversion-webhook", what: "conversion", address: s.conv.ListenAddress,
			cert: s.conv.Cert, key: s.conv.Key, clientCA: s.conv.ClientCA, served: s.serves(false, true)}, s.conversionHandler())
		if err != nil {
			return err
		}
		s.conversionUp, s.conversionPort = true, portOf(addr)
		s.log.WithFields(logrus.Fields{"address": addr.String(), "crds": b.CRDs()}).Info("serving conversion webhooks")
	}
	return nil
}

// The listeners, as Options.Rejected names them: the admission listener
// (--webhook-listen-address, which serves the conversions too when no
// second listener runs) and the second listener of conversions.
const (
	ListenerAdmission  = "admission"
	ListenerConversion = "conversion"
)

// listener is one HTTPS listener of webhooks: its name (ListenerAdmission
// or ListenerConversion), its flags' prefix (webhook or
// conversion-webhook), the bindings it serves (for messages), its settings,
// and which paths it serves.
type listener struct {
	name, flag, what, address string
	cert, key                 string
	clientCA                  []string
	served                    func(path string) bool
}

// serve starts the HTTPS server of l for handler until ctx ends, with its
// certificate reloaded from disk (or held in memory), and returns the
// address it listens on. Errors name the flag to change.
func (s *Server) serve(ctx context.Context, l listener, handler http.Handler) (net.Addr, error) {
	o := ServeOptions{TLS13Only: s.tls13, MaxConns: s.o.MaxConnections, Slots: s.slots, Bodies: s.bodies, Served: l.served, Log: s.log}
	if s.o.Rejected != nil {
		o.Rejected = func(reason string) { s.o.Rejected(l.name, reason) }
	}
	if s.certs != nil {
		o.Certificate = s.certs.GetCertificate
	} else {
		certs, err := NewCertReloader(l.cert, l.key, s.log)
		if err != nil {
			return nil, fmt.Errorf("the hooks have %s bindings, so the webhook server needs a certificate and key (--%s-cert, --%s-key): %w;"+
				" or let the operator make and keep its own with --webhook-self-signed (a local run: with --operator-namespace, and --webhook-url https://HOST:PORT where the API server reaches this machine)",
				l.what, l.flag, l.flag, err)
		}
		o.Certificate = certs.GetCertificate
	}
	clientCAs, err := ClientCAs(l.clientCA)
	if err != nil {
		return nil, fmt.Errorf("--%s-client-ca: %w", l.flag, err)
	}
	o.ClientCAs = clientCAs
	addr, err := Serve(ctx, l.address, handler, o)
	if err != nil {
		return nil, fmt.Errorf("--%s-listen-address: %w", l.flag, err)
	}
	return addr, nil
}

// urlHost returns the host of --webhook-url (or --conversion-webhook-url)
// raw.
func urlHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("--webhook-url %q: want https://HOST[:PORT]", raw)
	}
	return u.Hostname(), nil
}

// portOf returns the port of a listener's address (0 when it has none).
func portOf(addr net.Addr) int {
	if a, ok := addr.(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}
