package start

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// WebhookFlags are the settings of the admission webhook server. Each has a
// HOOK_OPERATOR_ variable, and shell-operator's variable as an alias, so
// that its manifests work unchanged.
type WebhookFlags struct {
	ListenAddress     string
	Cert, Key, CA     string
	ConfigurationName string
	ServiceName       string
	Namespace         string
	URL               string
	FailurePolicy     string
	Register          bool
	Labels            map[string]string
	Annotations       map[string]string
	MaxConcurrent     int
	// SelfSigned: the operator makes its certificates and keeps them in
	// the Secret CertSecret of the operator's namespace.
	SelfSigned bool
	CertSecret string
	// ClientCA: the CAs of the client certificates the server accepts
	// (none given: any client).
	ClientCA []string
	// Conversion holds shell-operator's settings of a separate conversion
	// server; all empty: conversions are served by the one server.
	Conversion ConversionFlags
	// MaxConnections caps each listener's open connections.
	MaxConnections int
	// TLSMinVersion is 1.2 (with AEAD suites only) or 1.3.
	TLSMinVersion string

	// selfSigned holds the certificates of --webhook-self-signed, in
	// memory only; nil: they are read from files.
	selfSigned *webhook.MemoryCert
}

// ConversionFlags are the settings of a second listener for conversion
// webhooks, as shell-operator has one. Any of them given starts it; those
// not given then take shell-operator's defaults (listen address :9681,
// files in /conversion-certs/) or the admission server's (Service, URL).
type ConversionFlags struct {
	ListenAddress string
	Cert, Key, CA string
	ServiceName   string
	URL           string
	ClientCA      []string
}

// separate reports whether any setting of a second conversion listener
// was given.
func (c ConversionFlags) separate() bool {
	return c.ListenAddress != "" || c.Cert != "" || c.Key != "" || c.CA != "" || c.ServiceName != "" || c.URL != "" || len(c.ClientCA) > 0
}

// withDefaults fills the settings not given of a separate conversion
// listener.
func (c ConversionFlags) withDefaults(f WebhookFlags) ConversionFlags {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&c.ListenAddress, ":9681")
	def(&c.Cert, "/conversion-certs/tls.crt")
	def(&c.Key, "/conversion-certs/tls.key")
	def(&c.CA, "/conversion-certs/ca.crt")
	def(&c.ServiceName, f.ServiceName)
	def(&c.URL, f.URL)
	if len(c.ClientCA) == 0 {
		c.ClientCA = f.ClientCA
	}
	return c
}

