package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"
)

// Hooks is what the Server asks about the hooks: their bindings at start
// and after each change, and, per request, an answer from the hook bound
// now. The operator implements it; a reload of the hooks folder replaces
// what it answers.
type Hooks interface {
	// WebhookBindings returns the admission and conversion bindings of
	// the current hooks; an error when they cannot be served as they are.
	WebhookBindings() (Bindings, error)
	// WebhooksChanged returns a channel that is closed at the next change
	// of the bindings WebhookBindings returns.
	WebhooksChanged() <-chan struct{}
	// Admit runs the hook of the admission binding served at path now
	// with review and returns its answer and the binding that gave it; an
	// error wrapping ErrNotServed when no binding is served at path. Other
	// errors deny the request with their text.
	Admit(ctx context.Context, path string, review json.RawMessage) (*AdmissionResponse, Admission, error)
	// Convert brings the objects of req, of CRD crd, to the desired
	// version with the current hooks' conversions; an error wrapping
	// ErrNotServed when no hook converts crd.
	Convert(ctx context.Context, crd string, req ConversionRequest) ([]json.RawMessage, error)
}

// ErrNotServed is wrapped by the errors of Hooks about a path or CRD that
// no current binding serves.
var ErrNotServed = errors.New("no binding serves it")

// Bindings are the admission and conversion bindings of a hook set.
type Bindings struct {
	// Validating and Mutating are in the order of the hooks and of their
	// bindings.
	Validating, Mutating []Admission
	Conversions          []Conversion
}

// Conversion is one kubernetesCustomResourceConversion binding.
type Conversion struct {
	Hook, Binding, CRD string
}

