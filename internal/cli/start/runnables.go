package start

import (
	"context"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/server"
	"github.com/hook-operator/hook-operator/internal/shard"
)

// The parts compose hands to the manager, besides the webhook server
// (webhook.Server) and the operator's two (operator.Runnables): each a
// manager.Runnable, and a manager.StartNotifier when it takes a while to
// come up.

// metricsServer serves /metrics, /healthz, /readyz and the debug routes
// (server.Start) until its context ends; it has started once it listens.
type metricsServer struct {
	f       Flags
	m       *metrics.Metrics
	clients *kube.Clients
	op      *operator.Operator
	log     logrus.FieldLogger
	started chan struct{}
}

// Started implements manager.StartNotifier.
func (s *metricsServer) Started() <-chan struct{} { return s.started }

// Start implements manager.Runnable.
func (s *metricsServer) Start(ctx context.Context) error {
	f := s.f.withHealthAddress()
	opts := server.Options{
		Address: f.ListenAddress, HealthAddress: f.HealthListenAddress, HealthOptional: f.healthDefault(), DebugSocket: f.DebugSocket, DebugSocketOptional: f.givenAs == nil || f.givenAs("debug-socket") == "", DebugOverHTTP: f.DebugHTTP,
		Metrics: s.m.Handler(), HookMetrics: s.m.HooksHandler(), Pprof: f.Pprof, MaxConns: f.ListenMaxConns,
	}
	if f.MetricsSecure {
		opts.Secure = &server.SecureMetrics{Address: f.MetricsSecureAddress, CertFile: f.MetricsCert, KeyFile: f.MetricsKey, Client: s.clients.Dynamic,
			Reviewed: s.m.MetricsReview}
	}
	addrs, err := server.Start(ctx, s.op, opts, s.log)
	if err != nil {
		return err
	}
	// The tests' harness and the bench find the listener by the first
	// "address" of the log; the probe listener's is healthAddress.
	fields := logrus.Fields{"debugSocket": f.DebugSocket}
	if addrs.Health != "" {
		fields["healthAddress"] = addrs.Health
	}
	switch {
	case addrs.Secure != "":
		s.log.WithField("address", addrs.Secure).Info("serving /metrics over HTTPS to callers with a token allowed to get it")
		if addrs.Listen != "" {
			fields["address"] = addrs.Listen
		}
		s.log.WithFields(fields).Info("serving /healthz and /readyz")
	case addrs.Listen != "":
		fields["address"] = addrs.Listen
		s.log.WithFields(fields).Info("serving /metrics, /healthz and /readyz")
	default:
		s.log.WithFields(fields).Info("serving /healthz and /readyz")
	}
	close(s.started)
	<-ctx.Done()
	return nil
}

// ringMembership keeps this replica on the sharding ring (shard.Members,
// already joined) until its context ends, and then leaves the ring. It is
// up as soon as it starts.
type ringMembership struct{ members *shard.Members }

// Start implements manager.Runnable.
func (r ringMembership) Start(ctx context.Context) error {
	r.members.Run(ctx) // leaves the ring when ctx ends
	return nil
}

// leaderMarker says, in the log and the leader metric, that this replica
// leads while the Leading group runs.
type leaderMarker struct {
	id      string
	m       *metrics.Metrics
	log     logrus.FieldLogger
	started chan struct{}
}

// Started implements manager.StartNotifier: it is closed once the log and
// the metric say that this replica leads.
func (l *leaderMarker) Started() <-chan struct{} { return l.started }

// Start implements manager.Runnable.
func (l *leaderMarker) Start(ctx context.Context) error {
	l.log.Info("leader election: leading; starting the hooks")
	l.m.Leader(l.id, true)
	close(l.started)
	<-ctx.Done()
	l.m.Leader(l.id, false)
	return nil
}
