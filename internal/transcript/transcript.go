// Package transcript is the printed record of hook runs that
// `start --dry-run`, `replay` and `test` write: for each run, the binding
// contexts the hook read, the operations it wrote, and what they changed.
// Its JSON and YAML forms are a stable interface (docs/testing.md): fields
// are only ever added.
package transcript

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hook-operator/hook-operator/internal/executor"
	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/ops"
	"github.com/hook-operator/hook-operator/internal/redact"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// Run is one hook run.
type Run struct {
	// Hook is the hook's path under the hooks folder.
	Hook string `json:"hook"`
	// Binding names the bindings of the run's contexts, comma-separated.
	Binding string `json:"binding"`
	Queue   string `json:"queue"`
	// Contexts is the JSON array the hook read from $BINDING_CONTEXT_PATH.
	Contexts any `json:"contexts"`
	// Operations are the operations the hook wrote, as it wrote them.
	Operations []any `json:"operations,omitempty"`
	// Changes are the objects the operations changed, in order.
	Changes []Change `json:"changes,omitempty"`
	// Answer is what the hook of an admission request answered (allowed,
	// message, warnings, and a mutating hook's patch as JSON), or of a
	// conversion step (convertedObjects or failedMessage).
	Answer any `json:"answer,omitempty"`
	// Error says why the run failed; empty when it succeeded.
	Error string `json:"error,omitempty"`
}

// Change is what one write did (or, in a dry-run, would do) to one object.
type Change struct {
	// Action is Created, Updated or Deleted; for --dry-run=server it is the
	// request sent (Create, Update, Patch, Delete).
	Action string `json:"action"`
	// Object names it: "v1/ConfigMap ns/name".
	Object string `json:"object"`
	// Diff is a unified diff of the object as YAML, before and after
	// (resourceVersion and managedFields left out).
	Diff string `json:"diff,omitempty"`
	// Result is the object the API server answered a dry-run request with.
	Result any `json:"result,omitempty"`
	// Error is the API server's refusal of a dry-run request.
	Error string `json:"error,omitempty"`
}

// Options control what a transcript shows.
type Options struct {
	// ShowSecrets prints Secret data as it is; otherwise it is masked (see
	// package redact).
	ShowSecrets bool
}

// New makes the Run of an executor's report, with the changes its sink
// recorded. Contexts and operations are printed as JSON values; output a
// hook wrote that is not valid operations is printed as a string.
func New(r executor.Report, changes []Change, opts Options) Run {
	run := Run{Hook: r.Hook.Name, Binding: r.Bindings, Queue: r.Queue, Changes: changes}
	if run.Queue == "" {
		run.Queue = hook.DefaultQueue
	}
	var contexts any
	if len(r.Contexts) > 0 {
		contexts = decode(r.Contexts)
	}
	if !opts.ShowSecrets {
		contexts = redact.Context(contexts, secretBindings(r.Hook))
	}
	run.Contexts = contexts
	if len(r.Operations) > 0 {
		docs, err := ops.Documents(r.Operations)
		if err != nil {
			run.Operations = []any{string(r.Operations)}
		}
		for _, d := range docs {
			v := decode(d)
			if !opts.ShowSecrets {
				v = redact.Value(v)
			}
			run.Operations = append(run.Operations, v)
		}
	}
	if r.Answer != nil {
		run.Answer = answer(r.Answer, opts)
	}
	if r.Err != nil {
		run.Error = r.Err.Error()
	}
	return run
}

// answer is an admission or conversion answer as printed: JSON values, the
// patch decoded, secrets masked.
func answer(a any, opts Options) any {
	out := map[string]any{}
	switch a := a.(type) {
	case *webhook.AdmissionResponse:
		out["allowed"] = a.Allowed
		if a.Message != "" {
			out["message"] = a.Message
		}
		if len(a.Warnings) > 0 {
			out["warnings"] = a.Warnings
		}
		if len(a.Patch) > 0 {
			out["patch"] = decode(a.Patch)
		}
	case *webhook.ConversionResponse:
		if a.FailedMessage != "" {
			out["failedMessage"] = a.FailedMessage
		} else {
			objects := make([]any, len(a.ConvertedObjects))
			for i, o := range a.ConvertedObjects {
				objects[i] = decode(o)
			}
			out["convertedObjects"] = objects
		}
	default:
		return nil
	}
	if !opts.ShowSecrets {
		return redact.Value(out)
	}
	return out
}

// decode reads JSON keeping numbers exact.
func decode(data []byte) any {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(data)
	}
	return v
}

// secretBindings names the kubernetes bindings of h that watch Secrets:
// their filter results may hold secret values.
func secretBindings(h *hook.Hook) map[string]bool {
	out := map[string]bool{}
	for _, b := range h.Config.Kubernetes {
		k := strings.ToLower(b.Kind)
		if (b.APIVersion == "" || b.APIVersion == "v1") && (k == "secret" || k == "secrets") {
			out[b.Name] = true
			if b.Group != "" {
				out[b.Group] = true
			}
		}
	}
	return out
}

// ObjectName names an object for Change.Object: "apps/v1/Deployment ns/name".
func ObjectName(apiVersion, kind, namespace, name string) string {
	if namespace != "" {
		name = namespace + "/" + name
	}
	return fmt.Sprintf("%s/%s %s", apiVersion, kind, name)
}