// CRDs returns the names of the CRDs the bindings convert, sorted.
func (b Bindings) CRDs() []string {
	var out []string
	for _, c := range b.Conversions {
		out = append(out, c.CRD)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Options configure the webhook server; start's --webhook-* and
// --conversion-webhook-* flags set them, and errors name those flags.
type Options struct {
	// ListenAddress is the host:port of the listener; empty: no binding
	// is served, and the Server says which will not run.
	ListenAddress string
	// Cert and Key are the serving certificate's files, read again when
	// they change; CA is the file of the CA put in the caBundle, read at
	// each registration.
	Cert, Key, CA string
	// ConfigurationName names the two webhook configurations.
	ConfigurationName string
	// ServiceName, in Namespace (the operator's), is where the API server
	// reaches the listener; URL, when set, instead.
	ServiceName, Namespace, URL string
	// FailurePolicy applies to bindings that set none: Fail or Ignore.
	FailurePolicy string
	// Register writes the webhook configurations and the CRDs'
	// spec.conversion; false: the manifests do.
	Register            bool
	Labels, Annotations map[string]string
	// MaxConcurrent bounds the requests handled at once, all listeners
	// together.
	MaxConcurrent int
	// SelfSigned makes the certificates and keeps them in the Secret
	// CertSecret of Namespace, and in memory only here.
	SelfSigned bool
	CertSecret string
	// ClientCA are the files of the CAs whose client certificates are
	// accepted; none: any client.
	ClientCA []string
	// Conversion are the settings of a second listener for conversions.
	Conversion ConversionOptions
	// MaxConnections caps each listener's open connections.
	MaxConnections int
	// TLSMinVersion is "1.2" or "1.3" (see ParseTLSMinVersion).
	TLSMinVersion string
	// DryRun serves the admission bindings allowing every request (see
	// dryRunAnswer) under configurations of its own, deleted at the end,
	// and no conversion binding.
	DryRun bool
	// Dynamic writes the registrations and the self-signed Secret.
	Dynamic dynamic.Interface
	// Rejected, when not nil, is told the reason of each request refused
	// before a hook ran (a metric).
	Rejected func(reason string)
	// Failed, when not nil, is told when serving or registering the
	// bindings after a change failed (an Event); the Server tries again at
	// the next change, and every failRetry meanwhile.
	Failed func(error)
	Log    logrus.FieldLogger
}

// ConversionOptions are the settings of a second listener for conversion
// webhooks, as shell-operator has one. Any of them given starts it; those
// not given then take shell-operator's defaults (listen address :9681,
// files in /conversion-certs/) or the admission listener's (Service, URL,
// client CAs).
type ConversionOptions struct {
	ListenAddress string
	Cert, Key, CA string
	ServiceName   string
	URL           string
	ClientCA      []string
}

// separate reports whether any setting of a second conversion listener
// was given.
func (c ConversionOptions) separate() bool {
	return c.ListenAddress != "" || c.Cert != "" || c.Key != "" || c.CA != "" || c.ServiceName != "" || c.URL != "" || len(c.ClientCA) > 0
}

// withDefaults fills the settings not given of a separate conversion
// listener.
func (c ConversionOptions) withDefaults(o Options) ConversionOptions {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&c.ListenAddress, ":9681")
	def(&c.Cert, "/conversion-certs/tls.crt")
	def(&c.Key, "/conversion-certs/tls.key")
	def(&c.CA, "/conversion-certs/ca.crt")
	def(&c.ServiceName, o.ServiceName)
	def(&c.URL, o.URL)
	if len(c.ClientCA) == 0 {
		c.ClientCA = o.ClientCA
	}
	return c
}

// failRetry is how often a change that could not be served is tried
// again (a certificate that is not there yet, say).
const failRetry = 10 * time.Second

// Server serves the hooks' admission and conversion bindings, and keeps
// their registration in step with them: at start and after each change
// that Hooks reports, it starts the listeners the bindings need (once
// started, a listener runs until the end), applies the webhook
// configurations and the CRDs' spec.conversion, and deletes or gives back
// those of bindings that went away. Each request asks Hooks for the hook
// bound at that moment, so a request that runs while the bindings change
// gets the answer of the hook it started with.
type Server struct {
	o        Options
	hooks    Hooks
	log      logrus.FieldLogger
	tls13    bool
	slots    Slots
	separate bool
	conv     ConversionOptions
	started  chan struct{}

	// servedMu guards served: the admission paths and conversion paths
	// served since start. A request to one that no binding serves now
	// (its binding went, and the API server has not seen its
	// registration go yet) is answered as no binding were there.
	servedMu sync.Mutex
	served   map[string]bool

	// Owned by Start's goroutine.
	certs           *MemoryCert
	admissionUp     bool
	conversionUp    bool
	dryRunWritten   bool
	stopCRDRetry    context.CancelFunc
	unservedWarning string
}

// NewServer checks o and returns the Server of hooks' webhook bindings;
// it starts nothing (see Start).
func NewServer(o Options, hooks Hooks) (*Server, error) {
	s := &Server{o: o, hooks: hooks, log: o.Log, started: make(chan struct{}), served: map[string]bool{}}
	if s.log == nil {
		s.log = logrus.StandardLogger()
	}
	if o.ListenAddress == "" {
		return s, nil
	}
	if o.MaxConnections < 1 {
		return nil, fmt.Errorf("--webhook-max-connections=%d: use 1 or more (the default is 256)", o.MaxConnections)
	}
	tls13, err := ParseTLSMinVersion(o.TLSMinVersion)
	if err != nil {
		return nil, fmt.Errorf("--webhook-tls-min-version=%w", err)
	}
	if !o.DryRun && o.FailurePolicy != "Fail" && o.FailurePolicy != "Ignore" {
		return nil, fmt.Errorf("--webhook-failure-policy=%s: use Fail or Ignore", o.FailurePolicy)
	}
	s.tls13, s.slots = tls13, NewSlots(o.MaxConcurrent)
	s.separate = o.Conversion.separate()
	s.conv = o.Conversion.withDefaults(o)
	return s, nil
}

// Started is closed once Start has served and registered the bindings of
// the hooks it found at start.
func (s *Server) Started() <-chan struct{} { return s.started }

// Start serves the bindings until ctx ends, following their changes, and
// then stops the listeners and deletes a dry run's configurations. An
// error serving the bindings found at start is returned at once; later
// errors are logged and told to Options.Failed, and the change is tried
// again.
func (s *Server) Start(ctx context.Context) error {
	defer s.cleanup()
	var retry <-chan time.Time
	for first := true; ; first = false {
		changed := s.hooks.WebhooksChanged()
		if err := s.sync(ctx); err != nil {
			if first {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			s.log.WithError(err).Error("the webhook bindings changed, and serving them failed; trying again at their next change and every " + failRetry.String())
			if s.o.Failed != nil {
				s.o.Failed(err)
			}
			retry = time.After(failRetry)
		} else {
			retry = nil
		}
		if first {
			close(s.started)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-retry:
		}
	}
}

// sync serves and registers the hooks' bindings as they are now.
func (s *Server) sync(ctx context.Context) error {
	b, err := s.hooks.WebhookBindings()
	if err != nil {
		return err
	}
	crds := b.CRDs()
	admissionServed, conversionServed := s.o.ListenAddress != "", s.o.ListenAddress != "" && !s.o.DryRun
	s.warnUnserved(b, admissionServed, conversionServed)
	admission := len(b.Validating)+len(b.Mutating) > 0
	conversion := len(crds) > 0 && conversionServed
	if s.o.ListenAddress == "" {
		return nil
	}
	s.remember(b)
	if s.o.SelfSigned && s.certs == nil && (admission || len(crds) > 0) {
		if err := s.selfSigned(ctx); err != nil {
			return err
		}
	}
	if err := s.listen(ctx, b, admission, conversion); err != nil {
		return err
	}
	switch {
	case !s.o.Register:
		return nil
	case s.o.DryRun:
		return s.registerDryRun(ctx, b, admission)
	}
	return s.register(ctx, b, admission, conversion)
}

// remember adds the paths b serves to those served since start.
func (s *Server) remember(b Bindings) {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	for _, a := range slices.Concat(b.Validating, b.Mutating) {
		s.served[Path(a.Binding.Name)] = true
	}
	for _, c := range b.Conversions {
		s.served[ConversionPath(c.CRD)] = true
	}
}

// servedBefore reports whether path was served since start.
func (s *Server) servedBefore(path string) bool {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	return s.served[path]
}

// warnUnserved says plainly which bindings will not run, instead of
// ignoring them silently, once for each change of what it says.
func (s *Server) warnUnserved(b Bindings, admission, conversion bool) {
	type count struct{ admission, conversion int }
	var order []string
	counts := map[string]*count{}
	at := func(hook string) *count {
		if counts[hook] == nil {
			counts[hook] = &count{}
			order = append(order, hook)
		}
		return counts[hook]
	}
	if !admission {
		for _, a := range slices.Concat(b.Validating, b.Mutating) {
			at(a.Hook).admission++
		}
	}
	if !conversion {
		for _, c := range b.Conversions {
			at(c.Hook).conversion++
		}
	}
	var warning string
	for _, h := range order {
		warning += fmt.Sprintf("%s %d %d;", h, counts[h].admission, counts[h].conversion)
	}
	if warning == s.unservedWarning {
		return
	}
	s.unservedWarning = warning
	if s.o.DryRun && s.o.ListenAddress != "" && len(b.Conversions) > 0 {
		s.log.Warn("dry-run: conversion bindings are not served (a conversion cannot be allowed without being made); the CRDs keep their conversion")
	}
	for _, h := range order {
		c, log := counts[h], s.log.WithField("hook", h)
		if c.conversion > 0 {
			log.Warnf("the hook has %d conversion binding(s), and the webhook server does not serve them (--webhook-listen-address is empty, or dry-run), so they will not run", c.conversion)
		}
		if c.admission > 0 {
			log.Warnf("the hook has %d admission binding(s), and the webhook server does not serve them (--webhook-listen-address is empty, or dry-run), so they will not run", c.admission)
		}
	}
}

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
		addr, err := s.serve(ctx, listener{flag: "webhook", what: what, address: s.o.ListenAddress,
			cert: s.o.Cert, key: s.o.Key, clientCA: s.o.ClientCA}, mux)
		if err != nil {
			return err
		}
		s.admissionUp = true
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
		addr, err := s.serve(ctx, listener{flag: "conversion-webhook", what: "conversion", address: s.conv.ListenAddress,
			cert: s.conv.Cert, key: s.conv.Key, clientCA: s.conv.ClientCA}, s.conversionHandler())
		if err != nil {
			return err
		}
		s.conversionUp = true
		s.log.WithFields(logrus.Fields{"address": addr.String(), "crds": b.CRDs()}).Info("serving conversion webhooks")
	}
	return nil
}

