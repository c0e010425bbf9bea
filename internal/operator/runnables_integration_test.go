package operator_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/manager"
	"github.com/hook-operator/hook-operator/internal/operator"
)

// elector is an Elector the test drives: it leads when lead is closed and
// loses the Lease when lose is closed.
type elector struct{ lead, lose chan struct{} }

func (e *elector) Run(ctx context.Context, lead func(leading context.Context)) {
	select {
	case <-e.lead:
	case <-ctx.Done():
		return
	}
	leading, cancel := context.WithCancel(ctx)
	defer cancel()
	go lead(leading)
	select {
	case <-ctx.Done():
	case <-e.lose:
	}
}

// The operator's runnables under a manager with an elector: a standby runs
// no hook and says so (role, readiness); once it leads, its hooks start
// with a Synchronization of what changed meanwhile; a lost Lease stops a
// running hook at once instead of after the grace period (10 minutes
// here), and Run returns manager.ErrLeaseLost.
func TestIntegrationHooksRunOnlyWhileLeading(t *testing.T) {
	e := newEnv(t)
	started := filepath.Join(t.TempDir(), "slow-started")
	e.bashHook("watch.sh", `{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["NAMESPACE"]}}}]}`,
		`if jq -e '.[] | select(.watchEvent == "Added" and .object.metadata.name == "slow")' "$BINDING_CONTEXT_PATH" >/dev/null; then touch `+started+`; sleep 600; fi`)
	hooks, err := hook.Load(context.Background(), e.dir, hook.LoadOptions{})
	must(t, err)
	clients, err := kube.NewClients(e.c.Config)
	must(t, err)
	log := logrus.New()
	log.SetOutput(e.logs)
	el := &elector{lead: make(chan struct{}), lose: make(chan struct{})}
	mgr := manager.New(manager.Options{Elector: el, Log: log})
	op := operator.New(hooks, clients, operator.Options{
		TmpDir: t.TempDir(), HookTimeout: time.Hour, ShutdownGrace: 10 * time.Minute, Env: os.Environ(),
		Identity: "a", Leading: mgr.Leading,
	}, log)
	always, leading := op.Runnables()
	mgr.Add(manager.Always, "operator", always)
	mgr.Add(manager.Leading, "hooks", leading)
	done := make(chan error, 1)
	go func() { done <- mgr.Run(context.Background()) }()
	defer func() {
		if t.Failed() {
			t.Logf("operator log:\n%s", e.logs.String())
		}
	}()

	e.eventually(30*time.Second, "a ready standby", func() bool {
		ready, _ := op.Ready(context.Background())
		return op.Role().Role == "standby" && ready
	})
	if r := op.Role(); r.Identity != "a" {
		t.Errorf("role %+v, want identity a", r)
	}
	cms := e.c.Client.CoreV1().ConfigMaps(e.ns)
	_, err = cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first"}}, metav1.CreateOptions{})
	must(t, err)

	close(el.lead)
	e.eventually(30*time.Second, "the leader's Synchronization", func() bool { return len(e.contexts("watch.sh")) > 0 })
	if got := describe(e.contexts("watch.sh")); got[0] != "cms:Synchronization" || strings.Contains(strings.Join(got, " "), "Added/first") {
		t.Errorf("contexts %v: want a Synchronization first, and no event of what was made while a standby", got)
	}
	if r := op.Role(); r.Role != "leader" {
		t.Errorf("role %+v once leading, want leader", r)
	}

	_, err = cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}, metav1.CreateOptions{})
	must(t, err)
	e.eventually(30*time.Second, "the slow run to start", func() bool { _, err := os.Stat(started); return err == nil })
	close(el.lose)
	select {
	case err := <-done:
		if !errors.Is(err, manager.ErrLeaseLost) {
			t.Errorf("Run: %v, want manager.ErrLeaseLost", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the running hook was not stopped at once after the Lease was lost (the grace period is 10 minutes)")
	}
}
