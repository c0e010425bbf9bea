package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/sirupsen/logrus"
)

// AdmissionResponse is what a validating or mutating hook writes to
// $VALIDATING_RESPONSE_PATH (also named $ADMISSION_RESPONSE_PATH), in
// shell-operator's format.
type AdmissionResponse struct {
	Allowed bool `json:"allowed"`
	// Message is shown to the client when the request is denied.
	Message string `json:"message,omitempty"`
	// Warnings reach the client (kubectl prints them) either way.
	Warnings []string `json:"warnings,omitempty"`
	// Patch is a JSON Patch (RFC 6902), base64-encoded in the file, that a
	// mutating hook applies to the object.
	Patch []byte `json:"patch,omitempty"`
}

// ParseAdmissionResponse reads what a hook wrote to its response file. The
// whole response is checked before any of it is used: it must be one JSON
// object with only the keys above, and a patch (mutating bindings only) the
// base64 of a JSON array of patch operations. Errors say what to write.
func ParseAdmissionResponse(data []byte, mutating bool) (*AdmissionResponse, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New(`the hook wrote no response: write {"allowed": true} or {"allowed": false, "message": "..."} to $VALIDATING_RESPONSE_PATH`)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r AdmissionResponse
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("the response is not an admission response: %s; write one JSON object with allowed, and optionally message, warnings and (mutating) patch", describeJSONError(err))
	}
	if dec.More() {
		return nil, errors.New("the response holds more than one JSON value; write one object")
	}
	var allowed struct {
		Allowed *bool `json:"allowed"`
	}
	_ = json.Unmarshal(data, &allowed)
	if allowed.Allowed == nil {
		return nil, errors.New(`the response has no "allowed": set it to true or false`)
	}
	if len(r.Patch) > 0 {
		if !mutating {
			return nil, errors.New(`a validating binding cannot change the object: "patch" is for kubernetesMutating bindings`)
		}
		var ops []map[string]any
		if err := json.Unmarshal(r.Patch, &ops); err != nil {
			return nil, fmt.Errorf(`"patch" is not a JSON Patch: its base64 must decode to a JSON array of operations such as [{"op": "add", "path": "/metadata/labels/x", "value": "y"}] (%v)`, err)
		}
		for i, op := range ops {
			if _, ok := op["op"].(string); !ok {
				return nil, fmt.Errorf(`"patch" operation %d has no "op"`, i)
			}
			if _, ok := op["path"].(string); !ok {
				return nil, fmt.Errorf(`"patch" operation %d has no "path"`, i)
			}
		}
	}
	return &r, nil
}

// describeJSONError words a decoding error of a response for the hook's
// author.
func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var b64Err base64.CorruptInputError
	switch {
	case errors.As(err, &b64Err), errors.As(err, &typeErr) && typeErr.Field == "patch":
		return `"patch" must be a base64 string of the JSON Patch`
	case errors.As(err, &typeErr):
		return fmt.Sprintf("%q must be a %s, not a %s", typeErr.Field, typeErr.Type, typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return strings.TrimPrefix(err.Error(), "json: ") + " (the keys are allowed, message, warnings and patch)"
	}
	return err.Error()
}

// maxReviewBytes bounds a review's body: the API server's own limit on a
// request is 3 MiB, and the review carries the object twice at most.
const maxReviewBytes = 8 << 20

// readReview reads the body of a review request (what: "admission" or
// "conversion"; kind: "an AdmissionReview" or "a ConversionReview"), or
// answers a request that is not one and returns false. A body the gate
// has read is taken as it is; another, of a known length, is read into a
// buffer of that size, not one grown by doubling.
func readReview(w http.ResponseWriter, r *http.Request, what, kind string) ([]byte, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reject(w, r, http.StatusMethodNotAllowed, "method", what+" reviews are POSTed")
		return nil, false
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		reject(w, r, http.StatusUnsupportedMediaType, "content_type", kind+" is sent as application/json, not "+ct)
		return nil, false
	}
	if a, ok := r.Body.(arrived); ok {
		return a.data, true
	}
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= maxReviewBytes {
		buf.Grow(int(n) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxReviewBytes)); err != nil {
		rejectBody(w, r, err)
		return nil, false
	}
	return buf.Bytes(), true
}

