package operator_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/finalizer"
	"github.com/hook-operator/hook-operator/internal/metrics"
	"github.com/hook-operator/hook-operator/internal/operator"
	"github.com/hook-operator/hook-operator/internal/ops"
)

// panicValue is what panicOnce panics with: it must reach the log only,
// never an Event.
const panicValue = "sink bug with data-7f3a"

// panicOnce is a Sink that panics in its first Apply, as a bug reached by
// what a hook wrote would, then keeps the operations it is given.
type panicOnce struct {
	mu       sync.Mutex
	panicked bool
	applied  int
}

func (s *panicOnce) Apply(_ context.Context, _ string, operations []ops.Operation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.panicked {
		s.panicked = true
		panic(panicValue)
	}
	s.applied += len(operations)
	return nil
}

func (s *panicOnce) appliedOps() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}
func (s *panicOnce) EnsureFinalizer(finalizer.Target)                        {}
func (s *panicOnce) RemoveFinalizer(context.Context, finalizer.Target) error { return nil }

// A panic while a queued run's operations are applied, on the live
// operator, fails that run alone: the operator goes on, the run's object
// gets a HookFailed Event that says the operator failed (not the panic's
// value), and the run is retried with backoff like any failed run, and
// then applies. The panic is counted.
func TestIntegrationPanicInARunIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.events = true
	sink := &panicOnce{}
	e.sink, e.metrics = sink, metrics.New(metrics.DefaultPrefix)
	e.bashHook("writer.sh", cmsConfig(""), `jq -e 'any(.[]; .type == "Event")' "$BINDING_CONTEXT_PATH" >/dev/null || exit 0
echo '{"operation": "Delete", "kind": "ConfigMap", "namespace": "elsewhere", "name": "x"}' >"$KUBERNETES_PATCH_PATH"`)
	e.start()
	e.eventually(30*time.Second, "the Synchronization run", func() bool { return len(e.runs("writer.sh")) == 1 })
	ctx := context.Background()
	_, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	must(t, err)

	e.eventually(30*time.Second, "the retried run applies its operation", func() bool { return sink.appliedOps() == 1 })
	if n := len(e.runs("writer.sh")); n != 3 {
		t.Errorf("the hook ran %d times; want 3: the Synchronization, the run whose Sink panicked, and its retry", n)
	}
	var b strings.Builder
	must(t, metrics.WriteText(&b, e.metrics.Gather()))
	if want := metrics.DefaultPrefix + `panics_recovered_total{where="run"} 1` + "\n"; !strings.Contains(b.String(), want) {
		t.Errorf("metrics lack %q:\n%s", want, b.String())
	}
	msg := e.eventMessage("cm", operator.EventReason)
	if !strings.Contains(msg, "a recovered panic") || strings.Contains(msg, panicValue) {
		t.Errorf("the Event's message %q; want it to say the operator failed, without the panic's value", msg)
	}
	select {
	case err := <-e.finished:
		t.Fatalf("the operator stopped after the panic: %v", err)
	default:
	}
}
