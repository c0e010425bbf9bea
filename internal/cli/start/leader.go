package start

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/hook-operator/hook-operator/internal/cli/envflag"
	"github.com/hook-operator/hook-operator/internal/election"
)

// LeaderFlags are the settings of leader election.
type LeaderFlags struct {
	Enabled, Standby                       bool
	LeaseName, Identity                    string
	LeaseDuration, RenewDeadline, RetryPer time.Duration
}

func bindLeaderFlags(fs *pflag.FlagSet, f *LeaderFlags) {
	fs.BoolVar(&f.Enabled, "leader-elect", false, "run hooks only while this replica holds the Lease; standbys serve webhooks and wait")
	envflag.Bind(fs, "leader-elect", "HOOK_OPERATOR_LEADER_ELECT")
	fs.BoolVar(&f.Standby, "leader-elect-standby", false, "never take the Lease: serve webhooks and, with --sharding, run sharded hooks only")
	envflag.Bind(fs, "leader-elect-standby", "HOOK_OPERATOR_LEADER_ELECT_STANDBY")
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