// rejectBody answers a request whose body could not be read, with err's
// reason: too large, too slow, no memory for it in time, or broken.
func rejectBody(w http.ResponseWriter, r *http.Request, err error) {
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooLarge):
		reject(w, r, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("reading the review: it is larger than %d bytes", maxReviewBytes))
	case errors.Is(err, errBodiesFull):
		reject(w, r, http.StatusServiceUnavailable, "busy", "reading the review: "+err.Error())
	case errors.As(err, &netErr) && netErr.Timeout():
		reject(w, r, http.StatusRequestTimeout, "read_timeout", "reading the review: the body did not arrive in time")
	default:
		reject(w, r, http.StatusBadRequest, "read_error", "reading the review: "+err.Error())
	}
}

// AdmissionHandler answers AdmissionReview requests (admission.k8s.io/v1)
// with what the hook of the request's path answers. A panic while a
// request is handled is answered with a 500 (see recoverRequest).
type AdmissionHandler struct {
	// Run runs the hook bound to path with the review (the whole
	// AdmissionReview as the API server sent it) and returns its response.
	// An error denies the request with the error's text, which must not
	// hold anything the client should not see.
	Run func(ctx context.Context, path string, review json.RawMessage) (*AdmissionResponse, error)
	Log logrus.FieldLogger
}

// admissionReview is the part of an AdmissionReview the handler reads and
// writes; the request goes to the hook whole.
type admissionReview struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Request    *reviewRequest  `json:"request,omitempty"`
	Response   *reviewResponse `json:"response,omitempty"`
}

type reviewRequest struct {
	UID string `json:"uid"`
}

type reviewResponse struct {
	UID       string        `json:"uid"`
	Allowed   bool          `json:"allowed"`
	Status    *reviewStatus `json:"status,omitempty"`
	Warnings  []string      `json:"warnings,omitempty"`
	PatchType string        `json:"patchType,omitempty"`
	Patch     []byte        `json:"patch,omitempty"`
}

type reviewStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (h *AdmissionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer recoverRequest(w, r, func(err error) { h.Log.WithError(err).Error("admission request failed: the server panicked") })
	body, ok := readReview(w, r, "admission", "an AdmissionReview")
	if !ok {
		return
	}
	var review admissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		reject(w, r, http.StatusBadRequest, "bad_review", "the body is not an AdmissionReview: "+err.Error())
		return
	}
	if review.Kind != "AdmissionReview" || review.APIVersion != "admission.k8s.io/v1" {
		reject(w, r, http.StatusBadRequest, "bad_review", fmt.Sprintf("want an admission.k8s.io/v1 AdmissionReview, got %s %s (register the webhook with admissionReviewVersions: [v1])",
			review.APIVersion, review.Kind))
		return
	}
	if review.Request == nil || review.Request.UID == "" {
		reject(w, r, http.StatusBadRequest, "bad_review", "the AdmissionReview has no request, or a request without a uid")
		return
	}

	resp := &reviewResponse{UID: review.Request.UID}
	res, err := h.Run(requestContext(r), r.URL.Path, body)
	switch {
	case err != nil:
		h.Log.WithError(err).WithField("path", r.URL.Path).Warn("admission request denied: the hook gave no answer")
		resp.Status = &reviewStatus{Code: http.StatusInternalServerError, Message: err.Error()}
	case res.Allowed:
		resp.Allowed, resp.Warnings = true, res.Warnings
		if len(res.Patch) > 0 {
			resp.PatchType, resp.Patch = "JSONPatch", res.Patch
		}
	default:
		resp.Warnings = res.Warnings
		resp.Status = &reviewStatus{Code: http.StatusForbidden, Message: res.Message}
	}
	out, err := json.Marshal(admissionReview{APIVersion: review.APIVersion, Kind: review.Kind, Response: resp})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
