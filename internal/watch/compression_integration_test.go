package watch

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/localcluster"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// TestIntegrationStreamWatchUncompressed: the operator's streaming list
// and the watch it turns into come uncompressed, on a connection of the
// watch's own and on the shared one. From 1.37 on, where the API server
// gzips a streaming list for a client that accepts gzip
// (WatchListCompression), the same request with Go's default
// Accept-Encoding is checked to come compressed, so that the test fails
// if the operator's request stops opting out.
func TestIntegrationStreamWatchUncompressed(t *testing.T) {
	c, ns, _ := clusterStreams(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one"}, Data: map[string]string{"n": "one"}}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clients, err := kube.NewClients(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	sendInitial := true
	opts := metav1.ListOptions{SendInitialEvents: &sendInitial, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
	release := localRelease(t)
	streamingLists := streamingListsByDefault(t)

	// Go's transport asks for gzip by itself unless a request names an
	// encoding: this is what the operator's watch would get without its
	// Accept-Encoding.
	u := clients.Watches.Get().AbsPath("/api/v1/namespaces", ns, "configmaps").
		SpecificallyVersionedParams(&opts, parameterCodec, versionV1).Param("watch", "true").URL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := clients.Watches.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	compresses := release.Major > 1 || release.Minor >= 37
	if compresses && streamingLists && (resp.StatusCode != http.StatusOK || !resp.Uncompressed) {
		t.Fatalf("a streaming list asked for with Go's default Accept-Encoding on %d.%d: status %d, inflated by the transport %v; want 200 and gzip (WatchListCompression, beta and on from 1.37)", release.Major, release.Minor, resp.StatusCode, resp.Uncompressed)
	}

	for _, conn := range []struct {
		name string
		s    *streams
	}{
		{"own connection", newStreams(clients.Watches, clients.Unversioned, discardLog())},
		{"shared connection", newStreams(clients.Unversioned, clients.Unversioned, discardLog())},
	} {
		t.Run(conn.name, func(t *testing.T) {
			w, err := conn.s.watch(ctx, configMaps, ns, opts, streamHooks{})
			if err != nil && refusesStreamingList(err) && !streamingLists {
				t.Skipf("this release ships without streaming lists, so there is no streaming list to compress: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			sw := w.(*streamWatch)
			if sw.compressed {
				t.Error("the operator's streaming list came compressed, want it plain")
			}
			// The stream still decodes: the namespace's objects (ours, and
			// kube-root-ca.crt once it is there), then the bookmark.
			ours := false
			for e := range w.ResultChan() {
				if e.Type == watch.Bookmark {
					break
				}
				if e.Type != watch.Added {
					t.Fatalf("event %s %v before the bookmark, want ADDED", e.Type, e.Object)
				}
				if o, ok := e.Object.(interface{ GetName() string }); ok && o.GetName() == "one" {
					ours = true
				}
			}
			if !ours {
				t.Error("the initial events did not hold the ConfigMap one")
			}
		})
	}
}

// localRelease is the local cluster's Kubernetes release.
func localRelease(t *testing.T) kube.Version {
	t.Helper()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	v, err := localcluster.KubeVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	release, err := kube.ParseRelease(v)
	if err != nil {
		t.Fatalf("the local cluster's release: %v", err)
	}
	return release
}
