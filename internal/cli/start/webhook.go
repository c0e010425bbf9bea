package start

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

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
	// ConfigurationMode is managed (the operator creates and deletes the
	// configurations) or existing (made beforehand; only filled in).
	ConfigurationMode string
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

// bindWebhookFlags defines the webhook flags on fs.
func bindWebhookFlags(fs *pflag.FlagSet, f *WebhookFlags) {
	fs.StringVar(&f.ListenAddress, "webhook-listen-address", ":9680", "serve the hooks' admission and conversion bindings over HTTPS on host:port (empty: not)")
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
	fs.StringVar(&f.ConfigurationMode, "webhook-configuration-mode", webhook.ModeManaged, "managed (create and delete the webhook configurations) or existing (only fill in the chart's)")
	envflag.Bind(fs, "webhook-configuration-mode", "HOOK_OPERATOR_WEBHOOK_CONFIGURATION_MODE")
	fs.StringVar(&f.ServiceName, "webhook-service-name", "hook-operator-webhook", "the Service (in --operator-namespace, port 443) through which the API server reaches the webhooks")
	envflag.Bind(fs, "webhook-service-name", "HOOK_OPERATOR_WEBHOOK_SERVICE_NAME")
	envflag.BindAlias(fs, "webhook-service-name", envflag.Same("VALIDATING_WEBHOOK_SERVICE_NAME"))
	fs.StringVar(&f.Namespace, "operator-namespace", "", "the operator's namespace (default: the Pod's, from its ServiceAccount, else $POD_NAMESPACE)")
	envflag.Bind(fs, "operator-namespace", "HOOK_OPERATOR_NAMESPACE")
	envflag.BindAlias(fs, "operator-namespace", envflag.Same("SHELL_OPERATOR_NAMESPACE"))
	fs.StringVar(&f.URL, "webhook-url", "", "register the webhooks by URL, https://HOST:PORT, not by Service (an operator outside the cluster)")
	envflag.Bind(fs, "webhook-url", "HOOK_OPERATOR_WEBHOOK_URL")
	fs.StringVar(&f.FailurePolicy, "webhook-failure-policy", "Fail", "failurePolicy of admission bindings that set none: Fail or Ignore")
	envflag.Bind(fs, "webhook-failure-policy", "HOOK_OPERATOR_WEBHOOK_FAILURE_POLICY")
	envflag.BindAlias(fs, "webhook-failure-policy", envflag.Same("VALIDATING_WEBHOOK_FAILURE_POLICY"))
	fs.BoolVar(&f.Register, "webhook-register", true, "create and update the webhook configurations (false: the manifests register them)")
	envflag.Bind(fs, "webhook-register", "HOOK_OPERATOR_WEBHOOK_REGISTER")
	fs.StringToStringVar(&f.Labels, "webhook-labels", nil, "labels of the webhook configurations, key=value,...")
	envflag.Bind(fs, "webhook-labels", "HOOK_OPERATOR_WEBHOOK_LABELS")
	fs.StringToStringVar(&f.Annotations, "webhook-annotations", nil, "annotations of the webhook configurations, key=value,... (cert-manager.io/inject-ca-from)")
	envflag.Bind(fs, "webhook-annotations", "HOOK_OPERATOR_WEBHOOK_ANNOTATIONS")
	fs.IntVar(&f.MaxConcurrent, "webhook-max-concurrent", 16, "admission and conversion requests whose hooks run at once; more wait for a free slot")
	envflag.Bind(fs, "webhook-max-concurrent", "HOOK_OPERATOR_WEBHOOK_MAX_CONCURRENT")

	fs.BoolVar(&f.SelfSigned, "webhook-self-signed", false, "make a CA and certificate, kept in --webhook-cert-secret, instead of --webhook-cert, -key and -ca")
	envflag.Bind(fs, "webhook-self-signed", "HOOK_OPERATOR_WEBHOOK_SELF_SIGNED")
	fs.StringVar(&f.CertSecret, "webhook-cert-secret", "hook-operator-webhook-certs", "the Secret of --webhook-self-signed")
	envflag.Bind(fs, "webhook-cert-secret", "HOOK_OPERATOR_WEBHOOK_CERT_SECRET")
	fs.StringSliceVar(&f.ClientCA, "webhook-client-ca", nil, "PEM files of CAs, comma-separated: accept only clients with a certificate one of them signed")
	envflag.Bind(fs, "webhook-client-ca", "HOOK_OPERATOR_WEBHOOK_CLIENT_CA")
	envflag.BindAlias(fs, "webhook-client-ca", envflag.Same("VALIDATING_WEBHOOK_CLIENT_CA"))
	fs.IntVar(&f.MaxConnections, "webhook-max-connections", 256, "open connections each webhook listener accepts at once; more wait")
	envflag.Bind(fs, "webhook-max-connections", "HOOK_OPERATOR_WEBHOOK_MAX_CONNECTIONS")
	fs.StringVar(&f.TLSMinVersion, "webhook-tls-min-version", "1.2", "1.2 (TLS 1.2 with ECDHE and AES-GCM or ChaCha20 suites, or 1.3) or 1.3 (TLS 1.3 only)")
	envflag.Bind(fs, "webhook-tls-min-version", "HOOK_OPERATOR_WEBHOOK_TLS_MIN_VERSION")

	c := &f.Conversion
	fs.StringVar(&c.ListenAddress, "conversion-webhook-listen-address", "", "serve conversions on a second listener (any --conversion-webhook-* starts it; default :9681)")
	envflag.Bind(fs, "conversion-webhook-listen-address", "HOOK_OPERATOR_CONVERSION_WEBHOOK_LISTEN_ADDRESS")
	envflag.BindAlias(fs, "conversion-webhook-listen-address", envflag.Alias{Names: []string{"CONVERSION_WEBHOOK_LISTEN_ADDRESS", "CONVERSION_WEBHOOK_LISTEN_PORT"}, Value: webhookListenAddress("CONVERSION_WEBHOOK", "9681")})
	fs.StringVar(&c.Cert, "conversion-webhook-cert", "", "the second listener's certificate (default /conversion-certs/tls.crt)")
	envflag.Bind(fs, "conversion-webhook-cert", "HOOK_OPERATOR_CONVERSION_WEBHOOK_CERT")
	envflag.BindAlias(fs, "conversion-webhook-cert", envflag.Same("CONVERSION_WEBHOOK_SERVER_CERT"))
	fs.StringVar(&c.Key, "conversion-webhook-key", "", "the second listener's private key (default /conversion-certs/tls.key)")
	envflag.Bind(fs, "conversion-webhook-key", "HOOK_OPERATOR_CONVERSION_WEBHOOK_KEY")
	envflag.BindAlias(fs, "conversion-webhook-key", envflag.Same("CONVERSION_WEBHOOK_SERVER_KEY"))
	fs.StringVar(&c.CA, "conversion-webhook-ca", "", "the CA bundle put in the CRDs' spec.conversion (default /conversion-certs/ca.crt)")
	envflag.Bind(fs, "conversion-webhook-ca", "HOOK_OPERATOR_CONVERSION_WEBHOOK_CA")
	envflag.BindAlias(fs, "conversion-webhook-ca", envflag.Same("CONVERSION_WEBHOOK_CA"))
	fs.StringVar(&c.ServiceName, "conversion-webhook-service-name", "", "the Service (port 443) in front of the second listener (default --webhook-service-name)")
	envflag.Bind(fs, "conversion-webhook-service-name", "HOOK_OPERATOR_CONVERSION_WEBHOOK_SERVICE_NAME")
	envflag.BindAlias(fs, "conversion-webhook-service-name", envflag.Same("CONVERSION_WEBHOOK_SERVICE_NAME"))
	fs.StringVar(&c.URL, "conversion-webhook-url", "", "register the conversions by URL, https://HOST:PORT, not by Service (default --webhook-url)")
	envflag.Bind(fs, "conversion-webhook-url", "HOOK_OPERATOR_CONVERSION_WEBHOOK_URL")
	fs.StringSliceVar(&c.ClientCA, "conversion-webhook-client-ca", nil, "the second listener's --webhook-client-ca (default --webhook-client-ca)")
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

// webhookServer returns the server of the hooks' webhook bindings, with
// the flags' settings.
func webhookServer(f WebhookFlags, op *operator.Operator, clients *kube.Clients, dryRun bool, rejected func(string), log logrus.FieldLogger) (*webhook.Server, error) {
	c := f.Conversion
	if err := webhook.CheckConfigurationMode(f.ConfigurationMode); err != nil {
		return nil, err
	}
	return webhook.NewServer(webhook.Options{
		ListenAddress: f.ListenAddress, Cert: f.Cert, Key: f.Key, CA: f.CA,
		ConfigurationName: f.ConfigurationName, ConfigurationMode: f.ConfigurationMode, ServiceName: f.ServiceName, Namespace: operatorNamespace(f.Namespace), URL: f.URL,
		FailurePolicy: f.FailurePolicy, Register: f.Register, Labels: f.Labels, Annotations: f.Annotations,
		MaxConcurrent: f.MaxConcurrent, SelfSigned: f.SelfSigned, CertSecret: f.CertSecret, ClientCA: f.ClientCA,
		Conversion: webhook.ConversionOptions{ListenAddress: c.ListenAddress, Cert: c.Cert, Key: c.Key, CA: c.CA,
			ServiceName: c.ServiceName, URL: c.URL, ClientCA: c.ClientCA},
		MaxConnections: f.MaxConnections, TLSMinVersion: f.TLSMinVersion, DryRun: dryRun,
		Dynamic: clients.Dynamic, Rejected: rejected, Failed: op.WebhooksFailed, Log: log,
	}, op)
}
