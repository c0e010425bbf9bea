package tracing

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The environment variables tracing reads. TRACING_OTLP_ENDPOINT and
// TRACING_OTLP_AUTH_TOKEN are shell-operator's (v1.14 and later: OTLP over
// gRPC, without TLS, the token sent as a Bearer Authorization header); the
// others are OpenTelemetry's standard ones (each OTEL_EXPORTER_OTLP_X has
// a OTEL_EXPORTER_OTLP_TRACES_X that wins over it).
const (
	EnvEndpoint    = "TRACING_OTLP_ENDPOINT"
	EnvAuthToken   = "TRACING_OTLP_AUTH_TOKEN"
	envOTLP        = "OTEL_EXPORTER_OTLP_"
	envExporter    = "OTEL_TRACES_EXPORTER"
	envSDKDisabled = "OTEL_SDK_DISABLED"
	envSampler     = "OTEL_TRACES_SAMPLER"
	envSamplerArg  = "OTEL_TRACES_SAMPLER_ARG"
	envServiceName = "OTEL_SERVICE_NAME"
)

// destination is where and how the exporter sends spans.
type destination struct {
	// url is the request's URL: the gRPC method's, or OTLP/HTTP's
	// /v1/traces.
	url     string
	grpc    bool
	tls     *tls.Config // nil: no TLS
	headers http.Header
	gzip    bool
	timeout time.Duration
	// where describes it for the log (no credentials).
	where string
}

// Settings say where traces go. The zero value is tracing off.
type Settings struct {
	dest *destination
	// ServiceName is OTEL_SERVICE_NAME, default "hook-operator".
	ServiceName string
	// Sampler is OTEL_TRACES_SAMPLER with its argument; default: every
	// trace sampled unless its parent (an API server's admission request)
	// was not.
	Sampler sdktrace.Sampler
	// SamplerName describes Sampler for the start's log line.
	SamplerName string
	// Warning, when set, is worth a line in the log at start.
	Warning string
}

// On reports whether traces are exported.
func (s Settings) On() bool { return s.dest != nil }

// Where describes the destination for a log line (no credentials).
func (s Settings) Where() string {
	if s.dest == nil {
		return "nowhere"
	}
	return s.dest.where
}

// FromEnv reads the settings from getenv, with endpoint the value of
// --tracing-otlp-endpoint (which TRACING_OTLP_ENDPOINT sets too). An error
// names the variable and says what to change.
func FromEnv(endpoint string, getenv func(string) string) (Settings, error) {
	if v := strings.ToLower(strings.TrimSpace(getenv(envSDKDisabled))); v == "true" {
		return Settings{}, nil
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv(envExporter))); v {
	case "", "otlp":
	case "none":
		return Settings{}, nil
	default:
		return Settings{}, fmt.Errorf("%s=%q: only otlp (or none, for no traces) is supported; unset it or set it to otlp", envExporter, v)
	}
	otlp := func(name string) (string, string) { // the signal's variable wins
		if v := strings.TrimSpace(getenv(envOTLP + "TRACES_" + name)); v != "" {
			return v, envOTLP + "TRACES_" + name
		}
		return strings.TrimSpace(getenv(envOTLP + name)), envOTLP + name
	}
	var s Settings
	var err error
	endpoint, token := strings.TrimSpace(endpoint), strings.TrimSpace(getenv(EnvAuthToken))
	switch {
	case endpoint != "":
		s.dest, err = shellOperatorDestination(endpoint, token)
	case token != "":
		return Settings{}, fmt.Errorf("%s is set without %s: the token goes with that endpoint; set the endpoint too, or give the header in %sHEADERS", EnvAuthToken, EnvEndpoint, envOTLP)
	default:
		s.dest, s.Warning, err = standardDestination(otlp)
	}
	if err != nil || s.dest == nil {
		return Settings{}, err
	}
	if err := s.dest.common(otlp); err != nil {
		return Settings{}, err
	}
	s.ServiceName = strings.TrimSpace(getenv(envServiceName))
	if s.ServiceName == "" {
		s.ServiceName = "hook-operator"
	}
	s.Sampler, s.SamplerName, err = sampler(getenv(envSampler), getenv(envSamplerArg))
	if err != nil {
		return Settings{}, err
	}
	return s, nil
}

// shellOperatorDestination is TRACING_OTLP_ENDPOINT's: host:port of an
// OTLP/gRPC receiver spoken to without TLS, as shell-operator does, or a
// URL (http:// without TLS, https:// with it).
func shellOperatorDestination(e, token string) (*destination, error) {
	d := &destination{grpc: true, headers: http.Header{}}
	if token != "" {
		d.headers.Set("Authorization", "Bearer "+token)
	}
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%s=%q: give host:port (as shell-operator takes it, without TLS) or an http:// or https:// URL", EnvEndpoint, e)
		}
		if u.Scheme == "https" {
			d.tls = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		d.url, d.where = u.Scheme+"://"+u.Host+grpcPath, u.Scheme+"://"+u.Host+" (OTLP/gRPC)"
		return d, nil
	}
	if err := checkHostPort(EnvEndpoint, e); err != nil {
		return nil, err
	}
	d.url, d.where = "http://"+e+grpcPath, e+" (OTLP/gRPC, no TLS)"
	return d, nil
}

