package testoperator_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

// The shipped hello hook, run by the real binary: it greets a labelled
// ConfigMap, and its own annotation does not make it run again.
func TestIntegrationHelloHook(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	tmp := t.TempDir()
	op := testoperator.Start(t, c, testoperator.Hooks(t, "hello"), "HOOK_OPERATOR_TMP_DIR="+tmp)
	const hook = "hello/greet-configmaps.sh"
	testoperator.Eventually(t, 30*time.Second, "the Synchronization run", func(context.Context) (bool, error) {
		return op.Runs(hook) >= 1, nil
	})
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns, Labels: map[string]string{"hook-operator.dev/hello": "true"}},
		Data:       map[string]string{"name": "tests"},
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testoperator.Eventually(t, 30*time.Second, "the greeting", func(ctx context.Context) (bool, error) {
		got, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "hello", metav1.GetOptions{})
		return err == nil && got.Annotations["hook-operator.dev/greeting"] == "hello, tests", err
	})
	op.WaitQuiet(t, 2*time.Second, 30*time.Second)
	runs := op.Runs(hook)
	time.Sleep(3 * time.Second)
	if op.Runs(hook) != runs || op.Failures(hook) != 0 {
		t.Errorf("runs went from %d to %d while nothing changed (failures %d)", runs, op.Runs(hook), op.Failures(hook))
	}
	// The runs' temp dir is kept between runs, without the binding
	// contexts, and removed when the operator stops.
	kept, _ := filepath.Glob(filepath.Join(tmp, "*"))
	if len(kept) != 1 {
		t.Errorf("between runs %s holds %v, want the one run dir kept", tmp, kept)
	}
	for _, d := range kept {
		if _, err := os.Stat(filepath.Join(d, "binding-context.json")); !os.IsNotExist(err) {
			t.Errorf("the kept dir %s holds binding contexts between runs (%v)", d, err)
		}
	}
	op.Stop(t)
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("after the operator stopped, %s holds %v", tmp, left)
	}
}
