package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The reviews' own types read as k8s.io/api's do: what they send decodes
// into the API's types, field for field and with no field unknown, and
// what the API answers decodes into them with every field they keep.
func TestReviewTypesMatchTheAPI(t *testing.T) {
	user := userInfo{Username: "u", UID: "1", Groups: []string{"a"}, Extra: map[string][]string{"k": {"v"}}}

	// Sent.
	var tr authnv1.TokenReview
	strictDecode(t, tokenReview{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview", Spec: tokenReviewSpec{Token: "t"}}, &tr)
	if tr.APIVersion != "authentication.k8s.io/v1" || tr.Kind != "TokenReview" || tr.Spec.Token != "t" {
		t.Errorf("TokenReview sent reads as %+v", tr)
	}
	var sar authzv1.SubjectAccessReview
	strictDecode(t, subjectAccessReview{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview", Spec: subjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: user.Extra, NonResourceAttributes: &nonResourceAttributes{Path: "/metrics", Verb: "get"}}}, &sar)
	wantSpec := authzv1.SubjectAccessReviewSpec{User: "u", UID: "1", Groups: []string{"a"}, Extra: map[string]authzv1.ExtraValue{"k": {"v"}},
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}
	if sar.Kind != "SubjectAccessReview" || !reflect.DeepEqual(sar.Spec, wantSpec) {
		t.Errorf("SubjectAccessReview sent reads as %+v; want spec %+v", sar, wantSpec)
	}

	// Answered.
	var gotTR tokenReview
	strictDecode(t, authnv1.TokenReview{Status: authnv1.TokenReviewStatus{Authenticated: true, Error: "e",
		User: authnv1.UserInfo{Username: "u", UID: "1", Groups: []string{"a"}, Extra: map[string]authnv1.ExtraValue{"k": {"v"}}}}}, &gotTR, "metadata", "audiences")
	if !gotTR.Status.Authenticated || gotTR.Status.Error != "e" || !reflect.DeepEqual(gotTR.Status.User, user) {
		t.Errorf("TokenReview answered reads as %+v; want user %+v", gotTR.Status, user)
	}
	var gotSAR subjectAccessReview
	strictDecode(t, authzv1.SubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Status: authzv1.SubjectAccessReviewStatus{Allowed: true}}, &gotSAR, "metadata")
	if !gotSAR.Status.Allowed {
		t.Errorf("SubjectAccessReview answered reads as %+v", gotSAR.Status)
	}
}

// strictDecode encodes in as JSON and decodes it into out, failing on a
// field out does not have unless it is one of ignored (top-level or
// status fields out does not read).
func strictDecode(t *testing.T, in, out any, ignored ...string) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(ignored) > 0 {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range ignored {
			delete(m, k)
			if st, ok := m["status"].(map[string]any); ok {
				delete(st, k)
			}
		}
		if b, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(out); err != nil {
		t.Fatalf("%s into %T: %v", b, out, err)
	}
}