// bindWebhookFlags defines the webhook flags on fs.
func bindWebhookFlags(fs *pflag.FlagSet, f *WebhookFlags) {
	fs.StringVar(&f.ListenAddress, "webhook-listen-address", ":9680", "serve the hooks' admission bindings over HTTPS on this host:port, when any hook has one (empty: do not serve them)")
	envflag.Bind(fs, "webhook-listen-address", "HOOK_OPERATOR_WEBHOOK_LISTEN_ADDRESS")
	envflag.BindAlias(fs, "webhook-listen-address", envflag.Alias{Names: []string{"VALIDATING_WEBHOOK_LISTEN_ADDRESS", "VALIDATING_WEBHOOK_LISTEN_PORT"}, Value: webhookListenAddress("VALIDATING_WEBHOOK", "9680")})
	fs.StringVar(&f.Cert, "webhook-cert", "/validating-certs/tls.crt", "the webhook server's certificate (PEM); read again when it changes")
	envflag.Bind(fs, "webhook-cert", "HOOK_OPERATOR_WEBHOOK_CERT")
	envflag.BindAlias(fs, "webhook-cert", envflag.Same("VALIDATING_WEBHOOK_SERVER_CERT"))
	fs.StringVar(&f.Key, "webhook-key", "/validating-certs/tls.key", "the webhook server's private key (PEM)")
	envflag.Bind(fs, "webhook-key", "HOOK_OPERATOR_WEBHOOK_KEY")
	envflag.BindAlias(fs, "webhook-key", envflag.Same("VALIDATING_WEBHOOK_SERVER_KEY"))
	fs.StringVar(&f.CA, "webhook-ca", "/validating-certs/ca.crt", "the CA that signed the certificate (PEM), put in the webhook configurations' caBundle")
	envflag.Bind(fs, "webhook-ca", "HOOK_OPERATOR_WEBHOOK_CA")
	envflag.BindAlias(fs, "webhook-ca", envflag.Same("VALIDATING_WEBHOOK_CA"))
	fs.StringVar(&f.ConfigurationName, "webhook-configuration-name", webhook.DefaultConfigurationName, "name of the ValidatingWebhookConfiguration and MutatingWebhookConfiguration the operator keeps")
	envflag.Bind(fs, "webhook-configuration-name", "HOOK_OPERATOR_WEBHOOK_CONFIGURATION_NAME")
	envflag.BindAlias(fs, "webhook-configuration-name", envflag.Same("VALIDATING_WEBHOOK_CONFIGURATION_NAME"))
	fs.StringVar(&f.ServiceName, "webhook-service-name", "hook-operator-webhook", "the Service (in --operator-namespace, port 443) through which the API server reaches the webhooks")
	envflag.Bind(fs, "webhook-service-name", "HOOK_OPERATOR_WEBHOOK_SERVICE_NAME")
	envflag.BindAlias(fs, "webhook-service-name", envflag.Same("VALIDATING_WEBHOOK_SERVICE_NAME"))
	fs.StringVar(&f.Namespace, "operator-namespace", "", "the namespace the operator runs in (default: the Pod's, from its ServiceAccount, else $POD_NAMESPACE)")
	envflag.Bind(fs, "operator-namespace", "HOOK_OPERATOR_NAMESPACE")
	envflag.BindAlias(fs, "operator-namespace", envflag.Same("SHELL_OPERATOR_NAMESPACE"))
	fs.StringVar(&f.URL, "webhook-url", "", "register the webhooks by URL, https://HOST:PORT, instead of by Service (an operator outside the cluster)")
	envflag.Bind(fs, "webhook-url", "HOOK_OPERATOR_WEBHOOK_URL")
	fs.StringVar(&f.FailurePolicy, "webhook-failure-policy", "Fail", "failurePolicy of admission bindings that set none: Fail or Ignore")
	envflag.Bind(fs, "webhook-failure-policy", "HOOK_OPERATOR_WEBHOOK_FAILURE_POLICY")
	envflag.BindAlias(fs, "webhook-failure-policy", envflag.Same("VALIDATING_WEBHOOK_FAILURE_POLICY"))
	fs.BoolVar(&f.Register, "webhook-register", true, "create and update the webhook configurations (false: the manifests register them)")
	envflag.Bind(fs, "webhook-register", "HOOK_OPERATOR_WEBHOOK_REGISTER")
	fs.StringToStringVar(&f.Labels, "webhook-labels", nil, "labels of the webhook configurations, key=value,...")
	envflag.Bind(fs, "webhook-labels", "HOOK_OPERATOR_WEBHOOK_LABELS")
	fs.StringToStringVar(&f.Annotations, "webhook-annotations", nil, "annotations of the webhook configurations, key=value,... (cert-manager's cert-manager.io/inject-ca-from, for one)")
	envflag.Bind(fs, "webhook-annotations", "HOOK_OPERATOR_WEBHOOK_ANNOTATIONS")
	fs.IntVar(&f.MaxConcurrent, "webhook-max-concurrent", 16, "admission and conversion requests whose hooks run at once; more wait for a free slot")
	envflag.Bind(fs, "webhook-max-concurrent", "HOOK_OPERATOR_WEBHOOK_MAX_CONCURRENT")

	fs.BoolVar(&f.SelfSigned, "webhook-self-signed", false, "make a CA and a serving certificate for the webhook Service's DNS names (and the host of --webhook-url), keep them in the Secret --webhook-cert-secret in --operator-namespace, shared by replicas, and register that CA; instead of --webhook-cert, --webhook-key and --webhook-ca")
	envflag.Bind(fs, "webhook-self-signed", "HOOK_OPERATOR_WEBHOOK_SELF_SIGNED")
	fs.StringVar(&f.CertSecret, "webhook-cert-secret", "hook-operator-webhook-certs", "the Secret of --webhook-self-signed")
	envflag.Bind(fs, "webhook-cert-secret", "HOOK_OPERATOR_WEBHOOK_CERT_SECRET")
	fs.StringSliceVar(&f.ClientCA, "webhook-client-ca", nil, "PEM files of CAs: the server then accepts only clients with a certificate one of them signed (the API server's, from its admission configuration); comma-separated")
	envflag.Bind(fs, "webhook-client-ca", "HOOK_OPERATOR_WEBHOOK_CLIENT_CA")
	envflag.BindAlias(fs, "webhook-client-ca", envflag.Same("VALIDATING_WEBHOOK_CLIENT_CA"))
	fs.IntVar(&f.MaxConnections, "webhook-max-connections", 256, "open connections each webhook listener accepts at once; more wait")
	envflag.Bind(fs, "webhook-max-connections", "HOOK_OPERATOR_WEBHOOK_MAX_CONNECTIONS")
	fs.StringVar(&f.TLSMinVersion, "webhook-tls-min-version", "1.2", "1.2 (TLS 1.2 with ECDHE and AES-GCM or ChaCha20 suites, or 1.3) or 1.3 (TLS 1.3 only)")
	envflag.Bind(fs, "webhook-tls-min-version", "HOOK_OPERATOR_WEBHOOK_TLS_MIN_VERSION")

	c := &f.Conversion
	const second = "; given, conversions are served by a second listener (shell-operator's layout), else by the one above"
	fs.StringVar(&c.ListenAddress, "conversion-webhook-listen-address", "", "serve conversion webhooks on this host:port (default :9681 when a second listener runs)"+second)
	envflag.Bind(fs, "conversion-webhook-listen-address", "HOOK_OPERATOR_CONVERSION_WEBHOOK_LISTEN_ADDRESS")
	envflag.BindAlias(fs, "conversion-webhook-listen-address", envflag.Alias{Names: []string{"CONVERSION_WEBHOOK_LISTEN_ADDRESS", "CONVERSION_WEBHOOK_LISTEN_PORT"}, Value: webhookListenAddress("CONVERSION_WEBHOOK", "9681")})
	fs.StringVar(&c.Cert, "conversion-webhook-cert", "", "the conversion listener's certificate (default /conversion-certs/tls.crt)"+second)
	envflag.Bind(fs, "conversion-webhook-cert", "HOOK_OPERATOR_CONVERSION_WEBHOOK_CERT")
	envflag.BindAlias(fs, "conversion-webhook-cert", envflag.Same("CONVERSION_WEBHOOK_SERVER_CERT"))
	fs.StringVar(&c.Key, "conversion-webhook-key", "", "the conversion listener's private key (default /conversion-certs/tls.key)"+second)
	envflag.Bind(fs, "conversion-webhook-key", "HOOK_OPERATOR_CONVERSION_WEBHOOK_KEY")
	envflag.BindAlias(fs, "conversion-webhook-key", envflag.Same("CONVERSION_WEBHOOK_SERVER_KEY"))
	fs.StringVar(&c.CA, "conversion-webhook-ca", "", "the CA bundle put in the CRDs' spec.conversion (default /conversion-certs/ca.crt)"+second)
	envflag.Bind(fs, "conversion-webhook-ca", "HOOK_OPERATOR_CONVERSION_WEBHOOK_CA")
	envflag.BindAlias(fs, "conversion-webhook-ca", envflag.Same("CONVERSION_WEBHOOK_CA"))
	fs.StringVar(&c.ServiceName, "conversion-webhook-service-name", "", "the Service (port 443) in front of the conversion listener (default --webhook-service-name)"+second)
	envflag.Bind(fs, "conversion-webhook-service-name", "HOOK_OPERATOR_CONVERSION_WEBHOOK_SERVICE_NAME")
	envflag.BindAlias(fs, "conversion-webhook-service-name", envflag.Same("CONVERSION_WEBHOOK_SERVICE_NAME"))
	fs.StringVar(&c.URL, "conversion-webhook-url", "", "register the conversions by URL, https://HOST:PORT, instead of by Service (default --webhook-url)"+second)
	envflag.Bind(fs, "conversion-webhook-url", "HOOK_OPERATOR_CONVERSION_WEBHOOK_URL")
	fs.StringSliceVar(&c.ClientCA, "conversion-webhook-client-ca", nil, "the second listener's --webhook-client-ca (default --webhook-client-ca)"+second)
	envflag.Bind(fs, "conversion-webhook-client-ca", "HOOK_OPERATOR_CONVERSION_WEBHOOK_CLIENT_CA")
	envflag.BindAlias(fs, "conversion-webhook-client-ca", envflag.Same("CONVERSION_WEBHOOK_CLIENT_CA"))
}

