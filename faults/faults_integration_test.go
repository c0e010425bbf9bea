package faults_test

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// The figures of the mirror scenario: 1,000 sources, then 300 updates and
// 200 deletes, half before the fault and half after.
const (
	sources = 1000
	updates = 300
	deletes = 200
)

// SIGKILL mid-churn, then a restart: the new process converges with
// nothing lost.
func TestIntegrationFaultOperatorKilled(t *testing.T) {
	c := testcluster.Get(t)
	e := newMirrorEnv(t, c, sources)
	op := startOperator(t, c.Kubeconfig, e.hooksDir)
	e.converge(90 * time.Second)

	e.churn(updates/2, deletes/2)
	op.kill(syscall.SIGKILL)
	e.churn(updates-updates/2, deletes-deletes/2)
	churned := time.Now()
	op = startOperator(t, c.Kubeconfig, e.hooksDir)
	done := e.converge(60 * time.Second)
	t.Logf("FIGURE killed: in step %.2fs after the churn ended (restarted at once)", done.Sub(churned).Seconds())
}

// The control plane stopped for 8 s mid-churn and started again: the
// operator keeps running, is not ready while the API server is away and
// ready after, and is in step soon after kube-apiserver answers again.
func TestIntegrationFaultControlPlaneStopped(t *testing.T) {
	own := testcluster.Owned(t, "hook-operator-faults")
	e := newMirrorEnv(t, own.Cluster, sources)
	op := startOperator(t, own.Kubeconfig, e.hooksDir)
	e.converge(90 * time.Second)
	eventually(t, 30*time.Second, "the operator to be ready", func() bool { return op.ready() == http.StatusOK })

	e.churn(updates/2, deletes/2)
	own.Stop(t)
	stopped := time.Now()
	eventually(t, 20*time.Second, "the operator to report not ready without the API server", func() bool {
		return op.ready() == http.StatusServiceUnavailable
	})
	time.Sleep(time.Until(stopped.Add(8 * time.Second)))
	own.Start(t)
	readyz := own.WaitReady(t, 60*time.Second)
	e.churn(updates-updates/2, deletes-deletes/2)
	churned := time.Now()
	done := e.converge(90 * time.Second)
	t.Logf("FIGURE control plane: in step %.2fs after /readyz answered (churn finished %.2fs after it), %.2fs after the churn",
		done.Sub(readyz).Seconds(), churned.Sub(readyz).Seconds(), done.Sub(churned).Seconds())
	eventually(t, 30*time.Second, "the operator to be ready again", func() bool { return op.ready() == http.StatusOK })
	select {
	case <-op.done:
		t.Fatalf("the operator exited while the control plane was away")
	default:
	}
}
