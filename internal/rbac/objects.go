package rbac

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The RBAC objects (rbac.authorization.k8s.io/v1) the package writes, with
// the API's JSON names and omitempty rules, so that they print as
// k8s.io/api/rbac/v1's types do. They are declared here rather than taken
// from k8s.io/api: that package brings the whole API group's generated
// code into the binary (docs/decisions.md). objects_test.go checks them
// against k8s.io/api's types.

// PolicyRule is one rule of a ClusterRole or Role.
type PolicyRule struct {
	Verbs           []string `json:"verbs"`
	APIGroups       []string `json:"apiGroups,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	ResourceNames   []string `json:"resourceNames,omitempty"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// ClusterRole holds cluster-wide rules.
type ClusterRole struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Rules             []PolicyRule `json:"rules"`
}

// Role holds one namespace's rules.
type Role struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Rules             []PolicyRule `json:"rules"`
}

// ClusterRoleBinding grants a ClusterRole to subjects.
type ClusterRoleBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Subjects          []Subject `json:"subjects,omitempty"`
	RoleRef           RoleRef   `json:"roleRef"`
}

// RoleBinding grants a Role to subjects in its namespace.
type RoleBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Subjects          []Subject `json:"subjects,omitempty"`
	RoleRef           RoleRef   `json:"roleRef"`
}

// Subject is who a binding grants to.
type Subject struct {
	Kind      string `json:"kind"`
	APIGroup  string `json:"apiGroup,omitempty"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// RoleRef names the role a binding grants.
type RoleRef struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// serviceAccountKind is a Subject's kind for a ServiceAccount.
const serviceAccountKind = "ServiceAccount"
