package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The package's RBAC objects print exactly as k8s.io/api/rbac/v1's, full
// and with their optional fields empty.
func TestObjectsPrintAsTheAPIsTypes(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "n", Namespace: "ns"}
	full := PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"p"}, NonResourceURLs: []string{"/m"}}
	fullAPI := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"p"}, NonResourceURLs: []string{"/m"}}
	subject := Subject{Kind: serviceAccountKind, APIGroup: "g", Name: "s", Namespace: "ns"}
	subjectAPI := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, APIGroup: "g", Name: "s", Namespace: "ns"}
	ref := RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "n"}
	refAPI := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "n"}
	tm := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: kind}
	}
	for _, tc := range []struct {
		name      string
		ours, api any
	}{
		{"rule", full, fullAPI},
		{"empty rule", PolicyRule{}, rbacv1.PolicyRule{}},
		{"ClusterRole", ClusterRole{tm("ClusterRole"), meta, []PolicyRule{full}}, rbacv1.ClusterRole{TypeMeta: tm("ClusterRole"), ObjectMeta: meta, Rules: []rbacv1.PolicyRule{fullAPI}}},
		{"empty ClusterRole", ClusterRole{}, rbacv1.ClusterRole{}},
		{"Role", Role{tm("Role"), meta, []PolicyRule{full}}, rbacv1.Role{TypeMeta: tm("Role"), ObjectMeta: meta, Rules: []rbacv1.PolicyRule{fullAPI}}},
		{"empty Role", Role{}, rbacv1.Role{}},
		{"ClusterRoleBinding", ClusterRoleBinding{tm("ClusterRoleBinding"), meta, []Subject{subject}, ref},
			rbacv1.ClusterRoleBinding{TypeMeta: tm("ClusterRoleBinding"), ObjectMeta: meta, Subjects: []rbacv1.Subject{subjectAPI}, RoleRef: refAPI}},
		{"empty ClusterRoleBinding", ClusterRoleBinding{}, rbacv1.ClusterRoleBinding{}},
		{"RoleBinding", RoleBinding{tm("RoleBinding"), meta, []Subject{subject}, ref},
			rbacv1.RoleBinding{TypeMeta: tm("RoleBinding"), ObjectMeta: meta, Subjects: []rbacv1.Subject{subjectAPI}, RoleRef: refAPI}},
		{"empty RoleBinding", RoleBinding{}, rbacv1.RoleBinding{}},
		{"empty Subject", Subject{}, rbacv1.Subject{}},
	} {
		ours, err := yaml.Marshal(tc.ours)
		if err != nil {
			t.Fatal(err)
		}
		api, err := yaml.Marshal(tc.api)
		if err != nil {
			t.Fatal(err)
		}
		if string(ours) != string(api) {
			t.Errorf("%s prints as\n%s\nk8s.io/api's as\n%s", tc.name, ours, api)
		}
	}
}
