package kube

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

const aggregatedType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// Aggregated discovery documents as a Kubernetes 1.36 API server serves
// them, cut down; metrics.k8s.io is an aggregated API that is down.
const aggregatedAPI = `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
 {"metadata":{},"versions":[{"version":"v1","resources":[
  {"resource":"pods","responseKind":{"group":"","version":"","kind":"Pod"},"scope":"Namespaced","singularResource":"pod","verbs":["get"],"shortNames":["po"],"categories":["all"],
   "subresources":[{"subresource":"status","responseKind":{"group":"","version":"","kind":"Pod"},"verbs":["get"]}]},
  {"resource":"namespaces","responseKind":{"group":"","version":"","kind":"Namespace"},"scope":"Cluster","singularResource":"namespace","verbs":["get"],"shortNames":["ns"]}],
  "freshness":"Current"}]}]}`

const aggregatedAPIs = `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
 {"metadata":{"name":"autoscaling"},"versions":[
  {"version":"v2","resources":[{"resource":"horizontalpodautoscalers","responseKind":{"group":"","version":"","kind":"HorizontalPodAutoscaler"},"scope":"Namespaced","singularResource":"horizontalpodautoscaler","verbs":["get"],"shortNames":["hpa"]}],"freshness":"Current"},
  {"version":"v1","resources":[{"resource":"horizontalpodautoscalers","responseKind":{"group":"","version":"","kind":"HorizontalPodAutoscaler"},"scope":"Namespaced","singularResource":"horizontalpodautoscaler","verbs":["get"],"shortNames":["hpa"]}],"freshness":"Current"}]},
 {"metadata":{"name":"metrics.k8s.io"},"versions":[{"version":"v1beta1","freshness":"Stale"}]},
 {"metadata":{"name":"acme.io"},"versions":[{"version":"v1","resources":[
  {"resource":"widgets","responseKind":{"group":"","version":"","kind":"Widget"},"scope":"Namespaced","singularResource":"widget","verbs":["get"]},
  {"resource":"kindless","scope":"Namespaced","singularResource":"kindless","verbs":["get"]}],"freshness":"Current"}]}]}`

// The same API in the legacy documents (what servers before aggregated
// discovery answer), with metrics.k8s.io failing.
var legacyDocs = map[string]string{
	"/api": `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`,
	"/apis": `{"kind":"APIGroupList","apiVersion":"v1","groups":[
	  {"name":"autoscaling","versions":[{"groupVersion":"autoscaling/v1","version":"v1"},{"groupVersion":"autoscaling/v2","version":"v2"}],"preferredVersion":{"groupVersion":"autoscaling/v2","version":"v2"}},
	  {"name":"metrics.k8s.io","versions":[{"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}},
	  {"name":"acme.io","versions":[{"groupVersion":"acme.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"acme.io/v1","version":"v1"}}]}`,
	"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[
	  {"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get"],"shortNames":["po"]},
	  {"name":"pods/status","singularName":"","namespaced":true,"kind":"Pod","verbs":["get"]},
	  {"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get"],"shortNames":["ns"]}]}`,
	"/apis/autoscaling/v2": `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"autoscaling/v2","resources":[
	  {"name":"horizontalpodautoscalers","singularName":"horizontalpodautoscaler","namespaced":true,"kind":"HorizontalPodAutoscaler","verbs":["get"],"shortNames":["hpa"]}]}`,
	"/apis/autoscaling/v1": `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"autoscaling/v1","resources":[
	  {"name":"horizontalpodautoscalers","singularName":"horizontalpodautoscaler","namespaced":true,"kind":"HorizontalPodAutoscaler","verbs":["get"],"shortNames":["hpa"]}]}`,
	"/apis/acme.io/v1": `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"acme.io/v1","resources":[
	  {"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":["get"]}]}`,
}

// fakeAPIServer serves discovery, aggregated or legacy, and records the
// paths asked for.
type fakeAPIServer struct {
	aggregated bool
	mu         sync.Mutex
	paths      []string
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.paths = append(f.paths, r.URL.Path)
	f.mu.Unlock()
	if f.aggregated && strings.Contains(r.Header.Get("Accept"), aggregatedType) {
		switch r.URL.Path {
		case "/api":
			w.Header().Set("Content-Type", aggregatedType)
			_, _ = w.Write([]byte(aggregatedAPI))
			return
		case "/apis":
			w.Header().Set("Content-Type", aggregatedType)
			_, _ = w.Write([]byte(aggregatedAPIs))
			return
		}
	}
	if r.URL.Path == "/apis/metrics.k8s.io/v1beta1" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"service unavailable","reason":"ServiceUnavailable","code":503}`))
		return
	}
	doc, ok := legacyDocs[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(doc))
}

