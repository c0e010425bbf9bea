package watch

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/hook-operator/hook-operator/internal/kube"
	"github.com/hook-operator/hook-operator/internal/poll"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestIntegrationStreamWatch runs the watch requests informers make against
// the API server (on a release that ships with streaming lists; on 1.31 and
// 1.33, make test-matrix, it checks that the refusal is recognised): the streamed start-up list (sendInitialEvents) with its
// closing bookmark, then a live change, and the errors the reflector must
// be able to tell apart; objects decoded whole, and lean (only .data and
// the metadata the runtime reads).
func TestIntegrationStreamWatch(t *testing.T) {
	t.Run("whole", func(t *testing.T) { testStreamWatch(t, nil) })
	t.Run("lean", func(t *testing.T) { testStreamWatch(t, leanKeep{"data": true}) })
}

func testStreamWatch(t *testing.T, lean leanKeep) {
	c, ns, s := clusterStreams(t)
	ctx := context.Background()
	for _, name := range []string{"one", "two"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pick": name}}, Data: map[string]string{"n": name}}
		if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	sendInitial := true
	w, err := s.watch(ctx, configMaps, ns, metav1.ListOptions{
		LabelSelector:        "pick=two",
		SendInitialEvents:    &sendInitial,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	}, streamHooks{lean: lean})
	if err != nil && refusesStreamingList(err) && !streamingListsByDefault(t) {
		// TestIntegrationWithoutStreamingLists tests what informers do then.
		t.Skipf("this Kubernetes release ships without streaming lists (the WatchList gate is off by default), and its API server refuses them as expected: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func() watch.Event {
		t.Helper()
		e, ok := <-w.ResultChan()
		if !ok {
			t.Fatal("the watch ended early")
		}
		return e
	}
	e := next()
	if u, ok := e.Object.(*unstructured.Unstructured); e.Type != watch.Added || !ok || u.GetName() != "two" {
		t.Fatalf("first event %s %v, want ADDED two (the label selector leaves out one)", e.Type, e.Object)
	}
	u := e.Object.(*unstructured.Unstructured)
	_, hasCreated := u.Object["metadata"].(map[string]any)["creationTimestamp"]
	if u.GetNamespace() != ns || u.GetUID() == "" || u.GetResourceVersion() == "" || u.Object["data"].(map[string]any)["n"] != "two" ||
		hasCreated != (lean == nil) {
		t.Errorf("object decoded (lean %v): %v", lean != nil, u.Object)
	}
	for {
		e = next()
		if e.Type == watch.Bookmark {
			break
		}
		t.Fatalf("event %s before the initial-events bookmark", e.Type)
	}
	if e.Object.(*unstructured.Unstructured).GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		t.Errorf("bookmark without %s: %v", metav1.InitialEventsAnnotationKey, e.Object)
	}

	cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "two", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["n"] = "2"
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		e = next()
		if e.Type == watch.Bookmark {
			continue
		}
		u, _ := e.Object.(*unstructured.Unstructured)
		if e.Type != watch.Modified || u == nil || u.Object["data"].(map[string]any)["n"] != "2" {
			t.Fatalf("event %s %v, want MODIFIED two with n=2", e.Type, e.Object)
		}
		break
	}

	// Errors come back as the API's Status errors.
	_, err = s.watch(ctx, configMaps, ns, metav1.ListOptions{LabelSelector: "pick in in"}, streamHooks{})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("bad label selector: %v, want a BadRequest Status error", err)
	}
	_, err = s.watch(ctx, schema.GroupVersionResource{Group: "example.invalid", Version: "v1", Resource: "things"}, "", metav1.ListOptions{}, streamHooks{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("unserved resource: %v, want NotFound", err)
	}
}

// streamingListsByDefault reports whether the local cluster's Kubernetes
// release turns its WatchList gate on by default: 1.32, and 1.34 on.
func streamingListsByDefault(t *testing.T) bool {
	t.Helper()
	release := localRelease(t)
	return release.Major > 1 || release.Minor == 32 || release.Minor >= 34
}

// TestIntegrationStreamsOwnConnections: the first ownConnections watches
// open at once have a connection of their own (HTTP/1.1); the next goes
// over the shared connection (HTTP/2), and once one of the first has
// ended, its place goes to the next watch opened. Watches that fail to
// open hold no place.
func TestIntegrationStreamsOwnConnections(t *testing.T) {
	_, ns, s := clusterStreams(t)
	ctx := context.Background()
	open := func() *streamWatch {
		t.Helper()
		w, err := s.watch(ctx, configMaps, ns, metav1.ListOptions{}, streamHooks{})
		if err != nil {
			t.Fatal(err)
		}
		return w.(*streamWatch)
	}
	for range 3 { // refused by the server: no place kept
		if _, err := s.watch(ctx, configMaps, ns, metav1.ListOptions{LabelSelector: "pick in in"}, streamHooks{}); !apierrors.IsBadRequest(err) {
			t.Fatalf("bad label selector: %v, want a BadRequest Status error", err)
		}
	}
	var own []*streamWatch
	for i := range ownConnections {
		w := open()
		defer w.Stop()
		if w.proto != "HTTP/1.1" {
			t.Fatalf("watch %d of %d went over %s; want a connection of its own (HTTP/1.1)", i+1, ownConnections, w.proto)
		}
		own = append(own, w)
	}
	extra := open()
	defer extra.Stop()
	if extra.proto != "HTTP/2.0" {
		t.Fatalf("watch %d went over %s; want the shared connection (HTTP/2.0)", ownConnections+1, extra.proto)
	}
	own[0].Stop()
	for range own[0].ResultChan() { // drained: the stream has ended
	}
	poll.UntilShowing(t, 10*time.Second, "a watch's own connection to go with it", func() bool { return s.owned.Load() < ownConnections },
		func() string {
			return fmt.Sprintf("%d watches still hold a connection of their own after one ended", s.owned.Load())
		})
	if w := open(); w.proto != "HTTP/1.1" {
		t.Errorf("a watch opened after one of its own ended went over %s; want HTTP/1.1", w.proto)
	} else {
		w.Stop()
	}
}

// clusterStreams returns the local cluster, a namespace of t's in it, and
// a watch opener with the operator's clients of it.
func clusterStreams(t *testing.T) (*testcluster.Cluster, string, *streams) {
	t.Helper()
	c := testcluster.Get(t)
	clients, err := kube.NewClients(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c, c.Namespace(t), newStreams(clients.Watches, clients.Unversioned, discardLog())
}
