package start

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/election"
	"github.com/hook-operator/hook-operator/internal/hook"
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

// joinRing writes this replica's membership Lease and reads the ring, so
// that the sharded hooks start with this replica's share rather than with
// every object.
func (p *parts) joinRing(ctx context.Context) error {
	f := p.f
	dyn, err := dynamic.NewForConfig(p.cfg)
	if err != nil {
		return err
	}
	members, err := shard.NewMembers(shard.Config{
		Client: dyn.Resource(election.Leases).Namespace(p.namespace), Ring: f.Leader.LeaseName, Identity: p.id,
		LeaseDuration: f.Leader.LeaseDuration, RenewPeriod: renewPeriod(f.Leader.LeaseDuration),
		Log: p.log.WithField("identity", p.id),
	})
	if err != nil {
		return fmt.Errorf("--sharding: %w", err)
	}
	ring, err := members.Join(ctx)
	if err != nil {
		return err
	}
	p.members = members
	p.log.WithFields(logrus.Fields{"identity": p.id, "members": ring.Members(), "share": fmt.Sprintf("%.3f", ring.Share(p.id))}).Info("sharding: joined the ring")
	return nil
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
