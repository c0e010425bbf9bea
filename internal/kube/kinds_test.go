package kube

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Unit tests of kind matching and ranking on hand-made lists, in the order
// discovery would serve them (the static resolver's tests cover the
// built-in resources).

func list(gv string, resources ...metav1.APIResource) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: resources}
}

func res(name, singular, kind string, namespaced bool, short ...string) metav1.APIResource {
	return metav1.APIResource{Name: name, SingularName: singular, Kind: kind, Namespaced: namespaced, ShortNames: short}
}

func lookup(t *testing.T, k *kinds, apiVersion, name string) (Resource, error) {
	t.Helper()
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		t.Fatal(err)
	}
	return k.lookup(gv, apiVersion == "", name)
}

func TestKindsLookup(t *testing.T) {
	k := newKinds([]*metav1.APIResourceList{
		// The core group is listed late on purpose: it ranks first anyway.
		list("acme.io/v2", res("widgets", "widget", "Widget", true, "wd")),
		list("acme.io/v1", res("widgets", "widget", "Widget", true, "wd"), res("gadgets", "gadget", "Gadget", false)),
		list("other.io/v1",
			res("widgets", "widget", "Widget", true),
			res("events", "event", "Event", true, "ev"),
			// A short name that is another resource's plural loses to it.
			res("sprockets", "sprocket", "Sprocket", true, "gadgets"),
			// No singular, as old servers serve: the kind still matches.
			res("oldthings", "", "OldThing", false)),
		list("v1",
			res("events", "event", "Event", true, "ev"),
			res("pods", "pod", "Pod", true, "po"),
			res("pods/status", "pod", "Pod", true)),
	}, nil)
	tests := []struct {
		apiVersion, name string
		want             string // GVR, or "unknown"
		kind             string
		namespaced       bool
	}{
		{"", "Pod", "/v1, Resource=pods", "Pod", true},
		{"", "POD", "/v1, Resource=pods", "Pod", true},
		{"", "pods", "/v1, Resource=pods", "Pod", true},
		{"", "pod", "/v1, Resource=pods", "Pod", true},
		{"", "Po", "/v1, Resource=pods", "Pod", true},
		{"v1", "pods", "/v1, Resource=pods", "Pod", true},
		// Subresources are not kinds.
		{"", "pods/status", "unknown", "", false},
		// The core group wins a name other groups serve too, by any name.
		{"", "Event", "/v1, Resource=events", "Event", true},
		{"", "ev", "/v1, Resource=events", "Event", true},
		{"other.io/v1", "ev", "other.io/v1, Resource=events", "Event", true},
		// Then the group listed first, at its preferred (first) version.
		{"", "Widget", "acme.io/v2, Resource=widgets", "Widget", true},
		{"", "wd", "acme.io/v2, Resource=widgets", "Widget", true},
		{"acme.io/v1", "widgets", "acme.io/v1, Resource=widgets", "Widget", true},
		{"acme.io/v1", "wd", "acme.io/v1, Resource=widgets", "Widget", true},
		{"other.io/v1", "Widget", "other.io/v1, Resource=widgets", "Widget", true},
		// A group without a version: its preferred version that has it.
		{"acme.io/", "Widget", "acme.io/v2, Resource=widgets", "Widget", true},
		{"acme.io/", "gadget", "acme.io/v1, Resource=gadgets", "Gadget", false},
		// A resource only in a later version.
		{"", "Gadget", "acme.io/v1, Resource=gadgets", "Gadget", false},
		{"", "gadgets", "acme.io/v1, Resource=gadgets", "Gadget", false},
		{"", "oldthing", "other.io/v1, Resource=oldthings", "OldThing", false},
		// "v1" is the core group, not any group's v1.
		{"v1", "Widget", "unknown", "", false},
		{"acme.io/v2", "Gadget", "unknown", "", false},
		{"acme.io/v1", "Pod", "unknown", "", false},
		{"nosuch.io/v1", "Widget", "unknown", "", false},
		{"", "PodList", "unknown", "", false},
		{"", "sprocket", "other.io/v1, Resource=sprockets", "Sprocket", true},
	}
	for _, tt := range tests {
		got, err := lookup(t, k, tt.apiVersion, tt.name)
		if tt.want == "unknown" {
			if !errors.Is(err, ErrUnknownKind) {
				t.Errorf("lookup(%q, %q) = %v, %v; want ErrUnknownKind", tt.apiVersion, tt.name, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("lookup(%q, %q): %v", tt.apiVersion, tt.name, err)
			continue
		}
		if got.GVR.String() != tt.want || got.GVK.Kind != tt.kind || got.GVK.GroupVersion() != got.GVR.GroupVersion() || got.Namespaced != tt.namespaced {
			t.Errorf("lookup(%q, %q) = %s kind %s namespaced %v; want %s %s %v",
				tt.apiVersion, tt.name, got.GVR, got.GVK, got.Namespaced, tt.want, tt.kind, tt.namespaced)
		}
	}
}

func TestKindsAmbiguous(t *testing.T) {
	k := newKinds([]*metav1.APIResourceList{
		list("acme.io/v1", res("things", "thing", "Thing", true), res("stuffs", "thing", "Stuff", true)),
	}, nil)
	_, err := lookup(t, k, "", "thing")
	if err == nil || errors.Is(err, ErrUnknownKind) || !strings.Contains(err.Error(), "plural") {
		t.Errorf("a name two resources of one version share: want an error asking for the plural, got %v", err)
	}
	if r, err := lookup(t, k, "", "stuffs"); err != nil || r.GVK.Kind != "Stuff" {
		t.Errorf("the plural of one of them: %v, %v", r, err)
	}
}

func TestKindsUnread(t *testing.T) {
	k := newKinds([]*metav1.APIResourceList{list("v1", res("pods", "pod", "Pod", true))}, []string{"metrics.k8s.io/v1beta1 (stale)"})
	_, err := lookup(t, k, "", "PodMetrics")
	if !errors.Is(err, ErrUnknownKind) || !strings.Contains(err.Error(), "metrics.k8s.io/v1beta1") {
		t.Errorf("unknown kind while a group version is unread: %v; want ErrUnknownKind naming the group version", err)
	}
}

func TestKindsMalformedLists(t *testing.T) {
	k := newKinds([]*metav1.APIResourceList{
		list("a/b/c", res("widgets", "widget", "Widget", true)),
		list("acme.io/", res("widgets", "widget", "Widget", true)),
		list("v1", res("", "", "Nameless", true), res("kindless", "", "", true)),
	}, nil)
	for _, name := range []string{"Widget", "Nameless", "kindless"} {
		if _, err := lookup(t, k, "", name); !errors.Is(err, ErrUnknownKind) {
			t.Errorf("%s from a malformed list or resource: want ErrUnknownKind, got %v", name, err)
		}
	}
}

// countingLoad serves lists as a load function and counts its calls.
type countingLoad struct {
	calls int
	lists []*metav1.APIResourceList
	err   error
}

func (c *countingLoad) load() (*kinds, error) {
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	return newKinds(c.lists, nil), nil
}

func TestResolverRefresh(t *testing.T) {
	src := &countingLoad{lists: []*metav1.APIResourceList{list("v1", res("pods", "pod", "Pod", true))}}
	r := newResolver(src.load)
	r.minRefresh = time.Hour
	for range 3 {
		if _, err := r.Resolve("", "Pod"); err != nil {
			t.Fatal(err)
		}
	}
	if src.calls != 1 {
		t.Errorf("discovery read %d times for known kinds; want once", src.calls)
	}

	// An unknown kind reads discovery again once, and not again within
	// minRefresh.
	src.lists = append(src.lists, list("acme.io/v1", res("widgets", "widget", "Widget", true)))
	if got, err := r.Resolve("", "Widget"); err != nil || got.GVR.Resource != "widgets" {
		t.Fatalf("Widget after it appeared: %v, %v", got, err)
	}
	if src.calls != 2 {
		t.Errorf("discovery read %d times; want 2", src.calls)
	}
	for range 3 {
		if _, err := r.Resolve("", "Gizmo"); !errors.Is(err, ErrUnknownKind) {
			t.Fatalf("Gizmo: want ErrUnknownKind, got %v", err)
		}
	}
	if src.calls != 2 {
		t.Errorf("unknown kinds within minRefresh read discovery %d times; want 2 in all", src.calls)
	}

	// Refresh makes the next Resolve read it, whatever minRefresh says.
	r.Refresh()
	if _, err := r.Resolve("", "Pod"); err != nil || src.calls != 3 {
		t.Errorf("after Refresh: %v, %d reads; want 3", err, src.calls)
	}
}

func TestResolverLoadError(t *testing.T) {
	src := &countingLoad{err: errors.New("connection refused")}
	r := newResolver(src.load)
	_, err := r.Resolve("apps/v1", "Deployment")
	if err == nil || errors.Is(err, ErrUnknownKind) || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "apps/v1 Deployment") {
		t.Errorf("failed discovery: %v; want its error, naming the kind, and not ErrUnknownKind", err)
	}
	// A failed read is not kept: the next Resolve tries again.
	src.err = nil
	src.lists = []*metav1.APIResourceList{list("apps/v1", res("deployments", "deployment", "Deployment", true))}
	if _, err := r.Resolve("apps/v1", "Deployment"); err != nil {
		t.Errorf("after discovery recovered: %v", err)
	}
	if _, err := r.Resolve("", " "); err == nil || errors.Is(err, ErrUnknownKind) {
		t.Errorf("empty kind: %v", err)
	}
	if _, err := r.Resolve("a/b/c", "Pod"); err == nil || errors.Is(err, ErrUnknownKind) {
		t.Errorf("malformed apiVersion: %v", err)
	}
}

// A kind missing from a group/version that is served gets an error naming
// what that group/version serves, with the nearest kind as a did-you-mean;
// a group/version that is not served at all, or not read, gets the plain
// unknown kind (its CRD may come later).
func TestKindsMissingFromServedGroupVersion(t *testing.T) {
	k := newKinds([]*metav1.APIResourceList{
		list("v1", res("pods", "pod", "Pod", true)),
		list("hello.example.com/v1", res("greetings", "greeting", "Greeting", true), res("farewells", "farewell", "Farewell", true)),
	}, []string{"later.io/v1 (stale: its API server did not answer discovery)"})
	_, err := lookup(t, k, "hello.example.com/v1", "Greting")
	var missing *MissingKindError
	if !errors.As(err, &missing) || !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("Greting in a served group/version: %v; want a MissingKindError that is an ErrUnknownKind", err)
	}
	if missing.DidYouMean() != "Greeting" || !strings.Contains(err.Error(), `did you mean "Greeting"?`) || !strings.Contains(err.Error(), "Farewell, Greeting") {
		t.Errorf("Greting: %v; want the served kinds and did you mean \"Greeting\"", err)
	}
	_, err = lookup(t, k, "hello.example.com/v1", "Salutation")
	if !errors.As(err, &missing) || missing.DidYouMean() != "" || !strings.Contains(err.Error(), "install its CRD") {
		t.Errorf("a kind far from every served one: %v; want a MissingKindError without a did-you-mean", err)
	}
	for _, apiVersion := range []string{"hello.example.com/v2", "nosuch.io/v1", "later.io/v1", ""} {
		_, err := lookup(t, k, apiVersion, "Greting")
		if !errors.Is(err, ErrUnknownKind) || errors.As(err, &missing) {
			t.Errorf("%q Greting: %v; want a plain unknown kind (its group/version is not served or not read)", apiVersion, err)
		}
	}
}
