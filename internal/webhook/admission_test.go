package webhook

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

func TestParseAdmissionResponse(t *testing.T) {
	patch := base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/metadata/labels/x","value":"y"}]`))
	for _, tc := range []struct {
		name, data string
		mutating   bool
		want       *AdmissionResponse
		err        string
	}{
		{name: "allowed", data: `{"allowed": true}`, want: &AdmissionResponse{Allowed: true}},
		{name: "denied", data: `{"allowed": false, "message": "no", "warnings": ["w1", "w2"]}` + "\n",
			want: &AdmissionResponse{Message: "no", Warnings: []string{"w1", "w2"}}},
		{name: "patch", mutating: true, data: `{"allowed": true, "patch": "` + patch + `"}`,
			want: &AdmissionResponse{Allowed: true, Patch: []byte(`[{"op":"add","path":"/metadata/labels/x","value":"y"}]`)}},
		{name: "empty", data: " \n", err: "wrote no response"},
		{name: "not JSON", data: `allowed`, err: "not an admission response"},
		{name: "no allowed", data: `{"message": "x"}`, err: `no "allowed"`},
		{name: "typo", data: `{"allowed": true, "mesage": "x"}`, err: `unknown field "mesage"`},
		{name: "wrong type", data: `{"allowed": "yes"}`, err: `"allowed" must be a bool`},
		{name: "two values", data: `{"allowed": true} {"allowed": false}`, err: "more than one"},
		{name: "patch not base64", mutating: true, data: `{"allowed": true, "patch": "[{op: add}]"}`, err: "base64 string"},
		{name: "patch not a string", mutating: true, data: `{"allowed": true, "patch": 5}`, err: "base64 string"},
		{name: "patch not a JSON Patch", mutating: true, data: `{"allowed": true, "patch": "` + base64.StdEncoding.EncodeToString([]byte(`{"a":1}`)) + `"}`, err: "not a JSON Patch"},
		{name: "patch op without path", mutating: true, data: `{"allowed": true, "patch": "` + base64.StdEncoding.EncodeToString([]byte(`[{"op":"remove"}]`)) + `"}`, err: `no "path"`},
		{name: "patch from a validating hook", data: `{"allowed": true, "patch": "` + patch + `"}`, err: "validating binding cannot change"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAdmissionResponse([]byte(tc.data), tc.mutating)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			if string(g) != string(w) {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
}

const review = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"","version":"v1","kind":"ConfigMap"},"operation":"CREATE","object":{"metadata":{"name":"x"}}}}`

// post sends body to h and returns the status and the decoded response.
func post(t *testing.T, h http.Handler, path, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return rec.Code, nil
	}
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("the answer is not JSON: %v\n%s", err, rec.Body)
	}
	return rec.Code, out
}

func TestAdmissionHandler(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	var gotPath string
	var gotReview json.RawMessage
	answer := &AdmissionResponse{}
	var fail error
	h := &AdmissionHandler{Log: log, Run: func(_ context.Context, path string, r json.RawMessage) (*AdmissionResponse, error) {
		gotPath, gotReview = path, r
		return answer, fail
	}}

	answer = &AdmissionResponse{Allowed: false, Message: "value is bad", Warnings: []string{"careful"}}
	code, out := post(t, h, "/hooks/check-cm", review)
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if gotPath != "/hooks/check-cm" || string(gotReview) != review {
		t.Errorf("the hook got path %q and review %s; want the path and the review as sent", gotPath, gotReview)
	}
	resp := out["response"].(map[string]any)
	if out["apiVersion"] != "admission.k8s.io/v1" || out["kind"] != "AdmissionReview" || resp["uid"] != "u-1" || resp["allowed"] != false {
		t.Errorf("a denial: %v", out)
	}
	if st := resp["status"].(map[string]any); st["code"] != 403.0 || st["message"] != "value is bad" {
		t.Errorf("a denial's status: %v", st)
	}
	if w := resp["warnings"].([]any); len(w) != 1 || w[0] != "careful" {
		t.Errorf("warnings: %v", w)
	}

	answer = &AdmissionResponse{Allowed: true, Patch: []byte(`[{"op":"add","path":"/a","value":1}]`)}
	_, out = post(t, h, "/hooks/mutate", review)
	resp = out["response"].(map[string]any)
	if resp["allowed"] != true || resp["patchType"] != "JSONPatch" || resp["patch"] != base64.StdEncoding.EncodeToString(answer.Patch) || resp["status"] != nil {
		t.Errorf("an allowed patch: %v", resp)
	}

	answer, fail = nil, errors.New("hook check.sh did not answer within 10s")
	_, out = post(t, h, "/hooks/check-cm", review)
	resp = out["response"].(map[string]any)
	if st, _ := resp["status"].(map[string]any); resp["allowed"] != false || st["code"] != 500.0 || st["message"] != fail.Error() {
		t.Errorf("a hook that gives no answer denies with its reason: %v", resp)
	}

	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"not JSON", "x", http.StatusBadRequest},
		{"no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest},
		{"v1beta1", strings.Replace(review, "admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1), http.StatusBadRequest},
		{"too large", `{"x":"` + strings.Repeat("a", maxReviewBytes) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		if code, _ := post(t, h, "/hooks/x", tc.body); code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, code, tc.want)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/hooks/x", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", rec.Code)
	}
}
