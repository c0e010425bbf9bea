package kube

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kinds is what a Resolver looks kinds up in: the resources of a set of
// resource lists, ranked. It is built once per discovery and never changed,
// so lookups need no lock.
//
// The ranking is what client-go's discovery RESTMapper used: the core group
// first, then the groups in the order of the lists, and within a group its
// versions in list order (the preferred one first). Among the resources a
// name matches, the best ranked wins.
type kinds struct {
	resources []rankedResource
	// byName maps a lower-case kind, plural or singular name, and byShort a
	// lower-case short name, to indexes into resources, best ranked first.
	byName  map[string][]int
	byShort map[string][]int
	// unread lists the group versions discovery could not read, with why:
	// an unknown kind may be served by one of them.
	unread []string
}

// rankedResource is a resource and the rank of its group version (lower is
// better; resources of one group version share it).
type rankedResource struct {
	Resource
	rank int
}

// newKinds indexes lists, which must be in rank order apart from the core
// group (ranked first wherever it is). Lists with a malformed groupVersion
// are skipped, as discovery cannot serve them either, and so are
// subresources ("pods/status"): they are not kinds.
func newKinds(lists []*metav1.APIResourceList, unread []string) *kinds {
	k := &kinds{byName: map[string][]int{}, byShort: map[string][]int{}, unread: unread}
	rank := 0
	for _, core := range []bool{true, false} {
		for _, l := range lists {
			gv, err := schema.ParseGroupVersion(l.GroupVersion)
			if err != nil || gv.Version == "" || (gv.Group == "") != core {
				continue
			}
			status := map[string]bool{}
			for _, r := range l.APIResources {
				if name, ok := strings.CutSuffix(r.Name, "/status"); ok {
					status[name] = true
				}
			}
			for _, r := range l.APIResources {
				if r.Name == "" || r.Kind == "" || strings.Contains(r.Name, "/") {
					continue
				}
				k.add(rankedResource{Resource: Resource{
					GVR:        gv.WithResource(r.Name),
					GVK:        gv.WithKind(r.Kind),
					Namespaced: r.Namespaced,
					Status:     status[r.Name],
				}, rank: rank}, r)
			}
			rank++
		}
	}
	return k
}

func (k *kinds) add(res rankedResource, r metav1.APIResource) {
	i := len(k.resources)
	k.resources = append(k.resources, res)
	seen := map[string]bool{}
	index := func(m map[string][]int, name string) {
		name = strings.ToLower(name)
		if name != "" && !seen[name] {
			seen[name] = true
			m[name] = append(m[name], i)
		}
	}
	index(k.byName, r.Kind)
	index(k.byName, r.Name)
	index(k.byName, r.SingularName)
	for _, s := range r.ShortNames {
		index(k.byShort, s)
	}
}

// lookup returns the resource name (any case) names: a kind, plural or
// singular name, or else a short name. With anyGroup false only resources
// of gv's group count, and with gv.Version set only those of that version;
// otherwise the best ranked match wins, which is the group's preferred
// version and, across groups, the core group.
func (k *kinds) lookup(gv schema.GroupVersion, anyGroup bool, name string) (Resource, error) {
	name = strings.ToLower(name)
	for _, index := range []map[string][]int{k.byName, k.byShort} {
		var found []rankedResource
		for _, i := range index[name] {
			r := k.resources[i]
			if (anyGroup || r.GVR.Group == gv.Group) && (gv.Version == "" || r.GVR.Version == gv.Version) {
				found = append(found, r)
			}
		}
		if len(found) == 0 {
			continue
		}
		for _, other := range found[1:] {
			if other.rank == found[0].rank && other.GVR != found[0].GVR {
				return Resource{}, fmt.Errorf("%q names both %s and %s in %s; write the resource's plural name (%s or %s) instead",
					name, found[0].GVK.Kind, other.GVK.Kind, found[0].APIVersion(), found[0].GVR.Resource, other.GVR.Resource)
			}
		}
		return found[0].Resource, nil
	}
	if !anyGroup && gv.Version != "" && !slices.Contains(k.unreadGroupVersions(), gv.String()) {
		if served := k.kindsOf(gv); len(served) > 0 {
			return Resource{}, &MissingKindError{Kind: name, GroupVersion: gv.String(), Served: served}
		}
	}
	msg := "no such kind, plural or short name is served"
	if len(k.unread) > 0 {
		msg += "; discovery could not read " + strings.Join(k.unread, ", ") + ", which may serve it"
	}
	return Resource{}, fmt.Errorf("%w (%s)", ErrUnknownKind, msg)
}

// kindsOf returns the kinds gv serves, sorted; none when gv is not served.
func (k *kinds) kindsOf(gv schema.GroupVersion) []string {
	var out []string
	for _, r := range k.resources {
		if r.GVR.GroupVersion() == gv && !slices.Contains(out, r.GVK.Kind) {
			out = append(out, r.GVK.Kind)
		}
	}
	sort.Strings(out)
	return out
}

// unreadGroupVersions returns the group versions discovery could not read
// (k.unread without the reasons).
func (k *kinds) unreadGroupVersions() []string {
	out := make([]string, 0, len(k.unread))
	for _, u := range k.unread {
		gv, _, _ := strings.Cut(u, " ")
		out = append(out, gv)
	}
	return out
}
