package server

// The TokenReview (authentication.k8s.io/v1) and SubjectAccessReview
// (authorization.k8s.io/v1) fields the secure metrics listener sends and
// reads, with the API's JSON names. They are declared here rather than
// taken from k8s.io/api: those packages bring their whole API groups'
// generated code into the binary, about 160 KB of it for these two, whose
// pages are resident from start (docs/decisions.md). review_test.go
// checks them against k8s.io/api's types.

// userInfo is a TokenReview's status.user, and what a SubjectAccessReview
// asks about.
type userInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

type tokenReview struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Spec       tokenReviewSpec   `json:"spec"`
	Status     tokenReviewStatus `json:"status,omitempty"`
}

type tokenReviewSpec struct {
	Token string `json:"token,omitempty"`
}

type tokenReviewStatus struct {
	Authenticated bool     `json:"authenticated,omitempty"`
	User          userInfo `json:"user,omitempty"`
	Error         string   `json:"error,omitempty"`
}

type subjectAccessReview struct {
	APIVersion string                    `json:"apiVersion"`
	Kind       string                    `json:"kind"`
	Spec       subjectAccessReviewSpec   `json:"spec"`
	Status     subjectAccessReviewStatus `json:"status,omitempty"`
}

type subjectAccessReviewSpec struct {
	NonResourceAttributes *nonResourceAttributes `json:"nonResourceAttributes,omitempty"`
	User                  string                 `json:"user,omitempty"`
	Groups                []string               `json:"groups,omitempty"`
	Extra                 map[string][]string    `json:"extra,omitempty"`
	UID                   string                 `json:"uid,omitempty"`
}

type nonResourceAttributes struct {
	Path string `json:"path,omitempty"`
	Verb string `json:"verb,omitempty"`
}

type subjectAccessReviewStatus struct {
	Allowed bool `json:"allowed"`
}
