package kube

import (
	"errors"
	"fmt"
	"net/http"
	"sort"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/rest"
)

// NewStaticResolver returns a resolver that knows exactly the resources of
// lists and never talks to a cluster, for offline commands (replay, hook
// tests). Give it BuiltinResources(), merged with ResourcesFromCRD's lists
// for custom kinds. It resolves like a live cluster would: groups rank in
// the order they first appear in lists (put the core group first, as
// BuiltinResources does), and a group's preferred version is its highest
// one in Kubernetes' ordering (v2 > v1 > v1beta2 > v1beta1 > v1alpha1).
// Refresh and unknown kinds only rebuild the mapping from lists.
func NewStaticResolver(lists []*metav1.APIResourceList) *Resolver {
	return NewResolver(newStaticDiscovery(lists))
}

// staticDiscovery serves fixed resource lists as discovery would.
// client-go's fake.FakeDiscovery is not used: it orders groups at random
// and prefers whichever version it saw first, so ambiguous names would
// resolve differently from run to run.
type staticDiscovery struct {
	groups    *metav1.APIGroupList
	resources map[string]*metav1.APIResourceList
}

var _ discovery.CachedDiscoveryInterface = (*staticDiscovery)(nil)

func newStaticDiscovery(lists []*metav1.APIResourceList) *staticDiscovery {
	d := &staticDiscovery{groups: &metav1.APIGroupList{}, resources: map[string]*metav1.APIResourceList{}}
	index := map[string]int{}
	for _, l := range MergeResources(lists) {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil || gv.Version == "" {
			// Real discovery cannot serve such a list either; skip it
			// rather than make every lookup fail.
			continue
		}
		d.resources[l.GroupVersion] = l
		i, ok := index[gv.Group]
		if !ok {
			i = len(d.groups.Groups)
			index[gv.Group] = i
			d.groups.Groups = append(d.groups.Groups, metav1.APIGroup{Name: gv.Group})
		}
		g := &d.groups.Groups[i]
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: l.GroupVersion, Version: gv.Version})
	}
	for i := range d.groups.Groups {
		g := &d.groups.Groups[i]
		sort.SliceStable(g.Versions, func(a, b int) bool {
			return version.CompareKubeAwareVersionStrings(g.Versions[a].Version, g.Versions[b].Version) > 0
		})
		g.PreferredVersion = g.Versions[0]
	}
	return d
}

func (d *staticDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	return d.groups.DeepCopy(), nil
}

func (d *staticDiscovery) ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error) {
	l, ok := d.resources[groupVersion]
	if !ok {
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusNotFound,
			Reason:  metav1.StatusReasonNotFound,
			Message: fmt.Sprintf("group version %q is not among the static resources", groupVersion),
		}}
	}
	return l.DeepCopy(), nil
}

// ServerGroupsAndResources returns the groups and their lists in rank
// order, group by group and preferred version first, as discovery does.
func (d *staticDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	groups := make([]*metav1.APIGroup, 0, len(d.groups.Groups))
	var lists []*metav1.APIResourceList
	for i := range d.groups.Groups {
		g := d.groups.Groups[i].DeepCopy()
		groups = append(groups, g)
		for _, v := range g.Versions {
			lists = append(lists, d.resources[v.GroupVersion].DeepCopy())
		}
	}
	return groups, lists, nil
}

func (d *staticDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return discovery.ServerPreferredResources(d)
}

func (d *staticDiscovery) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	return discovery.ServerPreferredNamespacedResources(d)
}

// Fresh reports true: the data cannot get staler, so a miss is final and
// the RESTMapper does not retry it.
func (d *staticDiscovery) Fresh() bool { return true }

// Invalidate does nothing: there is nothing to fetch again.
func (d *staticDiscovery) Invalidate() {}

var errOffline = errors.New("static discovery: no API server behind it")

func (d *staticDiscovery) ServerVersion() (*version.Info, error)        { return nil, errOffline }
func (d *staticDiscovery) OpenAPISchema() (*openapi_v2.Document, error) { return nil, errOffline }
func (d *staticDiscovery) OpenAPIV3() openapi.Client                    { return noOpenAPI{} }
func (d *staticDiscovery) RESTClient() rest.Interface                   { return nil }
func (d *staticDiscovery) WithLegacy() discovery.DiscoveryInterface     { return d }

// noOpenAPI is the OpenAPI v3 client of static discovery: it has no schemas.
type noOpenAPI struct{}

func (noOpenAPI) Paths() (map[string]openapi.GroupVersion, error) { return nil, errOffline }
