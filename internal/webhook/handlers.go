package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/sirupsen/logrus"

	"github.com/hook-operator/hook-operator/internal/tracing"
)

// Handler returns the handler of admission requests (at /hooks/...) and
// of conversion requests (at /<CRD name>) that the listeners serve, with
// neither a slot nor a connection cap (Serve adds them).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/hooks/", s.admissionHandler())
	mux.Handle("/", s.conversionHandler())
	return mux
}

// admissionHandler answers each admission request with what the hook
// bound to its path now answers.
func (s *Server) admissionHandler() http.Handler {
	return &AdmissionHandler{Log: s.log, Run: s.admit}
}

func (s *Server) admit(ctx context.Context, path string, review json.RawMessage) (*AdmissionResponse, error) {
	resp, a, err := s.hooks.Admit(ctx, path, review)
	switch {
	case errors.Is(err, ErrNotServed) && s.servedBefore(path):
		// The binding went away, and the API server still has its
		// webhook: no binding checks the request now.
		s.log.WithField("path", path).Info("an admission request for a binding that went away is allowed: no binding checks it now")
		return &AdmissionResponse{Allowed: true}, nil
	case errors.Is(err, ErrNotServed) || !s.o.DryRun:
		return resp, err
	}
	return s.dryRunAnswer(a, resp, err), nil
}

// dryRunAnswer allows a request whatever the hook answered, logs the
// answer (not the patch, which may hold an object's data: only how many
// operations it has) and tells the client as a warning, which kubectl
// shows, so that a policy can be tried on a live cluster before it blocks
// anyone.
func (s *Server) dryRunAnswer(a Admission, resp *AdmissionResponse, err error) *AdmissionResponse {
	log := s.log.WithFields(logrus.Fields{"hook": a.Hook, "binding": a.Binding.Name})
	out := &AdmissionResponse{Allowed: true}
	var would string
	switch {
	case err != nil:
		log.WithError(err).Warn("dry-run: the request would have been denied (the hook gave no answer); allowed")
		would = "would deny it: " + err.Error()
	case !resp.Allowed:
		log.WithField("message", resp.Message).Info("dry-run: the hook would have denied the request; allowed")
		would = "would deny it: " + resp.Message
		out.Warnings = resp.Warnings
	default:
		var patchOps []json.RawMessage
		_ = json.Unmarshal(resp.Patch, &patchOps)
		log.WithField("patchOperations", len(patchOps)).Info("dry-run: the hook allowed the request")
		would = "allows it"
		if len(patchOps) > 0 {
			would = fmt.Sprintf("allows it with a patch of %d operation(s), not applied", len(patchOps))
		}
		out.Warnings = resp.Warnings
	}
	out.Warnings = append(out.Warnings, fmt.Sprintf("hook-operator dry run: %s, binding %s %s", a.Hook, a.Binding.Name, would))
	return out
}

// conversionHandler answers each ConversionReview with what the hooks
// that convert its CRD now make of its objects.
func (s *Server) conversionHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ServeConversion(w, r, s.convert, func(err error, crd string) {
			s.log.WithError(err).WithField("crd", crd).Warn("conversion failed")
		})
	})
}

func (s *Server) convert(ctx context.Context, crd string, req ConversionRequest) ([]json.RawMessage, error) {
	objects, err := s.hooks.Convert(ctx, crd, req)
	if errors.Is(err, ErrNotServed) && s.servedBefore(ConversionPath(crd)) {
		// The binding went away, and the API server still has the CRD's
		// webhook: convert as the CRD's strategy None, which it gets back,
		// does.
		s.log.WithField("crd", crd).Info("a conversion for a binding that went away sets the apiVersion alone, as strategy None does")
		return setAPIVersion(req)
	}
	return objects, err
}

// setAPIVersion returns the objects of req with the desired apiVersion and
// nothing else changed. Each object is rewritten in turn, the value of its
// apiVersion replaced in its bytes, none parsed whole: a review of many
// small objects parsed into maps took about 20 times its size, and 16 of
// them at once took the operator from 128 to 740 MB.
func setAPIVersion(req ConversionRequest) ([]json.RawMessage, error) {
	version, err := json.Marshal(req.DesiredAPIVersion)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(req.Objects))
	for i, raw := range req.Objects {
		o, err := withAPIVersion(raw, version)
		if err != nil {
			return nil, fmt.Errorf("object %d is not a JSON object: %w", i, err)
		}
		out[i] = o
	}
	return out, nil
}

// withAPIVersion returns the JSON object raw (valid JSON: it comes from
// a parsed review) with its top-level apiVersion set to version (a JSON
// string): each value of the key replaced where it is, or the key added
// first where there is none. The object's bytes are scanned, its top-level
// keys compared and its values skipped, nothing else kept or allocated.
func withAPIVersion(raw json.RawMessage, version []byte) (json.RawMessage, error) {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, errors.New("it does not start with {")
	}
	open := i + 1
	var spans [][2]int // where the values of apiVersion are in raw
	for i = skipSpace(raw, open); i < len(raw) && raw[i] != '}'; i = skipSpace(raw, i+1) {
		keyEnd := skipValue(raw, i)
		key := raw[i:keyEnd]
		start := skipSpace(raw, skipSpace(raw, keyEnd)+1) // past the colon
		end := skipValue(raw, start)
		if isAPIVersionKey(key) {
			spans = append(spans, [2]int{start, end})
		}
		if i = skipSpace(raw, end); i < len(raw) && raw[i] == '}' {
			break
		}
	}
	if len(spans) == 0 {
		out := append(append(append(make([]byte, 0, len(raw)+len(version)+14), raw[:open]...), `"apiVersion":`...), version...)
		if raw[skipSpace(raw, open)] != '}' {
			out = append(out, ',')
		}
		return append(out, raw[open:]...), nil
	}
	out := make([]byte, 0, len(raw)+len(spans)*len(version))
	at := 0
	for _, sp := range spans {
		out = append(append(out, raw[at:sp[0]]...), version...)
		at = sp[1]
	}
	return append(out, raw[at:]...), nil
}

// isAPIVersionKey reports whether the JSON string key is "apiVersion",
// written plainly or with escapes.
func isAPIVersionKey(key []byte) bool {
	if string(key) == `"apiVersion"` {
		return true
	}
	var k string
	return bytes.IndexByte(key, '\\') >= 0 && json.Unmarshal(key, &k) == nil && k == "apiVersion"
}

// skipSpace returns the index of the first byte of data from i on that is
// not JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value of valid JSON data
// that starts at i.
func skipValue(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// requestContext is r's context, with the API server's trace context when
// its request carried one (a traceparent header: the API server's own
// tracing is on), so that the spans of a review join the API server's
// trace.
func requestContext(r *http.Request) context.Context {
	tp := r.Header.Get("traceparent")
	if tp == "" {
		return r.Context()
	}
	return tracing.Extract(r.Context(), tp, r.Header.Get("tracestate"))
}