// webhookListenAddress reads shell-operator's two variables of a webhook
// listener, <prefix>_LISTEN_ADDRESS and <prefix>_LISTEN_PORT (default
// port).
func webhookListenAddress(prefix, port string) func(lookup func(string) (string, bool)) (string, bool, error) {
	return func(lookup func(string) (string, bool)) (string, bool, error) {
		host, hostSet := lookup(prefix + "_LISTEN_ADDRESS")
		p, portSet := lookup(prefix + "_LISTEN_PORT")
		if !hostSet && !portSet {
			return "", false, nil
		}
		if !portSet {
			p = port
		}
		if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
			return "", true, fmt.Errorf("%s_LISTEN_PORT=%q: use a port number", prefix, p)
		}
		if host == "0.0.0.0" {
			host = ""
		}
		return net.JoinHostPort(host, p), true, nil
	}
}

// serviceAccountNamespace is where a Pod finds its namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// operatorNamespace returns --operator-namespace, else the Pod's namespace.
func operatorNamespace(flag string) string {
	if flag != "" {
		return flag
	}
	if data, err := os.ReadFile(serviceAccountNamespace); err == nil {
		return strings.TrimSpace(string(data))
	}
	return os.Getenv("POD_NAMESPACE")
}

// serveWebhooks starts the webhook server(s) for the hooks' admission and
// conversion bindings, if they have any, and registers them: the webhook
// configurations and the CRDs' spec.conversion. It returns which it serves.
// A dry run serves admission bindings only (see serveDryRun); cleanup,
// when not nil, is to be called when the operator has stopped.
//
// rejected is told the reason of each webhook request refused before a
// hook ran (a metric).
func serveWebhooks(ctx context.Context, f WebhookFlags, op *operator.Operator, clients *kube.Clients, dryRun bool, rejected func(string), log *logrus.Logger) (admission, conversion bool, cleanup func(), err error) {
	if f.ListenAddress == "" {
		return false, false, nil, nil
	}
	if f.MaxConnections < 1 {
		return false, false, nil, fmt.Errorf("--webhook-max-connections=%d: use 1 or more (the default is 256)", f.MaxConnections)
	}
	tls13Only, err := webhook.ParseTLSMinVersion(f.TLSMinVersion)
	if err != nil {
		return false, false, nil, fmt.Errorf("--webhook-tls-min-version=%w", err)
	}
	serve := serving{tls13Only: tls13Only, maxConns: f.MaxConnections, slots: webhook.NewSlots(f.MaxConcurrent), rejected: rejected}
	if f.SelfSigned && len(op.Admissions(false))+len(op.Admissions(true))+len(op.ConversionCRDs()) > 0 {
		if err := selfSigned(ctx, &f, clients, log); err != nil {
			return false, false, nil, err
		}
	}
	if dryRun {
		return serveDryRun(ctx, f, op, clients, serve, log)
	}
	a, c, err := serveLive(ctx, f, op, clients, serve, log)
	return a, c, nil, err
}

