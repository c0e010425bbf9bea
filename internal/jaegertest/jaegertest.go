// Package jaegertest runs a real trace backend for a test: Jaeger v2, pinned
// by hack/tools/jaeger/go.mod and built by hack/tools/jaeger.sh into the
// per-user cache (minutes, once per user and version). Start runs one
// Jaeger per call, with an OTLP receiver (gRPC and HTTP), in-memory storage
// and the query API, every listener on 127.0.0.1 and a port of its own, so
// that tests can run beside each other; it stops when the test ends. The
// test exports spans to OTLPEndpoint and reads them back with Traces, Trace
// and WaitTrace, as Jaeger stored them.
package jaegertest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/localcluster"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// startWait bounds Jaeger's start, binary built; generous for a 2-core
// machine running other tests beside it.
const startWait = 60 * time.Second

// Jaeger is a running Jaeger, stopped when the test that started it ends.
type Jaeger struct {
	// OTLPEndpoint is the OTLP/gRPC receiver's host:port (no scheme), what
	// the operator's TRACING_OTLP_ENDPOINT takes; it accepts plaintext and
	// ignores any Authorization header.
	OTLPEndpoint string
	// OTLPHTTPEndpoint is the OTLP/HTTP receiver's host:port: POST
	// http://OTLPHTTPEndpoint/v1/traces.
	OTLPHTTPEndpoint string
	// QueryURL is the base URL of the query service's HTTP API (and its
	// placeholder UI), such as http://127.0.0.1:23456.
	QueryURL string
	// Log is the file Jaeger writes its output to; its tail is printed when
	// the test fails.
	Log string

	client *http.Client
}

// Start builds Jaeger if it is not built yet, starts one for t, waits until
// its receivers and query API answer, and stops it when t ends. It fails t
// if Jaeger cannot be built or started.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	// A port is free a moment before Jaeger binds it; if another process
	// took it meanwhile, Jaeger exits at once, and another set is tried.
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		j, err := start(t, bin, dir, attempt)
		if err == nil {
			return j
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	t.Fatalf("jaegertest: %v", lastErr)
	return nil
}

var errPortTaken = errors.New("a port was taken before Jaeger bound it")

func start(t testing.TB, bin, dir string, attempt int) (*Jaeger, error) {
	var ports [3]string
	for i := range ports {
		p, err := localcluster.FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	j := &Jaeger{
		OTLPEndpoint:     "127.0.0.1:" + ports[0],
		OTLPHTTPEndpoint: "127.0.0.1:" + ports[1],
		QueryURL:         "http://127.0.0.1:" + ports[2],
		Log:              filepath.Join(dir, fmt.Sprintf("jaeger-%d.log", attempt)),
		client:           &http.Client{Timeout: 10 * time.Second},
	}
	config := filepath.Join(dir, fmt.Sprintf("config-%d.yaml", attempt))
	if err := os.WriteFile(config, []byte(configYAML(j.OTLPEndpoint, j.OTLPHTTPEndpoint, "127.0.0.1:"+ports[2])), 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(j.Log)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own copy
	cmd := exec.Command(bin, "--config", config)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}

	if err := j.waitReady(exited); err != nil {
		stop()
		out := tail(j.Log, 40)
		if strings.Contains(out, "address already in use") {
			return nil, fmt.Errorf("%w (%v); its log:\n%s", errPortTaken, err, out)
		}
		if waitErr != nil {
			err = fmt.Errorf("%w (%v)", err, waitErr)
		}
		return nil, fmt.Errorf("%w; its log (%s):\n%s", err, j.Log, out)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("jaegertest: the last lines of %s:\n%s", j.Log, tail(j.Log, 40))
		}
	})
	return j, nil
}

// configYAML is Jaeger's configuration (an OpenTelemetry Collector's):
// the OTLP receiver straight into in-memory storage (no batch processor,
// so that spans are stored as soon as they arrive), the query extension
// on that storage, and nothing else that listens: no health check,
// expvar, zpages, remote sampling or Prometheus metrics of its own,
// which the built-in all-in-one configuration puts on fixed ports. The
// query extension traces itself by default, to OTLP on localhost:4317,
// where another test's receiver (or a developer's Jaeger) may listen,
// and it waits 10 s at exit for that export to time out: enable_tracing
// is off.
func configYAML(otlpGRPC, otlpHTTP, query string) string {
	return `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: ` + strconv.Itoa(maxTraces) + `
  jaeger_query:
    enable_tracing: false
    storage:
      traces: memstore
    http:
      endpoint: ` + query + `
    grpc:
      endpoint: 127.0.0.1:0
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: ` + otlpGRPC + `
      http:
        endpoint: ` + otlpHTTP + `
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`
}

// waitReady waits until both receivers accept connections and the query
// API answers. The collector starts its extensions (the query API) first
// and its receivers last, after the storage exporter they feed.
func (j *Jaeger) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(startWait)
	for {
		err := j.ready()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("jaeger exited while starting")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jaeger not ready after %s: %w", startWait, err)
		}
	}
}

func (j *Jaeger) ready() error {
	for _, addr := range []string{j.OTLPEndpoint, j.OTLPHTTPEndpoint} {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		c.Close()
	}
	resp, err := j.client.Get(j.QueryURL + "/api/v3/services")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /api/v3/services: %s", resp.Status)
	}
	return nil
}

// binary returns Jaeger's binary, built by hack/tools/jaeger.sh into the
// per-user cache the first time (minutes), found there afterwards.
func binary(t testing.TB) string {
	t.Helper()
	return testcluster.ToolBinary(t, "jaeger.sh")
}

// tail returns the last lines of the file at path, or why it cannot.
func tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	parts := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