func (f *fakeAPIServer) start(t *testing.T) rest.Interface {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := unversionedClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantDiscovered is what both kinds of discovery must find, in rank order;
// subresources and resources without a kind are left out.
var wantDiscovered = []*metav1.APIResourceList{
	list("v1", res("pods", "pod", "Pod", true, "po"), res("namespaces", "namespace", "Namespace", false, "ns")),
	list("autoscaling/v2", res("horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", true, "hpa")),
	list("autoscaling/v1", res("horizontalpodautoscalers", "horizontalpodautoscaler", "HorizontalPodAutoscaler", true, "hpa")),
	list("acme.io/v1", res("widgets", "widget", "Widget", true)),
}

// comparable keeps the fields discovery's two formats share.
func comparable(lists []*metav1.APIResourceList) []*metav1.APIResourceList {
	var out []*metav1.APIResourceList
	for _, l := range lists {
		c := &metav1.APIResourceList{GroupVersion: l.GroupVersion}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // legacy lists have subresources; kinds skips them
			}
			c.APIResources = append(c.APIResources, res(r.Name, r.SingularName, r.Kind, r.Namespaced, r.ShortNames...))
		}
		out = append(out, c)
	}
	return out
}

func TestDiscoverAggregated(t *testing.T) {
	f := &fakeAPIServer{aggregated: true}
	lists, unread, err := discover(context.Background(), f.start(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := comparable(lists); !reflect.DeepEqual(got, wantDiscovered) {
		t.Errorf("discovered\n%+v\nwant\n%+v", got, wantDiscovered)
	}
	var names []string
	for _, r := range lists[0].APIResources {
		names = append(names, r.Name)
	}
	// Of the subresources, status is listed, as legacy lists name it.
	if want := []string{"pods", "pods/status", "namespaces"}; !reflect.DeepEqual(names, want) {
		t.Errorf("core resources %v; want %v", names, want)
	}
	if len(unread) != 1 || !strings.Contains(unread[0], "metrics.k8s.io/v1beta1") || !strings.Contains(unread[0], "stale") {
		t.Errorf("unread %q; want metrics.k8s.io/v1beta1, stale", unread)
	}
	if !reflect.DeepEqual(f.paths, []string{"/api", "/apis"}) {
		t.Errorf("requests %v; want one each for /api and /apis", f.paths)
	}
}

func TestDiscoverLegacy(t *testing.T) {
	f := &fakeAPIServer{}
	lists, unread, err := discover(context.Background(), f.start(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := comparable(lists); !reflect.DeepEqual(got, wantDiscovered) {
		t.Errorf("discovered\n%+v\nwant\n%+v", got, wantDiscovered)
	}
	if len(unread) != 1 || !strings.Contains(unread[0], "metrics.k8s.io/v1beta1") || !strings.Contains(unread[0], "service unavailable") {
		t.Errorf("unread %q; want metrics.k8s.io/v1beta1 with the server's message", unread)
	}
	if len(f.paths) != 7 {
		t.Errorf("requests %v; want /api, /apis and one per group version (5)", f.paths)
	}
}

// A live resolver over either kind of discovery resolves the same.
func TestResolverOverDiscovery(t *testing.T) {
	for _, aggregated := range []bool{true, false} {
		c := (&fakeAPIServer{aggregated: aggregated}).start(t)
		r := newResolver(func() (*kinds, error) { return discoverKinds(c) })
		for _, tt := range []struct{ apiVersion, kind, want string }{
			{"", "po", "/v1, Resource=pods"},
			{"", "hpa", "autoscaling/v2, Resource=horizontalpodautoscalers"},
			{"autoscaling/v1", "hpa", "autoscaling/v1, Resource=horizontalpodautoscalers"},
			{"", "Widget", "acme.io/v1, Resource=widgets"},
		} {
			got, err := r.Resolve(tt.apiVersion, tt.kind)
			if err != nil || got.GVR.String() != tt.want {
				t.Errorf("aggregated %v: Resolve(%q, %q) = %v, %v; want %s", aggregated, tt.apiVersion, tt.kind, got, err, tt.want)
			}
		}
		_, err := r.Resolve("", "PodMetrics")
		if !errors.Is(err, ErrUnknownKind) || !strings.Contains(err.Error(), "metrics.k8s.io/v1beta1") {
			t.Errorf("aggregated %v: PodMetrics: %v; want ErrUnknownKind naming the unread metrics.k8s.io/v1beta1", aggregated, err)
		}
	}
}

func TestDiscoverErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: User \"x\" cannot get path \"/api\"","reason":"Forbidden","code":403}`))
	}))
	defer srv.Close()
	c, err := unversionedClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = discover(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "/api") || !strings.Contains(err.Error(), "cannot get path") {
		t.Errorf("forbidden discovery: %v; want the path and the server's message", err)
	}

	for _, body := range []string{`{"kind":"APIGroupList"}`, `not json`} {
		if _, _, err := parseAggregated([]byte(body)); err == nil {
			t.Errorf("parseAggregated(%s): no error", body)
		}
	}
	if !isAggregated(aggregatedType) || isAggregated("application/json") || isAggregated("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList") {
		t.Error("isAggregated does not tell the v2 document from others")
	}
}
