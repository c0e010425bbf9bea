package webhook

import (
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

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
	// ConfigurationMode is ModeManaged ("" too) or ModeExisting: whether
	// the operator creates and deletes the configurations, or only fills
	// in those made beforehand (see Registration.Mode).
	ConfigurationMode string
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
	// HookMemory bounds the memory the hooks of the requests handled at
	// once may use, each counted at HookMemory of its review's size, all
	// listeners together; 0: not bounded (see Slots).
	HookMemory int64
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
	// Metadata reads the CRDs' metadata, to find the conversions this
	// operator registered before and no binding names now.
	Metadata metadata.Interface
	// Rejected, when not nil, is told the listener (ListenerAdmission or
	// ListenerConversion) and the reason of each request refused before a
	// hook ran (a metric).
	Rejected func(listener, reason string)
	// StartRetry is how long the bindings found at start are tried again
	// after transient errors before Start fails; 0 is DefaultStartRetry,
	// less than 0 tries once.
	StartRetry time.Duration
	// Failed, when not nil, is told when serving or registering the
	// bindings after a change failed (an Event); the Server tries again at
	// the next change, and every failRetry meanwhile.
	Failed func(error)
	// Misdirected, when not nil, is told what is wrong with where the
	// registrations point (a Service that does not exist, a URL whose
	// port is not the listener's), each time that changes; nil when
	// nothing is. The Server checks again every failRetry while a fault
	// is left.
	Misdirected func(problems []string)
	Log         logrus.FieldLogger
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
