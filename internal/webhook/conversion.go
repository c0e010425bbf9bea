package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ConversionRule is one conversion a hook declares: objects of FromVersion
// made into ToVersion. A version is "group/version" or, matching that
// version of any group, "version" alone.
type ConversionRule struct {
	From string `json:"fromVersion"`
	To   string `json:"toVersion"`
}

func (r ConversionRule) String() string { return r.From + " -> " + r.To }

// VersionsMatch reports whether two versions name the same one: equal, or
// one of them without a group and the other's version part equal to it.
// Versions of two different groups never match.
func VersionsMatch(a, b string) bool {
	if a == b {
		return true
	}
	ia, ib := strings.IndexByte(a, '/'), strings.IndexByte(b, '/')
	switch {
	case ia < 0 && ib >= 0:
		return a == b[ib+1:]
	case ia >= 0 && ib < 0:
		return a[ia+1:] == b
	}
	return false
}

// FindChain returns the shortest sequence of rules that takes an object of
// version from to version to, each rule starting where the one before it
// ended, or nil when the rules hold no such sequence. Among sequences of
// the same length the rules' order decides.
func FindChain(rules []ConversionRule, from, to string) []ConversionRule {
	type step struct {
		at   string
		path []ConversionRule
	}
	used := make([]bool, len(rules))
	frontier := []step{{at: from}}
	for len(frontier) > 0 {
		var next []step
		for _, s := range frontier {
			for i, r := range rules {
				if used[i] || !VersionsMatch(s.at, r.From) {
					continue
				}
				used[i] = true
				path := append(append([]ConversionRule(nil), s.path...), r)
				if VersionsMatch(r.To, to) {
					return path
				}
				next = append(next, step{at: r.To, path: path})
			}
		}
		frontier = next
	}
	return nil
}

// ConversionRequest is the request of a ConversionReview
// (apiextensions.k8s.io/v1).
type ConversionRequest struct {
	UID               string            `json:"uid"`
	DesiredAPIVersion string            `json:"desiredAPIVersion"`
	Objects           []json.RawMessage `json:"objects"`
}

// ConversionStep runs the hook of rule for the request's objects and
// returns what it made of them, one object for each in the same order.
type ConversionStep func(ctx context.Context, crd string, rule ConversionRule, req ConversionRequest) ([]json.RawMessage, error)

// ConversionFailure is a conversion the hooks could not make; Error is the
// message the API server shows its client.
type ConversionFailure struct{ Msg string }

func (e *ConversionFailure) Error() string { return e.Msg }

// Convert brings every object of req to req.DesiredAPIVersion, as
// shell-operator does: it takes the version of the first object not there
// yet, finds the chain of declared rules from it to the desired version,
// and gives all the objects to the hook of each step in turn, each step's
// output being the next one's input, until every object has the desired
// version. An object whose version no chain leads from, or a chain that
// leaves objects behind, fails the whole request; nothing is returned in
// part.
func Convert(ctx context.Context, crd string, rules []ConversionRule, req ConversionRequest, step ConversionStep) ([]json.RawMessage, error) {
	objects := req.Objects
	tried := map[string]bool{}
	for {
		pending := ""
		for i, o := range objects {
			v, err := apiVersionOf(o)
			if err != nil {
				return nil, fmt.Errorf("object %d: %w", i, err)
			}
			if v != req.DesiredAPIVersion {
				pending = v
				break
			}
		}
		if pending == "" {
			return objects, nil
		}
		if tried[pending] {
			return nil, &ConversionFailure{Msg: fmt.Sprintf("the conversion chain from %s to %s left objects at %s", pending, req.DesiredAPIVersion, pending)}
		}
		tried[pending] = true
		chain := FindChain(rules, pending, req.DesiredAPIVersion)
		if chain == nil {
			return nil, &ConversionFailure{Msg: fmt.Sprintf("no hook converts %s from %s to %s: no chain of kubernetesCustomResourceConversion rules leads there", crd, pending, req.DesiredAPIVersion)}
		}
		for _, rule := range chain {
			in := req
			in.Objects = objects
			out, err := step(ctx, crd, rule, in)
			if err != nil {
				return nil, err
			}
			if len(out) != len(objects) {
				return nil, &ConversionFailure{Msg: fmt.Sprintf("the hook of %s returned %d objects for %d", rule, len(out), len(objects))}
			}
			objects = out
			if allAt(objects, req.DesiredAPIVersion) {
				return objects, nil
			}
		}
	}
}

func allAt(objects []json.RawMessage, version string) bool {
	for _, o := range objects {
		if v, _ := apiVersionOf(o); v != version {
			return false
		}
	}
	return true
}

func apiVersionOf(o json.RawMessage) (string, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(o, &tm); err != nil || tm.APIVersion == "" {
		return "", errors.New("not an object with an apiVersion")
	}
	return tm.APIVersion, nil
}

