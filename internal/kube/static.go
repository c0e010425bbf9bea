package kube

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// NewStaticResolver returns a resolver that knows exactly the resources of
// lists and never talks to a cluster, for offline commands (replay, hook
// tests). Give it BuiltinResources(), merged with ResourcesFromCRD's lists
// for custom kinds. It resolves like a live cluster would: groups rank in
// the order they first appear in lists (the core group always first), and a
// group's preferred version is its highest one in Kubernetes' ordering
// (v2 > v1 > v1beta2 > v1beta1 > v1alpha1), whatever order lists has.
// Refresh and unknown kinds change nothing: the lists are all there is.
func NewStaticResolver(lists []*metav1.APIResourceList) *Resolver {
	k := newKinds(rankStatic(lists), nil)
	return newResolver(func() (*kinds, error) { return k, nil })
}

// rankStatic merges lists and orders them as discovery would: group by
// group in order of first appearance, each group's versions highest first.
func rankStatic(lists []*metav1.APIResourceList) []*metav1.APIResourceList {
	merged := MergeResources(lists)
	gvs := make(map[*metav1.APIResourceList]schema.GroupVersion, len(merged))
	firstSeen := map[string]int{}
	for i, l := range merged {
		// A malformed groupVersion parses to something; newKinds skips it.
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		gvs[l] = gv
		if _, ok := firstSeen[gv.Group]; !ok {
			firstSeen[gv.Group] = i
		}
	}
	slices.SortStableFunc(merged, func(a, b *metav1.APIResourceList) int {
		ga, gb := gvs[a], gvs[b]
		if c := cmp.Compare(firstSeen[ga.Group], firstSeen[gb.Group]); c != 0 {
			return c
		}
		return version.CompareKubeAwareVersionStrings(gb.Version, ga.Version)
	})
	return merged
}
