package kube_test

import (
	"context"
	"net/http/httptrace"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// Preconnect answers the API server's release and leaves a watch
// connection open: the first watch after it dials nothing. Without it, the
// first watch dials (the test's own check that it can fail).
func TestIntegrationPreconnectLeavesAWatchConnection(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	for _, pre := range []bool{true, false} {
		clients, err := kube.NewClients(c.Config)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if pre {
			v, err := clients.Preconnect(ctx)()
			if err != nil || v.Major != 1 || v.Minor < kube.OldestTested.Minor {
				t.Fatalf("Preconnect: release %s, %v; want a 1.x the tests run on", v, err)
			}
		}
		reused, got := false, false
		trace := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused, got = i.Reused, true }})
		w, err := clients.Watches.Get().AbsPath("/api/v1/namespaces", ns, "configmaps").
			VersionedParams(&metav1.ListOptions{Watch: true, TimeoutSeconds: ptr.To(int64(5))}, metav1.ParameterCodec).Watch(trace)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		w.Stop()
		cancel()
		if !got || reused != pre {
			t.Errorf("with Preconnect %v: the watch's connection was reused: %v (got one: %v); want %v", pre, reused, got, pre)
		}
	}
}
