package start

import (
	"context"
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
	ServiceName       string
	Namespace         string
	URL               string
	FailurePolicy     string
	Register          bool
	Labels            map[string]string
	Annotations       map[string]string
	MaxConcurrent     int
}

// bindWebhookFlags defines the webhook flags on fs.
func bindWebhookFlags(fs *pflag.FlagSet, f *WebhookFlags) {
	fs.StringVar(&f.ListenAddress, "webhook-listen-address", ":9680", "serve the hooks' admission bindings over HTTPS on this host:port, when any hook has one (empty: do not serve them)")
	envflag.Bind(fs, "webhook-listen-address", "HOOK_OPERATOR_WEBHOOK_LISTEN_ADDRESS")
	envflag.BindAlias(fs, "webhook-listen-address", envflag.Alias{Names: []string{"VALIDATING_WEBHOOK_LISTEN_ADDRESS", "VALIDATING_WEBHOOK_LISTEN_PORT"}, Value: webhookListenAddress})
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
	fs.IntVar(&f.MaxConcurrent, "webhook-max-concurrent", 16, "admission requests whose hooks run at once; more wait for a free slot")
	envflag.Bind(fs, "webhook-max-concurrent", "HOOK_OPERATOR_WEBHOOK_MAX_CONCURRENT")
}

// webhookListenAddress reads shell-operator's two variables of the
// validating webhook listener.
func webhookListenAddress(lookup func(string) (string, bool)) (string, bool, error) {
	host, hostSet := lookup("VALIDATING_WEBHOOK_LISTEN_ADDRESS")
	port, portSet := lookup("VALIDATING_WEBHOOK_LISTEN_PORT")
	if !hostSet && !portSet {
		return "", false, nil
	}
	if !portSet {
		port = "9680"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", true, fmt.Errorf("VALIDATING_WEBHOOK_LISTEN_PORT=%q: use a port number", port)
	}
	if host == "0.0.0.0" {
		host = ""
	}
	return net.JoinHostPort(host, port), true, nil
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

// serveAdmission starts the webhook server for the hooks' admission
// bindings, if they have any, and registers them. It returns whether it
// serves them.
func serveAdmission(ctx context.Context, f WebhookFlags, op *operator.Operator, clients *kube.Clients, dryRun bool, log *logrus.Logger) (bool, error) {
	validating, mutating := op.Admissions(false), op.Admissions(true)
	if len(validating)+len(mutating) == 0 || f.ListenAddress == "" {
		if f.Register && !dryRun && f.ListenAddress != "" {
			// Bindings that went away: their configurations go too.
			return false, webhook.Sync(ctx, clients.Dynamic, registration(f, nil), nil, nil, log)
		}
		return false, nil
	}
	if dryRun {
		log.Warn("dry-run: admission bindings are not served or registered")
		return false, nil
	}
	if f.FailurePolicy != "Fail" && f.FailurePolicy != "Ignore" {
		return false, fmt.Errorf("--webhook-failure-policy=%s: use Fail or Ignore", f.FailurePolicy)
	}
	certs, err := webhook.NewCertReloader(f.Cert, f.Key, log)
	if err != nil {
		return false, fmt.Errorf("the hooks have admission bindings, so the webhook server needs a certificate and key (--webhook-cert, --webhook-key): %w", err)
	}
	addr, err := webhook.Serve(ctx, f.ListenAddress, op.AdmissionHandler(f.MaxConcurrent), certs, log)
	if err != nil {
		return false, err
	}
	log.WithFields(logrus.Fields{"address": addr.String(), "validating": len(validating), "mutating": len(mutating)}).Info("serving admission webhooks")
	if !f.Register {
		return true, nil
	}
	var ca []byte
	if ca, err = os.ReadFile(f.CA); err != nil {
		return false, fmt.Errorf("--webhook-ca: the CA bundle for the webhook configurations: %w", err)
	}
	reg := registration(f, ca)
	if reg.URL == "" && reg.ServiceNamespace == "" {
		return false, fmt.Errorf("registering the webhooks by Service needs the operator's namespace: set --operator-namespace (or run in a Pod), or register by --webhook-url")
	}
	return true, webhook.Sync(ctx, clients.Dynamic, reg, validating, mutating, log)
}

func registration(f WebhookFlags, ca []byte) webhook.Registration {
	return webhook.Registration{
		Name: f.ConfigurationName, ServiceNamespace: operatorNamespace(f.Namespace), ServiceName: f.ServiceName,
		URL: f.URL, CABundle: ca, FailurePolicy: f.FailurePolicy, Labels: f.Labels, Annotations: f.Annotations,
	}
}
