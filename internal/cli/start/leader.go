package start

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	"github.com/hook-operator/hook-operator/internal/election"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/operator"
)

// LeaderFlags are the settings of leader election.
type LeaderFlags struct {
	Enabled                                bool
	LeaseName, Identity                    string
	LeaseDuration, RenewDeadline, RetryPer time.Duration
}

func bindLeaderFlags(fs *pflag.FlagSet, f *LeaderFlags) {
	fs.BoolVar(&f.Enabled, "leader-elect", false, "run hooks only while this replica holds the Lease --leader-elect-lease-name in --operator-namespace; standbys serve webhooks and wait")
	envflag.Bind(fs, "leader-elect", "HOOK_OPERATOR_LEADER_ELECT")
	fs.StringVar(&f.LeaseName, "leader-elect-lease-name", "hook-operator", "the Lease of leader election")
	envflag.Bind(fs, "leader-elect-lease-name", "HOOK_OPERATOR_LEADER_ELECT_LEASE_NAME")
	fs.StringVar(&f.Identity, "leader-elect-identity", "", "this replica's name in the Lease (default $POD_NAME, else the hostname and a random suffix)")
	envflag.Bind(fs, "leader-elect-identity", "HOOK_OPERATOR_LEADER_ELECT_IDENTITY")
	fs.DurationVar(&f.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long standbys wait after the last renewal before taking the Lease")
	envflag.Bind(fs, "leader-elect-lease-duration", "HOOK_OPERATOR_LEADER_ELECT_LEASE_DURATION")
	fs.DurationVar(&f.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew before it stops running hooks (less than the lease duration)")
	envflag.Bind(fs, "leader-elect-renew-deadline", "HOOK_OPERATOR_LEADER_ELECT_RENEW_DEADLINE")
	fs.DurationVar(&f.RetryPer, "leader-elect-retry-period", 2*time.Second, "how often the Lease is tried (renewed, or taken)")
	envflag.Bind(fs, "leader-elect-retry-period", "HOOK_OPERATOR_LEADER_ELECT_RETRY_PERIOD")
}

// identity is --leader-elect-identity, else $POD_NAME, else the hostname
// with a random suffix (two processes on one machine differ).
func (f LeaderFlags) identity() string {
	if f.Identity != "" {
		return f.Identity
	}
	if pod := os.Getenv("POD_NAME"); pod != "" {
		return pod
	}
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}

// check refuses timings under which two replicas could run hooks at once
// (election.Config.Check), naming the flags.
func (f LeaderFlags) check() error {
	c := election.Config{LeaseDuration: f.LeaseDuration, RenewDeadline: f.RenewDeadline, RetryPeriod: f.RetryPer}
	if err := c.Check(); err != nil {
		return fmt.Errorf("--leader-elect-retry-period %s, --leader-elect-renew-deadline %s, --leader-elect-lease-duration %s: %w", f.RetryPer, f.RenewDeadline, f.LeaseDuration, err)
	}
	return nil
}

// errLeaseLost ends a leader that could not renew its Lease: it stopped
// running hooks, and the process exits so that it starts again as a
// standby.
var errLeaseLost = errors.New("leader election: the Lease could not be renewed, so hooks were stopped; exiting to start again as a standby")

// runElected runs op only while this replica holds the Lease. A standby
// waits (the caller serves webhooks and probes meanwhile). When ctx ends
// (SIGTERM) the leader lets running hooks finish within the grace period
// and only then releases the Lease, so that a standby takes over at once
// and never while a hook of this replica still runs. A leader that cannot
// renew within the renew deadline stops its hooks at once, before the
// lease duration could hand the Lease to another replica.
func runElected(ctx context.Context, f LeaderFlags, namespace string, cfg *rest.Config, op *operator.Operator, m *metrics.Metrics, log logrus.FieldLogger, sharded bool) error {
	if namespace == "" {
		return fmt.Errorf("--leader-elect keeps its Lease in the operator's namespace: set --operator-namespace (or run in a Pod)")
	}
	if err := f.check(); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	id := f.identity()
	log = log.WithFields(logrus.Fields{"identity": id, "lease": namespace + "/" + f.LeaseName})
	op.SetIdentity(id)
	op.SetStandby(true)
	m.Leader(id, false)
	// The elector's context ends only after the hooks have stopped, so
	// that the Lease is released after them, not before.
	electCtx, stopElecting := context.WithCancel(context.Background())
	defer stopElecting()
	ran := make(chan error, 1)
	var started atomic.Bool
	// With sharding the operator runs from the start (its sharded hooks)
	// and leading starts the rest; without, it runs only while leading.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	run := func() {
		err := op.Run(runCtx)
		if err == nil && ctx.Err() == nil {
			err = errLeaseLost
		}
		ran <- err
		stopElecting()
	}
	if sharded {
		started.Store(true)
		go run()
	}
	lead := func(leading context.Context) {
		log.Info("leader election: leading; starting the hooks")
		op.SetStandby(false)
		m.Leader(id, true)
		defer m.Leader(id, false)
		go func() {
			select {
			case <-leading.Done():
				if ctx.Err() == nil {
					op.StopNow()
				}
				stopRun()
			case <-runCtx.Done():
			}
		}()
		if sharded {
			op.Lead()
			<-runCtx.Done()
			return
		}
		started.Store(true)
		run()
	}
	elector, err := election.New(election.Config{
		Client: dyn.Resource(election.Leases).Namespace(namespace), Name: f.LeaseName, Identity: id,
		LeaseDuration: f.LeaseDuration, RenewDeadline: f.RenewDeadline, RetryPeriod: f.RetryPer, Log: log,
		OnNewLeader: func(leader string) {
			log.WithField("leader", leader).Info("leader election: standby; another replica leads")
		},
	})
	if err != nil {
		return err
	}
	electorDone := make(chan struct{})
	go func() {
		elector.Run(electCtx, lead)
		close(electorDone)
	}()
	select {
	case err := <-ran:
		<-electorDone
		return err
	case <-ctx.Done():
		if !elector.Leading() && !started.Load() {
			stopElecting()
		}
	case <-electorDone:
	}
	// Whatever ended it: a run that started is waited for (its hooks stop
	// first), then the elector, which releases the Lease.
	<-electorDone
	if started.Load() {
		return <-ran
	}
	return nil
}
