package kube

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MergeResources combines resource lists by groupVersion, in the order each
// groupVersion first appears. A resource of a later list replaces the
// earlier one of the same name (in place) or is added at the end, so
// MergeResources(BuiltinResources(), crdLists) serves the built-ins plus the
// CRDs. The result shares nothing with the arguments.
func MergeResources(lists ...[]*metav1.APIResourceList) []*metav1.APIResourceList {
	var merged []*metav1.APIResourceList
	byGV := map[string]*metav1.APIResourceList{}
	for _, ls := range lists {
		for _, l := range ls {
			if l == nil {
				continue
			}
			into := byGV[l.GroupVersion]
			if into == nil {
				into = &metav1.APIResourceList{TypeMeta: l.TypeMeta, GroupVersion: l.GroupVersion}
				byGV[l.GroupVersion] = into
				merged = append(merged, into)
			}
			for _, r := range l.APIResources {
				addOrReplace(into, *r.DeepCopy())
			}
		}
	}
	return merged
}

func addOrReplace(l *metav1.APIResourceList, r metav1.APIResource) {
	for i := range l.APIResources {
		if l.APIResources[i].Name == r.Name {
			l.APIResources[i] = r
			return
		}
	}
	l.APIResources = append(l.APIResources, r)
}

func copyLists(lists []*metav1.APIResourceList) []*metav1.APIResourceList {
	out := make([]*metav1.APIResourceList, 0, len(lists))
	for _, l := range lists {
		if l != nil {
			out = append(out, l.DeepCopy())
		}
	}
	return out
}
