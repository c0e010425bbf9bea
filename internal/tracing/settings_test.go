package tracing

import (
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint string
		env      map[string]string
		// url is the request's URL; "" with wantErr "": off.
		url, where, warning string
		grpc, tls, gzip     bool
		wantErr             string
	}{
		{name: "nothing set: off"},
		{name: "shell-operator's host:port: gRPC without TLS", endpoint: "collector.monitoring:4317",
			url: "http://collector.monitoring:4317" + grpcPath, grpc: true, where: "collector.monitoring:4317 (OTLP/gRPC, no TLS)"},
		{name: "an https URL: gRPC with TLS", endpoint: "https://collector:4317/ignored",
			url: "https://collector:4317" + grpcPath, grpc: true, tls: true},
		{name: "the token without the endpoint", env: map[string]string{EnvAuthToken: "t"}, wantErr: "TRACING_OTLP_AUTH_TOKEN is set without TRACING_OTLP_ENDPOINT"},
		{name: "not host:port", endpoint: "collector", wantErr: `TRACING_OTLP_ENDPOINT="collector": give host:port`},
		{name: "a bad port", endpoint: "collector:http", wantErr: `the port "http" is not a number`},
		{name: "an ftp URL", endpoint: "ftp://collector:21", wantErr: "give host:port"},
		{name: "standard endpoint: OTLP/HTTP by default", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			url: "http://c:4318/v1/traces", where: "http://c:4318/v1/traces (OTLP/HTTP)"},
		{name: "the traces endpoint is taken as it is", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c/traces"},
			url: "https://c/traces", tls: true},
		{name: "standard gRPC without a scheme: TLS unless insecure", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			url: "https://c:4317" + grpcPath, grpc: true, tls: true},
		{name: "standard gRPC, insecure", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_INSECURE": "true", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
			url: "http://c:4317" + grpcPath, grpc: true, gzip: true},
		{name: "port 4317 over HTTP is warned of", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"},
			url: "http://c:4317/v1/traces", warning: "set OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		{name: "http/json", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL="http/json": give grpc or http/protobuf`},
		{name: "OTLP/HTTP without a URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, wantErr: "OTLP/HTTP needs a URL"},
		{name: "bad headers", endpoint: "c:4317", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, wantErr: `OTEL_EXPORTER_OTLP_HEADERS: "novalue" is not key=value`},
		{name: "bad compression", endpoint: "c:4317", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"}, wantErr: `OTEL_EXPORTER_OTLP_TRACES_COMPRESSION="zstd": give gzip or none`},
		{name: "bad timeout", endpoint: "c:4317", env: map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, wantErr: "in milliseconds"},
		{name: "a client certificate without its key", endpoint: "https://c:4317", env: map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/c.pem"}, wantErr: "go together"},
		{name: "a CA that is not there", endpoint: "https://c:4317", env: map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, wantErr: "OTEL_EXPORTER_OTLP_CERTIFICATE: open /nonexistent/ca.pem"},
		{name: "the SDK disabled", endpoint: "c:4317", env: map[string]string{"OTEL_SDK_DISABLED": "true"}},
		{name: "no exporter", endpoint: "c:4317", env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}},
		{name: "another exporter", endpoint: "c:4317", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: `OTEL_TRACES_EXPORTER="zipkin": only otlp`},
		{name: "a bad sampler", endpoint: "c:4317", env: map[string]string{"OTEL_TRACES_SAMPLER": "sometimes"}, wantErr: `OTEL_TRACES_SAMPLER="sometimes": give always_on`},
		{name: "a bad ratio", endpoint: "c:4317", env: map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, wantErr: "from 0 to 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := FromEnv(tc.endpoint, env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.url == "" {
				if s.On() {
					t.Fatalf("on, to %s", s.Where())
				}
				return
			}
			d := s.dest
			if d.url != tc.url || d.grpc != tc.grpc || (d.tls != nil) != tc.tls || d.gzip != tc.gzip {
				t.Errorf("url %s grpc %v tls %v gzip %v", d.url, d.grpc, d.tls != nil, d.gzip)
			}
			if tc.where != "" && s.Where() != tc.where {
				t.Errorf("where %q, want %q", s.Where(), tc.where)
			}
			if !strings.Contains(s.Warning, tc.warning) || (tc.warning == "") != (s.Warning == "") {
				t.Errorf("warning %q, want %q", s.Warning, tc.warning)
			}
			if s.ServiceName != "hook-operator" || s.SamplerName != "parentbased_always_on" {
				t.Errorf("service %q sampler %q", s.ServiceName, s.SamplerName)
			}
		})
	}
}

// The token never shows where the destination is described.
func TestWhereHoldsNoCredentials(t *testing.T) {
	s, err := FromEnv("c:4317", env(map[string]string{EnvAuthToken: "s3cret", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=k3y"}))
	if err != nil {
		t.Fatal(err)
	}
	if w := s.Where(); strings.Contains(w, "s3cret") || strings.Contains(w, "k3y") {
		t.Errorf("Where() = %q", w)
	}
	s, _ = FromEnv("", env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://user:pw@c:4318"}))
	if w := s.Where(); strings.Contains(w, "pw") {
		t.Errorf("Where() = %q", w)
	}
}

func TestHookEnvLeavesTheTokenOut(t *testing.T) {
	got := HookEnv([]string{"A=1", EnvAuthToken + "=s3cret", "TRACING_OTLP_ENDPOINT=c:4317"})
	if strings.Join(got, " ") != "A=1 TRACING_OTLP_ENDPOINT=c:4317" {
		t.Errorf("HookEnv = %q", got)
	}
}