// selfSignedCheck is how often the self-signed certificate is looked at
// again (and made again when it is to expire within 30 days).
const selfSignedCheck = 12 * time.Hour

// selfSigned makes (or reads) the self-signed certificates and keeps them
// in memory (f.selfSigned), renewed while ctx lasts: the private key is
// never written to a file.
func selfSigned(ctx context.Context, f *WebhookFlags, clients *kube.Clients, log *logrus.Logger) error {
	ns := operatorNamespace(f.Namespace)
	if ns == "" {
		return fmt.Errorf("--webhook-self-signed keeps the certificates in a Secret of the operator's namespace: set --operator-namespace (or run in a Pod)")
	}
	var hosts []string
	for _, svc := range []string{f.ServiceName, f.Conversion.ServiceName} {
		if svc != "" {
			hosts = append(hosts, webhook.ServiceHosts(svc, ns)...)
		}
	}
	for _, raw := range []string{f.URL, f.Conversion.URL} {
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return fmt.Errorf("--webhook-url %q: want https://HOST[:PORT]", raw)
		}
		hosts = append([]string{u.Hostname()}, hosts...)
	}
	s := &webhook.SelfSigned{Dynamic: clients.Dynamic, Namespace: ns, Secret: f.CertSecret, Hosts: hosts, Log: log}
	certs, err := s.Keep(ctx, selfSignedCheck)
	if err != nil {
		return fmt.Errorf("--webhook-self-signed: %w", err)
	}
	f.selfSigned = certs
	return nil
}