// ConversionResponse is what a conversion hook writes to
// $CONVERSION_RESPONSE_PATH: the converted objects, or why it failed.
type ConversionResponse struct {
	FailedMessage    string            `json:"failedMessage,omitempty"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects,omitempty"`
}

// ParseConversionResponse reads what a hook wrote to its response file for
// n objects. The whole response is checked before any of it is used: one
// JSON object with failedMessage, or with convertedObjects holding n
// objects, each with an apiVersion. Errors say what to write.
func ParseConversionResponse(data []byte, n int) (*ConversionResponse, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New(`the hook wrote no response: write {"convertedObjects": [...]} or {"failedMessage": "..."} to $CONVERSION_RESPONSE_PATH`)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r ConversionResponse
	if err := dec.Decode(&r); err != nil {
		msg := err.Error()
		if strings.HasPrefix(msg, "json: unknown field") {
			msg = strings.TrimPrefix(msg, "json: ") + " (the keys are convertedObjects and failedMessage)"
		}
		return nil, fmt.Errorf("the response is not a conversion response: %s; write one JSON object with convertedObjects or failedMessage", msg)
	}
	if dec.More() {
		return nil, errors.New("the response holds more than one JSON value; write one object")
	}
	if r.FailedMessage != "" {
		if len(r.ConvertedObjects) > 0 {
			return nil, errors.New("the response has both failedMessage and convertedObjects; write one of them")
		}
		return &r, nil
	}
	if len(r.ConvertedObjects) != n {
		return nil, fmt.Errorf("convertedObjects holds %d objects for the %d in review.request.objects: return every object, in the same order, converted or not", len(r.ConvertedObjects), n)
	}
	for i, o := range r.ConvertedObjects {
		if _, err := apiVersionOf(o); err != nil {
			return nil, fmt.Errorf("convertedObjects[%d] is %s", i, err)
		}
	}
	return &r, nil
}

// conversionReview is a ConversionReview as sent and answered.
type conversionReview struct {
	APIVersion string              `json:"apiVersion"`
	Kind       string              `json:"kind"`
	Request    *ConversionRequest  `json:"request,omitempty"`
	Response   *conversionResponse `json:"response,omitempty"`
}

type conversionResponse struct {
	UID              string            `json:"uid"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	Result           conversionResult  `json:"result"`
}

type conversionResult struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// ConversionPath is where the conversions of a CRD are served, as
// shell-operator serves them.
func ConversionPath(crd string) string { return "/" + crd }

// ServeConversion answers a ConversionReview (apiextensions.k8s.io/v1)
// posted to /<CRD name> with what convert makes of its objects. An error
// of convert fails the request with the error's text, which must not hold
// anything the client should not see; logf is told of it first. A panic
// while the request is handled is answered with a 500 and told to logf
// (see recoverRequest).
func ServeConversion(w http.ResponseWriter, r *http.Request, convert func(ctx context.Context, crd string, req ConversionRequest) ([]json.RawMessage, error), logf func(err error, crd string)) {
	defer recoverRequest(w, r, func(err error) { logf(err, strings.TrimPrefix(r.URL.Path, "/")) })
	body, ok := readReview(w, r, "conversion", "a ConversionReview")
	if !ok {
		return
	}
	var review conversionReview
	if err := json.Unmarshal(body, &review); err != nil {
		reject(w, r, http.StatusBadRequest, "bad_review", "the body is not a ConversionReview: "+err.Error())
		return
	}
	if review.Kind != "ConversionReview" || review.APIVersion != "apiextensions.k8s.io/v1" {
		reject(w, r, http.StatusBadRequest, "bad_review", fmt.Sprintf("want an apiextensions.k8s.io/v1 ConversionReview, got %s %s (register the conversion with conversionReviewVersions: [v1])",
			review.APIVersion, review.Kind))
		return
	}
	if review.Request == nil || review.Request.UID == "" || review.Request.DesiredAPIVersion == "" {
		reject(w, r, http.StatusBadRequest, "bad_review", "the ConversionReview has no request, or one without a uid or desiredAPIVersion")
		return
	}
	crd := strings.TrimPrefix(r.URL.Path, "/")
	resp := &conversionResponse{UID: review.Request.UID, Result: conversionResult{Status: "Success"}}
	objects, err := convert(requestContext(r), crd, *review.Request)
	if err != nil {
		logf(err, crd)
		resp.Result = conversionResult{Status: "Failure", Message: err.Error()}
	} else {
		resp.ConvertedObjects = objects
	}
	if resp.ConvertedObjects == nil {
		resp.ConvertedObjects = []json.RawMessage{}
	}
	out, err := json.Marshal(conversionReview{APIVersion: review.APIVersion, Kind: review.Kind, Response: resp})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
