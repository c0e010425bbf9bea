package rbac

import (
	"slices"
	"strings"
)

// sensitive are the resources on which a write lets a hook (and anyone who
// can change its scripts) take over or damage much more than its own
// objects, with why, by group and resource.
var sensitive = map[[2]string]string{
	{"", "secrets"}:    "Secrets hold credentials",
	{"", "namespaces"}: "deleting a Namespace deletes everything in it",
	{"", "nodes"}:      "Nodes decide where and whether workloads run",
	{"admissionregistration.k8s.io", "validatingwebhookconfigurations"}:   "webhook configurations decide which API requests are checked, by whom",
	{"admissionregistration.k8s.io", "mutatingwebhookconfigurations"}:     "webhook configurations decide which API requests are changed, by whom",
	{"admissionregistration.k8s.io", "validatingadmissionpolicies"}:       "admission policies decide which API requests are allowed",
	{"admissionregistration.k8s.io", "validatingadmissionpolicybindings"}: "admission policies decide which API requests are allowed",
	{"admissionregistration.k8s.io", "mutatingadmissionpolicies"}:         "admission policies decide how API requests are changed",
	{"admissionregistration.k8s.io", "mutatingadmissionpolicybindings"}:   "admission policies decide how API requests are changed",
	{"apiextensions.k8s.io", "customresourcedefinitions"}:                 "a CRD changed or deleted changes or removes a whole API and its objects",
	{"rbac.authorization.k8s.io", "roles"}:                                "RBAC objects can grant any permission (escalation)",
	{"rbac.authorization.k8s.io", "rolebindings"}:                         "RBAC objects can grant any permission (escalation)",
	{"rbac.authorization.k8s.io", "clusterroles"}:                         "RBAC objects can grant any permission (escalation)",
	{"rbac.authorization.k8s.io", "clusterrolebindings"}:                  "RBAC objects can grant any permission (escalation)",
	{"certificates.k8s.io", "certificatesigningrequests"}:                 "approved CSRs become credentials",
	{"apiregistration.k8s.io", "apiservices"}:                             "an APIService sends a whole API group to another server",
}

// sensitiveVerbs are the verbs that make a grant on a sensitive resource
// sensitive. create is one: a new webhook configuration intercepts any
// request, a new Secret of type service-account-token mints a token of
// any ServiceAccount of its namespace, a new RoleBinding grants.
var sensitiveVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "bind", "escalate"}

// Sensitive says why g deserves a second look before it is applied, or ""
// when it does not: create, patch, update or delete (and RBAC's bind and
// escalate) on Secrets, Namespaces, Nodes, webhook configurations and
// admission policies, CRDs, RBAC objects, CSRs and APIServices (their
// subresources included), and any verb on "*". A create is said to reach
// any name: RBAC cannot limit create to names.
func Sensitive(g Grant) string {
	res, _, _ := strings.Cut(g.Resource, "/")
	if g.Group == "*" || res == "*" || slices.Contains(g.Verbs, "*") {
		return `"*" grants what no one has reviewed`
	}
	why, ok := sensitive[[2]string{g.Group, res}]
	if !ok {
		return ""
	}
	var verbs []string
	for _, v := range g.Verbs {
		if slices.Contains(sensitiveVerbs, v) {
			verbs = append(verbs, v)
		}
	}
	if len(verbs) == 0 {
		return ""
	}
	if slices.Contains(verbs, "create") {
		why += "; create reaches any name (RBAC cannot limit it to resourceNames)"
	}
	return strings.Join(verbs, ", ") + " on " + g.Resource + ": " + why
}
