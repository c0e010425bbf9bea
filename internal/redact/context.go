package redact

// Context returns a redacted deep copy of binding contexts (the JSON array
// hooks get, one context, or any value holding contexts), decoded as for
// Value. Besides what Value masks, it masks every string of the jqFilter
// results that come from the bindings named in secretBindings, the
// bindings that watch Secrets: their objects need not be there to be
// recognized (keepFullObjectsInMemory: false drops them), and a filter's
// result may hold the data. In each context (a map with a "binding" key):
//
//   - when its binding is in secretBindings: its filterResult and the
//     filterResult of each element of its objects;
//   - in any context: the filterResult of each element of snapshots[name]
//     when name is in secretBindings (a snapshot is named after the binding
//     whose objects it holds, whatever binding the context is for).
//
// Keys, numbers, booleans and nulls of those results stay, so their shape
// remains visible.
func Context(ctx any, secretBindings map[string]bool) any {
	out := Value(ctx)
	if len(secretBindings) > 0 {
		maskContexts(out, secretBindings)
	}
	return out
}

// maskContexts masks, in place, the filter results of secretBindings in
// every context within v, which must be a copy.
func maskContexts(v any, secretBindings map[string]bool) {
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			maskContexts(e, secretBindings)
		}
	case map[string]any:
		if name, ok := t["binding"].(string); ok {
			maskContext(t, name, secretBindings)
		}
		for _, e := range t {
			maskContexts(e, secretBindings)
		}
	}
}

func maskContext(ctx map[string]any, binding string, secretBindings map[string]bool) {
	if secretBindings[binding] {
		maskFilterResult(ctx)
		maskFilterResults(ctx["objects"])
	}
	if snaps, ok := ctx["snapshots"].(map[string]any); ok {
		for name, objs := range snaps {
			if secretBindings[name] {
				maskFilterResults(objs)
			}
		}
	}
}

// maskFilterResults masks the filterResult of each element of a list of
// binding objects ({"object":...,"filterResult":...}).
func maskFilterResults(objs any) {
	list, _ := objs.([]any)
	for _, o := range list {
		if o, ok := o.(map[string]any); ok {
			maskFilterResult(o)
		}
	}
}

func maskFilterResult(m map[string]any) {
	if fr, ok := m["filterResult"]; ok {
		m["filterResult"] = maskStrings(fr)
	}
}
