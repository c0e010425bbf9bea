package webhook

import (
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
// nothing else changed.
func setAPIVersion(req ConversionRequest) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(req.Objects))
	for i, raw := range req.Objects {
		var o map[string]any
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, fmt.Errorf("object %d is not a JSON object: %w", i, err)
		}
		o["apiVersion"] = req.DesiredAPIVersion
		data, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
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