// listener is one HTTPS listener of webhooks: its flags' prefix (webhook
// or conversion-webhook), the bindings it serves (for messages), and its
// settings.
type listener struct {
	flag, what, address string
	cert, key           string
	clientCA            []string
}

// serve starts the HTTPS server of l for handler until ctx ends, with its
// certificate reloaded from disk (or held in memory), and returns the
// address it listens on. Errors name the flag to change.
func (s *Server) serve(ctx context.Context, l listener, handler http.Handler) (net.Addr, error) {
	o := ServeOptions{TLS13Only: s.tls13, MaxConns: s.o.MaxConnections, Slots: s.slots, Rejected: s.o.Rejected, Log: s.log}
	if s.certs != nil {
		o.Certificate = s.certs.GetCertificate
	} else {
		certs, err := NewCertReloader(l.cert, l.key, s.log)
		if err != nil {
			return nil, fmt.Errorf("the hooks have %s bindings, so the webhook server needs a certificate and key (--%s-cert, --%s-key): %w", l.what, l.flag, l.flag, err)
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

// register applies the configurations of the admission bindings (deleting
// those of a kind that has none left), and points the CRDs converted at
// the conversion listener, giving back those no binding converts.
func (s *Server) register(ctx context.Context, b Bindings, admission, conversion bool) error {
	dyn := s.o.Dynamic
	if admission {
		reg, err := s.registration(s.o.CA, s.o.ServiceName, s.o.URL)
		if err != nil {
			return err
		}
		if err := Sync(ctx, dyn, reg, b.Validating, b.Mutating, s.log); err != nil {
			return err
		}
	} else if err := Sync(ctx, dyn, Registration{Name: s.o.ConfigurationName}, nil, nil, s.log); err != nil {
		// Bindings that went away: their configurations go too.
		return err
	}
	ca, service, url := s.o.CA, s.o.ServiceName, s.o.URL
	if s.separate {
		ca, service, url = s.conv.CA, s.conv.ServiceName, s.conv.URL
	}
	// The name tells this operator's conversions from other operators'.
	reg := Registration{Name: s.o.ConfigurationName}
	if conversion {
		var err error
		if reg, err = s.registration(ca, service, url); err != nil {
			return err
		}
	}
	// A CRD not there yet is looked for until the next change.
	if s.stopCRDRetry != nil {
		s.stopCRDRetry()
	}
	var retry context.Context
	retry, s.stopCRDRetry = context.WithCancel(ctx)
	return SyncConversions(retry, dyn, reg, b.CRDs(), s.log)
}

// registerDryRun registers the admission bindings of a dry run under
// configurations of its own (named <ConfigurationName>-dry-run, so that a
// dry run beside the real operator does not take its registration over),
// with failurePolicy Ignore for every webhook; they are deleted when its
// last binding goes and when the dry run stops. A dry run writes nothing
// else.
func (s *Server) registerDryRun(ctx context.Context, b Bindings, admission bool) error {
	if !admission {
		if !s.dryRunWritten {
			return nil
		}
		s.dryRunWritten = false
		return Sync(ctx, s.o.Dynamic, Registration{Name: s.dryRunName()}, nil, nil, s.log)
	}
	reg, err := s.registration(s.o.CA, s.o.ServiceName, s.o.URL)
	if err != nil {
		return err
	}
	reg.Name, reg.IgnoreFailures = s.dryRunName(), true
	s.dryRunWritten = true
	return Sync(ctx, s.o.Dynamic, reg, b.Validating, b.Mutating, s.log)
}

func (s *Server) dryRunName() string { return s.o.ConfigurationName + "-dry-run" }

// cleanup deletes the configurations a dry run wrote.
func (s *Server) cleanup() {
	if s.stopCRDRetry != nil {
		s.stopCRDRetry()
	}
	if !s.dryRunWritten {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Sync(ctx, s.o.Dynamic, Registration{Name: s.dryRunName()}, nil, nil, s.log); err != nil {
		s.log.WithError(err).Warn("dry-run: deleting the dry run's webhook configurations failed; delete them by hand")
	}
}

// registration says how to register the webhooks served with the CA in
// file caFile (read now, so that a rotated CA is registered), by service
// or url. With SelfSigned the CA is the one held in memory.
func (s *Server) registration(caFile, service, url string) (Registration, error) {
	var ca []byte
	if s.certs != nil {
		ca = s.certs.CA()
	} else {
		var err error
		if ca, err = os.ReadFile(caFile); err != nil {
			return Registration{}, fmt.Errorf("the CA bundle for the webhook registrations (--webhook-ca, or --conversion-webhook-ca): %w", err)
		}
	}
	reg := Registration{
		Name: s.o.ConfigurationName, ServiceNamespace: s.o.Namespace, ServiceName: service,
		URL: url, CABundle: ca, FailurePolicy: s.o.FailurePolicy, Labels: s.o.Labels, Annotations: s.o.Annotations,
	}
	if reg.URL == "" && reg.ServiceNamespace == "" {
		return reg, errors.New("registering the webhooks by Service needs the operator's namespace: set --operator-namespace (or run in a Pod), or register by --webhook-url")
	}
	return reg, nil
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
