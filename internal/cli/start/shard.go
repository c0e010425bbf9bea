package start

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	"github.com/hook-operator/hook-operator/internal/election"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/shard"
)

// ShardFlags are the settings of sharding across replicas.
type ShardFlags struct {
	Enabled bool
	By      string
	// ServerSide asks API servers that filter by shard for this replica's
	// share only.
	ServerSide bool
}

func bindShardFlags(fs *pflag.FlagSet, f *ShardFlags) {
	fs.BoolVar(&f.Enabled, "sharding", false, "spread the objects of hooks with settings.sharded across the replicas, each holding a membership Lease in --operator-namespace; the other hooks run on the elected leader (implies --leader-elect)")
	envflag.Bind(fs, "sharding", "HOOK_OPERATOR_SHARDING")
	fs.StringVar(&f.By, "shard-by", shard.ByUID, "what decides an object's replica with --sharding: uid (objects spread evenly) or namespace (a namespace's objects stay together)")
	envflag.Bind(fs, "shard-by", "HOOK_OPERATOR_SHARD_BY")
	fs.BoolVar(&f.ServerSide, "shard-server-side", true, "with --sharding, list and watch only this replica's share where the API server filters by shard (Kubernetes' alpha ShardedListAndWatch, asked once per resource); false keeps every object in memory and filters on this side")
	envflag.Bind(fs, "shard-server-side", "HOOK_OPERATOR_SHARD_SERVER_SIDE")
}

func (f ShardFlags) check() error {
	if f.By != shard.ByUID && f.By != shard.ByNamespace {
		return fmt.Errorf("--shard-by=%s: use uid or namespace", f.By)
	}
	return nil
}

// renewPeriod is how often a member renews its membership Lease: three
// times per lease duration, so that one or two lost renewals do not drop
// it off the ring.
func renewPeriod(lease time.Duration) time.Duration { return lease / 3 }

// sharding is a replica's part in the ring.
type sharding struct {
	members    *shard.Members
	by         string
	serverSide bool
}

// selector is id's share of r as a shardSelector, or "" when the API
// server is not to be asked for shares.
func (s *sharding) selector(r *shard.Ring, id string) string {
	if !s.serverSide {
		return ""
	}
	return r.Selector(shard.Field(s.by), id)
}

// joinRing writes this replica's membership Lease and reads the ring, so
// that the sharded hooks start with this replica's share rather than with
// every object.
func joinRing(ctx context.Context, f Flags, namespace string, cfg *rest.Config, m *metrics.Metrics, log logrus.FieldLogger) (*sharding, *operator.Sharding, error) {
	if namespace == "" {
		return nil, nil, errors.New("--sharding keeps its membership Leases in the operator's namespace: set --operator-namespace (or run in a Pod)")
	}
	if err := f.Shard.check(); err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	id := f.Leader.identity()
	s := &sharding{by: f.Shard.By, serverSide: f.Shard.ServerSide}
	s.members, err = shard.NewMembers(shard.Config{
		Client: dyn.Resource(election.Leases).Namespace(namespace), Ring: f.Leader.LeaseName, Identity: id,
		LeaseDuration: f.Leader.LeaseDuration, RenewPeriod: renewPeriod(f.Leader.LeaseDuration),
		Log: log.WithField("identity", id),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("--sharding: %w", err)
	}
	ring, err := s.members.Join(ctx)
	if err != nil {
		return nil, nil, err
	}
	m.Ring(id, ring.Members(), ring.Share)
	log.WithFields(logrus.Fields{"identity": id, "members": ring.Members(), "share": fmt.Sprintf("%.3f", ring.Share(id))}).Info("sharding: joined the ring")
	return s, &operator.Sharding{By: f.Shard.By, Owns: ring.Owns(id), Selector: s.selector(ring, id), Ring: s.describe}, nil
}

// describe is the ring as operator.RoleState shows it.
func (s *sharding) describe() operator.RingMembers {
	r := s.members.Ring()
	out := operator.RingMembers{ShardBy: s.by, Members: []operator.RingMember{}}
	for _, id := range r.Members() {
		out.Members = append(out.Members, operator.RingMember{Identity: id, Share: r.Share(id)})
	}
	return out
}

// runSharded runs op's sharded hooks at once, on this replica's share,
// and its other hooks only while this replica leads (see runElected). A
// change of the ring gives each sharded binding a Synchronization of its
// new share. When ctx ends, running hooks finish within the grace period;
// then the replica leaves the ring (the others take its share at once)
// and releases the leader's Lease.
func runSharded(ctx context.Context, f LeaderFlags, s *sharding, namespace string, cfg *rest.Config, op *operator.Operator, m *metrics.Metrics, log logrus.FieldLogger) error {
	id := s.members.Identity()
	s.members.OnChange(func(r *shard.Ring) {
		m.Ring(id, r.Members(), r.Share)
		op.Reshard(r.Owns(id), s.selector(r, id))
	})
	ringCtx, leaveRing := context.WithCancel(context.Background())
	ringDone := make(chan struct{})
	go func() {
		s.members.Run(ringCtx)
		close(ringDone)
	}()
	defer func() {
		leaveRing()
		<-ringDone
	}()
	return runElected(ctx, f, namespace, cfg, op, m, log, true)
}

// shardedHooks counts the hooks with settings.sharded.
func shardedHooks(hooks []*hook.Hook) int {
	n := 0
	for _, h := range hooks {
		if h.Config.Settings.Sharded {
			n++
		}
	}
	return n
}