// serveLive serves and registers the webhooks of an operator that is not
// a dry run.
func serveLive(ctx context.Context, f WebhookFlags, op *operator.Operator, clients *kube.Clients, serve serving, log *logrus.Logger) (admission, conversion bool, err error) {
	validating, mutating := op.Admissions(false), op.Admissions(true)
	crds := op.ConversionCRDs()
	if f.FailurePolicy != "Fail" && f.FailurePolicy != "Ignore" {
		return false, false, fmt.Errorf("--webhook-failure-policy=%s: use Fail or Ignore", f.FailurePolicy)
	}
	admissionHandler := op.AdmissionHandler(f.MaxConcurrent, false)
	conversionHandler, err := op.ConversionHandler(f.MaxConcurrent)
	if err != nil {
		return false, false, err
	}
	admission, conversion = admissionHandler != nil, conversionHandler != nil

	separate := f.Conversion.separate()
	conv := f.Conversion.withDefaults(f)
	mux := http.NewServeMux()
	if admission {
		mux.Handle("/hooks/", admissionHandler)
	}
	if conversion && !separate {
		mux.Handle("/", conversionHandler)
	}
	if admission || (conversion && !separate) {
		addr, err := listen(ctx, listener{flag: "webhook", what: "admission or conversion", address: f.ListenAddress,
			cert: f.Cert, key: f.Key, memory: f.selfSigned, clientCA: f.ClientCA}, serve, mux, log)
		if err != nil {
			return false, false, err
		}
		served := 0
		if !separate {
			served = len(crds)
		}
		log.WithFields(logrus.Fields{"address": addr.String(), "validating": len(validating), "mutating": len(mutating), "conversions": served}).Info("serving webhooks")
	}
	if conversion && separate {
		addr, err := listen(ctx, listener{flag: "conversion-webhook", what: "conversion", address: conv.ListenAddress,
			cert: conv.Cert, key: conv.Key, memory: f.selfSigned, clientCA: conv.ClientCA}, serve, conversionHandler, log)
		if err != nil {
			return false, false, err
		}
		log.WithFields(logrus.Fields{"address": addr.String(), "crds": crds}).Info("serving conversion webhooks")
	}
	if !f.Register {
		return admission, conversion, nil
	}
	if admission {
		reg, err := registration(f, f.CA, f.ServiceName, f.URL)
		if err != nil {
			return false, false, err
		}
		if err := webhook.Sync(ctx, clients.Dynamic, reg, validating, mutating, log); err != nil {
			return false, false, err
		}
	} else if err := webhook.Sync(ctx, clients.Dynamic, webhook.Registration{Name: f.ConfigurationName}, nil, nil, log); err != nil {
		// Bindings that went away: their configurations go too.
		return false, false, err
	}
	ca, service, url := f.CA, f.ServiceName, f.URL
	if separate {
		ca, service, url = conv.CA, conv.ServiceName, conv.URL
	}
	// The name tells this operator's conversions from other operators'.
	reg := webhook.Registration{Name: f.ConfigurationName}
	if conversion {
		if reg, err = registration(f, ca, service, url); err != nil {
			return false, false, err
		}
	}
	return admission, conversion, webhook.SyncConversions(ctx, clients.Dynamic, reg, crds, log)
}

