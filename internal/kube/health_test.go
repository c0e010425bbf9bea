package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func refused() error {
	return fmt.Errorf("Get https://api: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
}

func TestUnreachable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{refused(), true},
		{apierrors.NewServiceUnavailable("etcd"), true},
		{apierrors.NewInternalError(errors.New("etcdserver: leader changed")), true},
		{apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x"), false},
		{apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("changed")), false},
		{errors.New("exit status 1"), false},
		{nil, false},
	} {
		if got := Unreachable(tc.err); got != tc.want {
			t.Errorf("Unreachable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestHealthOutage(t *testing.T) {
	var up atomic.Bool
	up.Store(true)
	probe := func(context.Context) error {
		if up.Load() {
			return nil
		}
		return errors.New("readyz: connection refused")
	}
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	h := newHealth(probe, 10*time.Millisecond, log)
	ctx := context.Background()

	// A failure that /readyz contradicts is the request's own.
	if h.Failed(ctx, refused()) {
		t.Fatal("an outage began while /readyz answers")
	}
	if h.Failed(ctx, errors.New("exit status 1")) {
		t.Fatal("an outage began on an error that does not say the server is away")
	}
	if n, down := h.State(); n != 0 || down {
		t.Fatalf("State = %d, %v; want no outage", n, down)
	}

	up.Store(false)
	if !h.Failed(ctx, refused()) {
		t.Fatal("no outage although /readyz fails")
	}
	if !h.Failed(ctx, apierrors.NewServiceUnavailable("etcd")) {
		t.Fatal("a second failure during the outage is not the outage's")
	}
	if n, down := h.State(); n != 1 || !down {
		t.Fatalf("State = %d, %v; want outage 1, going on", n, down)
	}
	back := h.Back()
	select {
	case <-back:
		t.Fatal("Back is closed during the outage")
	case <-time.After(50 * time.Millisecond):
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := h.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait during the outage = %v, want the context's error", err)
	}

	up.Store(true)
	select {
	case <-back:
	case <-time.After(5 * time.Second):
		t.Fatal("the outage did not end after /readyz answered")
	}
	if err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if n, down := h.State(); n != 1 || down {
		t.Fatalf("State = %d, %v; want 1 outage, over", n, down)
	}
}

func TestNilHealth(t *testing.T) {
	var h *Health
	if h.Failed(context.Background(), refused()) {
		t.Error("a nil Health reported an outage")
	}
	if err := h.Wait(context.Background()); err != nil {
		t.Error(err)
	}
	select {
	case <-h.Back():
	default:
		t.Error("a nil Health's Back is not closed")
	}
}
