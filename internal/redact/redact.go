// Package redact masks Secret data in what hook-operator prints: binding
// contexts, hook operations and Kubernetes objects, as dry-run, replay,
// test and record show them. The commands print unredacted output only
// when the user passes --show-secrets.
//
// It works on decoded JSON (map[string]any, []any and scalars, as
// encoding/json decodes into an any) and returns a redacted deep copy; the
// input is never modified. What it masks:
//
//   - a Secret (kind "Secret", apiVersion "v1" or none): each value of data
//     and stringData (the keys stay, so a reader sees which keys exist), and
//     the kubectl.kubernetes.io/last-applied-configuration annotation, which
//     holds the data too;
//   - each item of a SecretList, whose items carry no kind;
//   - the filterResult next to an "object" that is a Secret (a binding
//     context's object, or an element of its objects or snapshots): every
//     string in it;
//   - operations on Secrets: a mergePatch as a Secret, every string of a
//     jsonPatch's values, and the whole jqFilter;
//   - operation fields written as a string of JSON or YAML (object,
//     objects, mergePatch, jsonPatch), which are decoded and redacted by the
//     rules above when they hold Secret data.
//
// A jqFilter result of a binding that watches Secrets but drops the full
// objects has no Secret next to it to recognize it by; Context masks those
// given the names of such bindings.
package redact

// Mask replaces every secret value. It is plain ASCII without <, > or &,
// so that encoding/json prints it as is rather than as \u003c escapes, and
// it is not valid base64, so a redacted Secret cannot be applied by mistake.
const Mask = "[redacted]"

// lastApplied is the annotation kubectl apply stores the whole applied
// object in.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Value returns a deep copy of v, a decoded JSON value, with every secret
// value the package documentation lists replaced by Mask. Values of other
// Go types than those encoding/json decodes into are returned as they are,
// unredacted.
func Value(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return redactMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Value(e)
		}
		return out
	}
	return v
}

func redactMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = Value(v)
	}
	switch {
	case isSecret(m):
		maskSecret(out)
	case isCoreKind(m, "SecretList"):
		if items, ok := out["items"].([]any); ok {
			for _, item := range items {
				if item, ok := item.(map[string]any); ok {
					maskSecret(item)
				}
			}
		}
	}
	if obj, ok := m["object"].(map[string]any); ok && isSecret(obj) {
		if fr, ok := out["filterResult"]; ok {
			out["filterResult"] = maskStrings(fr)
		}
	}
	if _, ok := m["operation"].(string); ok {
		redactOperation(out)
	}
	return out
}

// isSecret reports whether m is a Secret object.
func isSecret(m map[string]any) bool { return isCoreKind(m, "Secret") }

// isCoreKind reports whether m has the kind and the apiVersion v1 (or none).
func isCoreKind(m map[string]any, kind string) bool {
	if m["kind"] != kind {
		return false
	}
	av, ok := m["apiVersion"]
	return !ok || av == nil || av == "" || av == "v1"
}

// maskSecret masks, in place, the fields of a Secret (or of a patch of one)
// that hold its data. m must be a copy.
func maskSecret(m map[string]any) {
	for _, field := range []string{"data", "stringData"} {
		switch d := m[field].(type) {
		case nil:
		case map[string]any:
			for k := range d {
				d[k] = Mask
			}
		default:
			// Not a Secret's shape, but it may still hold the data.
			m[field] = Mask
		}
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, ok := ann[lastApplied]; ok {
				ann[lastApplied] = Mask
			}
		}
	}
}

// maskStrings returns a copy of v with every string replaced by Mask; keys,
// numbers, booleans and nulls stay.
func maskStrings(v any) any {
	switch t := v.(type) {
	case string:
		return Mask
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = maskStrings(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = maskStrings(e)
		}
		return out
	}
	return v
}
