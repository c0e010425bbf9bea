// Package kube builds the clients the runtime talks to the API server with,
// and resolves the kinds named in hook configurations and operations to API
// resources through discovery.
package kube

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"

	metainternalscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hook-operator/hook-operator/internal/buildinfo"
)

// Options select the cluster and the client's request rate.
type Options struct {
	// Kubeconfig is a kubeconfig file. Empty means $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster ServiceAccount.
	Kubeconfig string
	// Context selects a context of the kubeconfig; empty means its current one.
	Context string
	// Server, when set, replaces the API server's address that the
	// kubeconfig or the Pod gives (kubectl's --server).
	Server string
	// QPS and Burst limit the client's request rate (client-go's token
	// bucket); zero QPS keeps client-go's default (5). Unlimited lifts the
	// client-side limit: the API server's Priority and Fairness paces the
	// client, answering 429 with Retry-After, which client-go waits out.
	QPS       float32
	Burst     int
	Unlimited bool
}

// Clients are the API clients shared by every part of the runtime. There is
// no typed clientset: it would link every built-in API group into the binary
// (see docs/design/api-server.md, "Discovery, kind resolution and
// Events"); objects are read and written as unstructured.
type Clients struct {
	Config *rest.Config
	// Unversioned requests the API server's paths outside the API groups:
	// discovery (/api, /apis) and health (/readyz).
	Unversioned *rest.RESTClient
	// Watches opens watch streams (internal/watch) on connections of their
	// own: the same requests as Unversioned, over HTTP/1.1 (see
	// watchClient). internal/watch opens at most 16 watches at once this
	// way, the rest with Unversioned.
	Watches  *rest.RESTClient
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
	// Resolver maps the kinds hooks name to API resources.
	Resolver *Resolver

	// version is the API server's release, once ServerVersion has read it.
	version atomic.Pointer[Version]
}

// RESTConfig loads the client configuration that opts select.
func RESTConfig(opts Options) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if opts.Kubeconfig != "" {
		rules.ExplicitPath = opts.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: opts.Context}
	overrides.ClusterInfo.Server = opts.Server
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		if opts.Kubeconfig != "" {
			return nil, fmt.Errorf("kubeconfig %s: %w", opts.Kubeconfig, err)
		}
		return nil, fmt.Errorf("no cluster configured (set --kubeconfig or KUBECONFIG, or run in a Pod): %w", err)
	}
	if opts.QPS > 0 {
		cfg.QPS = opts.QPS
	}
	if opts.Unlimited {
		cfg.QPS = -1 // no token bucket (rest.RESTClientFor makes one for QPS > 0 only)
	}
	if opts.Burst > 0 {
		cfg.Burst = opts.Burst
	}
	cfg.UserAgent = "hook-operator/" + buildinfo.Version
	return cfg, nil
}

// NewClients builds every client from cfg.
func NewClients(cfg *rest.Config) (*Clients, error) {
	c := &Clients{Config: cfg}
	var err error
	if c.Unversioned, err = unversionedClient(cfg); err != nil {
		return nil, err
	}
	if c.Watches, err = watchClient(cfg); err != nil {
		return nil, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	c.Resolver = newResolver(func() (*kinds, error) { return discoverKinds(c.Unversioned) })
	return c, nil
}

// unversionedClient returns a JSON client for paths outside the API groups.
// Its codecs know only the meta types, enough to turn error responses into
// Status errors.
func unversionedClient(cfg *rest.Config) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.APIPath = ""
	c.GroupVersion = nil
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.NegotiatedSerializer = metainternalscheme.Codecs.WithoutConversion()
	return rest.UnversionedRESTClientFor(c)
}

// watchKeepAlive probes an idle watch connection: a peer that answers no
// probe for Idle plus Count intervals (30 s) ends it, as HTTP/2's pings
// (client-go's ReadIdleTimeout and PingTimeout: 45 s) end a dead shared
// connection. A live watch with no events is answered by the peer's
// kernel and stays.
var watchKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3}

// watchClient is unversionedClient over HTTP/1.1. Over HTTP/2 every watch
// shares one connection, whose read loop, a goroutine of its own, takes each
// frame, copies its data into the stream's buffer and wakes the watch's
// reader, and whose flow control has the client write a WINDOW_UPDATE for
// every few events read. Over HTTP/1.1 the watch's own goroutine reads its
// connection: a handoff, a copy and the writes fewer per event (measured in
// docs/design/api-server.md, "Watches over HTTP/1.1"). The cost is a TCP
// connection and a TLS handshake per watch (a watch the server ends after its
// timeout hands its connection to the next one), which is why internal/watch
// caps the watches it opens this way.
func watchClient(cfg *rest.Config) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.TLSClientConfig.NextProtos = []string{"http/1.1"}
	if c.Dial == nil {
		c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAliveConfig: watchKeepAlive}).DialContext
	}
	return unversionedClient(c)
}
