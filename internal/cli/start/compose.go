package start

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/hook-operator/hook-operator/internal/election"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/manager"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/queue"
	"github.com/hook-operator/hook-operator/internal/shard"
)

// parts is what start builds from the flags and hands to the manager.
type parts struct {
	f           Flags
	hooks       []*hook.Hook
	load        hook.LoadOptions
	fingerprint string
	m           *metrics.Metrics
	cfg         *rest.Config
	clients     *kube.Clients
	dryRun      bool
	log         *logrus.Logger
	// id is this replica's name in the Lease and on the ring, with
	// leader election; namespace holds them.
	id, namespace string
	// members is the ring's membership, with --sharding, once joined.
	members *shard.Members
	// leaderSeen is the last other replica seen to lead, for a standby's
	// answer to `hook-operator trigger`.
	leaderSeen atomic.Value
}

// seenLeader returns the replica last seen to lead, or "".
func (p *parts) seenLeader() string {
	s, _ := p.leaderSeen.Load().(string)
	return s
}

// options are the operator's Options the flags give.
func (p *parts) options(env []string) operator.Options {
	f := p.f
	oneShotFill, residentFill := f.BatchFill.fills()
	return operator.Options{
		TmpDir:        f.TmpDir,
		HookTimeout:   f.HookTimeout,
		MaxHookOutput: int64(f.MaxHookOutput),
		Queue:         queue.Options{RetryInitial: f.RetryInitial, RetryMax: f.RetryMax, BatchWindow: f.BatchWindow.window(), AdaptiveBatch: f.BatchWindow.Auto, BatchFill: oneShotFill, ResidentBatchFill: residentFill, MaxParallel: f.MaxParallel},
		ShutdownGrace: f.ShutdownGrace,
		Env:           env,
		Metrics:       p.m,
		// A dry-run writes nothing, Events included.
		Events:           !p.dryRun,
		WatchIdleTimeout: f.WatchIdle,
		RestrictWrites:   f.RestrictWrites,
		Pod:              operator.PodRef{Namespace: os.Getenv("POD_NAMESPACE"), Name: os.Getenv("POD_NAME"), UID: os.Getenv("POD_UID")},
	}
}

// compose makes the operator and the manager that runs it, in the groups
// and order of docs/development.md: Always, the metrics and health server,
// the webhook server, ring membership, the hooks-folder watcher and the
// operator's queues and sharded hooks; Leading, the other hooks. With
// leader election the elector decides when the Leading group runs.
func (p *parts) compose(ctx context.Context, opts operator.Options) (*manager.Manager, error) {
	f := p.f
	mopts, err := p.election()
	if err != nil {
		return nil, err
	}
	mgr := manager.New(mopts)
	if f.elected() {
		opts.Identity, opts.Leading, opts.Leader = p.id, mgr.Leading, p.seenLeader
	}
	switch n := shardedHooks(p.hooks); {
	case f.Shard.Enabled:
		if n == 0 {
			p.log.Warn("--sharding, and no hook sets settings.sharded: every hook runs on the leader alone")
		}
		if err := p.joinRing(ctx); err != nil {
			return nil, err
		}
		opts.Sharding = &operator.Sharding{By: f.Shard.By, ServerSide: f.Shard.ServerSide, Members: p.members}
	case n > 0:
		p.log.WithField("hooks", n).Info("settings.sharded applies with --sharding only; every object goes to this replica's hooks")
	}
	op := operator.New(p.hooks, p.clients, opts, p.log)
	if f.MetricsSecure && f.ListenAddress == "" && f.HealthListenAddress == "" {
		return nil, errors.New("--metrics-secure needs a listener for /healthz and /readyz: set --health-listen-address (default :9116) or --listen-address, or drop --metrics-secure")
	}
	if f.ListenAddress != "" || f.HealthListenAddress != "" {
		mgr.Add(manager.Always, "server", &metricsServer{f: f, m: p.m, clients: p.clients, op: op, log: p.log, started: make(chan struct{})})
	}
	webhooks, err := webhookServer(f.Webhook, op, p.clients, p.dryRun, p.m.WebhookRejected, p.log)
	if err != nil {
		return nil, err
	}
	mgr.Add(manager.Always, "webhooks", webhooks)
	if p.members != nil {
		mgr.Add(manager.Always, "ring", ringMembership{p.members})
	}
	if f.Reload.Enabled {
		mgr.Add(manager.Always, "hooks-folder watcher", &folderWatcher{dir: f.HooksDir, since: p.fingerprint, flags: f.Reload,
			maxParallel: f.MaxParallel, load: p.load, op: op, m: p.m, log: p.log})
	}
	always, leading := op.Runnables()
	mgr.Add(manager.Always, "operator", always)
	if f.elected() {
		log := p.log.WithFields(logrus.Fields{"identity": p.id, "lease": p.namespace + "/" + f.Leader.LeaseName})
		mgr.Add(manager.Leading, "leader", &leaderMarker{id: p.id, m: p.m, log: log, started: make(chan struct{})})
	}
	mgr.Add(manager.Leading, "hooks", leading)
	return mgr, nil
}

// election sets up leader election, when the flags ask for it: this
// replica's identity, the namespace of the Leases, and the elector.
func (p *parts) election() (manager.Options, error) {
	f := p.f
	mopts := manager.Options{Log: p.log}
	if !f.elected() {
		return mopts, nil
	}
	p.namespace = operatorNamespace(f.Webhook.Namespace)
	if p.namespace == "" {
		flag := "--leader-elect keeps its Lease"
		if f.Shard.Enabled {
			flag = "--sharding keeps its membership Leases"
		}
		return mopts, fmt.Errorf("%s in the operator's namespace: set --operator-namespace (or run in a Pod)", flag)
	}
	p.id = f.Leader.identity()
	elector, err := p.elector()
	if err != nil {
		return mopts, err
	}
	mopts.Elector = elector
	p.m.Leader(p.id, false)
	return mopts, nil
}

// elector campaigns for the leader's Lease.
func (p *parts) elector() (*election.Elector, error) {
	f := p.f.Leader
	dyn, err := dynamic.NewForConfig(p.cfg)
	if err != nil {
		return nil, err
	}
	log := p.log.WithFields(logrus.Fields{"identity": p.id, "lease": p.namespace + "/" + f.LeaseName})
	return election.New(election.Config{
		Client: dyn.Resource(election.Leases).Namespace(p.namespace), Name: f.LeaseName, Identity: p.id,
		LeaseDuration: f.LeaseDuration, RenewDeadline: f.RenewDeadline, RetryPeriod: f.RetryPer, Standby: f.Standby, Log: log,
		OnNewLeader: func(leader string) {
			p.leaderSeen.Store(leader)
			log.WithField("leader", leader).Info("leader election: standby; another replica leads")
		},
	})
}
