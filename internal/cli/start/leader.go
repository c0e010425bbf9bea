package start

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/hook-operator/hook-operator/internal/election"
)

// LeaderFlags are the settings of leader election.
type LeaderFlags struct {
	Enabled, Standby                       bool
	LeaseName, Identity                    string
	LeaseDuration, RenewDeadline, RetryPer time.Duration
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