// serveDryRun serves the admission bindings of a dry run: every request is
// allowed, and what the hook answered is logged and sent back as a
// warning. The configurations it registers are its own (named
// <--webhook-configuration-name>-dry-run, so that a dry run beside the real
// operator does not take its registration over), with failurePolicy Ignore
// for every webhook, and deleted when the dry run stops: a dry run writes
// nothing else. Conversion bindings are not served: a conversion cannot be
// allowed without being made.
func serveDryRun(ctx context.Context, f WebhookFlags, op *operator.Operator, clients *kube.Clients, serve serving, log *logrus.Logger) (admission, conversion bool, cleanup func(), err error) {
	validating, mutating := op.Admissions(false), op.Admissions(true)
	if len(op.ConversionCRDs()) > 0 {
		log.Warn("dry-run: conversion bindings are not served (a conversion cannot be allowed without being made); the CRDs keep their conversion")
	}
	handler := op.AdmissionHandler(f.MaxConcurrent, true)
	if handler == nil {
		return false, false, nil, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/hooks/", handler)
	addr, err := listen(ctx, listener{flag: "webhook", what: "admission", address: f.ListenAddress,
		cert: f.Cert, key: f.Key, memory: f.selfSigned, clientCA: f.ClientCA}, serve, mux, log)
	if err != nil {
		return false, false, nil, err
	}
	log.WithFields(logrus.Fields{"address": addr.String(), "validating": len(validating), "mutating": len(mutating)}).Info("dry-run: serving admission webhooks; every request is allowed")
	if !f.Register {
		return true, false, nil, nil
	}
	f.ConfigurationName += "-dry-run"
	reg, err := registration(f, f.CA, f.ServiceName, f.URL)
	if err != nil {
		return false, false, nil, err
	}
	reg.IgnoreFailures = true
	if err := webhook.Sync(ctx, clients.Dynamic, reg, validating, mutating, log); err != nil {
		return false, false, nil, err
	}
	return true, false, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := webhook.Sync(ctx, clients.Dynamic, webhook.Registration{Name: f.ConfigurationName}, nil, nil, log); err != nil {
			log.WithError(err).Warn("dry-run: deleting the dry run's webhook configurations failed; delete them by hand")
		}
	}, nil
}

// listener is one HTTPS listener of webhooks: its flags' prefix (webhook
// or conversion-webhook), the bindings it serves (for messages), and its
// settings.
type listener struct {
	flag, what, address string
	cert, key           string
	// memory, when not nil, serves the certificate instead of the files.
	memory   *webhook.MemoryCert
	clientCA []string
}

// serving holds the settings every webhook listener of the operator
// shares: TLS, the connection cap, and the slots.
type serving struct {
	tls13Only bool
	maxConns  int
	slots     webhook.Slots
	rejected  func(string)
}

// listen starts the HTTPS server of l for handler until ctx ends, with its
// certificate reloaded from disk (or held in memory), and returns the
// address it listens on. Errors name the flag to change.
func listen(ctx context.Context, l listener, serve serving, handler http.Handler, log *logrus.Logger) (net.Addr, error) {
	o := webhook.ServeOptions{TLS13Only: serve.tls13Only, MaxConns: serve.maxConns, Slots: serve.slots, Rejected: serve.rejected, Log: log}
	if l.memory != nil {
		o.Certificate = l.memory.GetCertificate
	} else {
		certs, err := webhook.NewCertReloader(l.cert, l.key, log)
		if err != nil {
			return nil, fmt.Errorf("the hooks have %s bindings, so the webhook server needs a certificate and key (--%s-cert, --%s-key): %w", l.what, l.flag, l.flag, err)
		}
		o.Certificate = certs.GetCertificate
	}
	clientCAs, err := webhook.ClientCAs(l.clientCA)
	if err != nil {
		return nil, fmt.Errorf("--%s-client-ca: %w", l.flag, err)
	}
	o.ClientCAs = clientCAs
	addr, err := webhook.Serve(ctx, l.address, handler, o)
	if err != nil {
		return nil, fmt.Errorf("--%s-listen-address: %w", l.flag, err)
	}
	return addr, nil
}

// registration says how to register the webhooks served with the CA in
// file caFile, by service or url.
// With --webhook-self-signed the CA is the one held in memory.
func registration(f WebhookFlags, caFile, service, url string) (webhook.Registration, error) {
	var ca []byte
	if f.selfSigned != nil {
		ca = f.selfSigned.CA()
	} else {
		var err error
		if ca, err = os.ReadFile(caFile); err != nil {
			return webhook.Registration{}, fmt.Errorf("the CA bundle for the webhook registrations (--webhook-ca, or --conversion-webhook-ca): %w", err)
		}
	}
	reg := webhook.Registration{
		Name: f.ConfigurationName, ServiceNamespace: operatorNamespace(f.Namespace), ServiceName: service,
		URL: url, CABundle: ca, FailurePolicy: f.FailurePolicy, Labels: f.Labels, Annotations: f.Annotations,
	}
	if reg.URL == "" && reg.ServiceNamespace == "" {
		return reg, fmt.Errorf("registering the webhooks by Service needs the operator's namespace: set --operator-namespace (or run in a Pod), or register by --webhook-url")
	}
	return reg, nil
}
