package start

import (
	"os"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/memlimit"
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
	// HookMemory bounds the memory of the reviews' hooks in flight.
	HookMemory HookMemory
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
func webhookServer(f WebhookFlags, op *operator.Operator, clients *kube.Clients, dryRun bool, rejected func(listener, reason string), log logrus.FieldLogger) (*webhook.Server, error) {
	c := f.Conversion
	if err := webhook.CheckConfigurationMode(f.ConfigurationMode); err != nil {
		return nil, err
	}
	hookMemory, why := f.HookMemory.resolve(memlimit.CgroupRoot)
	if f.ListenAddress != "" {
		bound := "not bounded"
		if hookMemory > 0 {
			bound = limit.Size(hookMemory)
		}
		log.WithField("hookMemory", bound).Info("webhook hooks' memory: " + why)
	}
	return webhook.NewServer(webhook.Options{
		ListenAddress: f.ListenAddress, Cert: f.Cert, Key: f.Key, CA: f.CA,
		ConfigurationName: f.ConfigurationName, ConfigurationMode: f.ConfigurationMode, ServiceName: f.ServiceName, Namespace: operatorNamespace(f.Namespace), URL: f.URL,
		FailurePolicy: f.FailurePolicy, Register: f.Register, Labels: f.Labels, Annotations: f.Annotations,
		MaxConcurrent: f.MaxConcurrent, HookMemory: hookMemory, SelfSigned: f.SelfSigned, CertSecret: f.CertSecret, ClientCA: f.ClientCA,
		Conversion: webhook.ConversionOptions{ListenAddress: c.ListenAddress, Cert: c.Cert, Key: c.Key, CA: c.CA,
			ServiceName: c.ServiceName, URL: c.URL, ClientCA: c.ClientCA},
		MaxConnections: f.MaxConnections, TLSMinVersion: f.TLSMinVersion, DryRun: dryRun,
		Dynamic: clients.Dynamic, Metadata: clients.Metadata, Rejected: rejected, Failed: op.WebhooksFailed, Misdirected: op.WebhooksMisdirected, Log: log,
	}, op)
}