// standardDestination is what OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT and
// _PROTOCOL say, as the OpenTelemetry specification reads them; nil
// when neither endpoint is set.
func standardDestination(otlp func(string) (string, string)) (*destination, string, error) {
	endpoint, endpointName := otlp("ENDPOINT")
	if endpoint == "" {
		return nil, "", nil
	}
	proto, protoName := otlp("PROTOCOL")
	var warning string
	switch proto {
	case "grpc":
	case "http/protobuf":
	case "":
		proto = "http/protobuf" // the specification's default
	default:
		return nil, "", fmt.Errorf("%s=%q: give grpc or http/protobuf (http/json is not supported)", protoName, proto)
	}
	d := &destination{grpc: proto == "grpc"}
	insecure, insecureName := otlp("INSECURE")
	switch strings.ToLower(insecure) {
	case "", "false", "true":
	default:
		return nil, "", fmt.Errorf("%s=%q: give true or false", insecureName, insecure)
	}
	if !strings.Contains(endpoint, "://") {
		if !d.grpc {
			return nil, "", fmt.Errorf("%s=%q: OTLP/HTTP needs a URL, such as http://otel-collector:4318", endpointName, endpoint)
		}
		scheme := "https"
		if strings.EqualFold(insecure, "true") {
			scheme = "http"
		}
		endpoint = scheme + "://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", fmt.Errorf("%s=%q: give an http:// or https:// URL", endpointName, endpoint)
	}
	if u.Scheme == "https" {
		d.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	switch {
	case d.grpc:
		d.url, d.where = u.Scheme+"://"+u.Host+grpcPath, u.Scheme+"://"+u.Host+" (OTLP/gRPC)"
	case endpointName == envOTLP+"TRACES_ENDPOINT":
		u.User = nil
		d.url, d.where = u.String(), u.String()+" (OTLP/HTTP)"
	default:
		u.User = nil
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		d.url, d.where = u.String(), u.String()+" (OTLP/HTTP)"
	}
	if proto == "http/protobuf" && u.Port() == "4317" {
		warning = fmt.Sprintf("%s names port 4317, OTLP/gRPC's, and the protocol is http/protobuf (OTLP/HTTP's port is 4318): if nothing arrives, set %sPROTOCOL=grpc", endpointName, envOTLP)
	}
	return d, warning, nil
}

// common reads the settings every destination takes from the standard
// variables: headers, CA and client certificates, compression, timeout.
func (d *destination) common(otlp func(string) (string, string)) error {
	if d.headers == nil {
		d.headers = http.Header{}
	}
	if v, name := otlp("HEADERS"); v != "" {
		h, err := parseHeaders(name, v)
		if err != nil {
			return err
		}
		for k, vs := range h {
			d.headers[k] = vs
		}
	}
	if d.tls != nil {
		if ca, name := otlp("CERTIFICATE"); ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return fmt.Errorf("%s=%s: no PEM certificate in the file; give the CA's certificate in PEM", name, ca)
			}
			d.tls.RootCAs = pool
		}
		cert, certName := otlp("CLIENT_CERTIFICATE")
		key, keyName := otlp("CLIENT_KEY")
		if (cert == "") != (key == "") {
			return fmt.Errorf("%s and %s go together: give both or neither", certName, keyName)
		}
		if cert != "" {
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", certName, keyName, err)
			}
			d.tls.Certificates = []tls.Certificate{pair}
		}
	}
	switch v, name := otlp("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		d.gzip = true
	default:
		return fmt.Errorf("%s=%q: give gzip or none", name, v)
	}
	d.timeout = 10 * time.Second
	if v, name := otlp("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return fmt.Errorf("%s=%q: give the export's timeout in milliseconds, such as 10000", name, v)
		}
		d.timeout = time.Duration(ms) * time.Millisecond
	}
	return nil
}

// checkHostPort refuses what is not host:port.
func checkHostPort(name, e string) error {
	host, port, err := net.SplitHostPort(e)
	if err != nil || host == "" || strings.ContainsAny(e, "/ ") {
		return fmt.Errorf("%s=%q: give host:port of an OTLP/gRPC receiver, such as otel-collector.monitoring:4317, or an http:// or https:// URL", name, e)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%s=%q: the port %q is not a number from 1 to 65535", name, e, port)
	}
	return nil
}

// sampler builds OTEL_TRACES_SAMPLER's sampler as the OpenTelemetry
// specification names them.
func sampler(name, arg string) (sdktrace.Sampler, string, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	ratio := 1.0
	if strings.HasSuffix(name, "traceidratio") && strings.TrimSpace(arg) != "" {
		r, err := strconv.ParseFloat(strings.TrimSpace(arg), 64)
		if err != nil || r < 0 || r > 1 {
			return nil, "", fmt.Errorf("%s=%q: give the share of traces to keep, from 0 to 1 (such as 0.1)", envSamplerArg, arg)
		}
		ratio = r
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), "parentbased_always_on", nil
	case "always_on":
		return sdktrace.AlwaysSample(), name, nil
	case "always_off":
		return sdktrace.NeverSample(), name, nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), name, nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), name + " " + strconv.FormatFloat(ratio, 'g', -1, 64), nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), name + " " + strconv.FormatFloat(ratio, 'g', -1, 64), nil
	}
	return nil, "", fmt.Errorf("%s=%q: give always_on, always_off, traceidratio, parentbased_always_on (the default), parentbased_always_off or parentbased_traceidratio", envSampler, name)
}

// HookEnv returns environ without TRACING_OTLP_AUTH_TOKEN: hooks send
// their spans through the operator (TRACE_SPANS_PATH) and need no
// credentials of the collector's.
func HookEnv(environ []string) []string {
	out := environ[:0:0]
	for _, kv := range environ {
		if !strings.HasPrefix(kv, EnvAuthToken+"=") {
			out = append(out, kv)
		}
	}
	return out
}
