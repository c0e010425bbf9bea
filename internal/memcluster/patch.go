package memcluster

import (
	"encoding/json"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// patch applies a patch of type pt to the object q names, through
// subresource sub ("", "status" or "scale"). An apply of a missing object
// creates it.
func (c *Cluster) patch(q req, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub string) (*unstructured.Unstructured, error) {
	gr := q.gr()
	if pt == types.ApplyPatchType && opts.FieldManager == "" {
		return nil, badRequest(gr, q.name, "fieldManager is required for apply requests")
	}
	e, err := c.load(q)
	if err != nil {
		return nil, err
	}
	if e == nil {
		if pt == types.ApplyPatchType && sub == "" {
			cfg, err := decodeApplied(q, data)
			if err != nil {
				return nil, err
			}
			return c.create(q, cfg)
		}
		return nil, notFound(gr, q.name)
	}
	switch sub {
	case "", "status":
		next, err := patched(q, e.obj, pt, data)
		if err != nil {
			return nil, err
		}
		if err := place(q, next); err != nil {
			return nil, err
		}
		return c.write(q, e, next, sub)
	case "scale":
		next, err := patched(q, scaleOf(e.obj), pt, data)
		if err != nil {
			return nil, err
		}
		return c.writeScale(q, e, next)
	}
	return nil, noSubresource(gr, sub, q.name)
}

// patched returns a new object: cur with the patch applied.
func patched(q req, cur *unstructured.Unstructured, pt types.PatchType, data []byte) (*unstructured.Unstructured, error) {
	gr := q.gr()
	switch pt {
	case types.ApplyPatchType:
		cfg, err := decodeApplied(q, data)
		if err != nil {
			return nil, err
		}
		out := cur.DeepCopy()
		mergeApplied(out.Object, cfg.Object)
		return out, nil
	case types.StrategicMergePatchType:
		return nil, badRequest(gr, q.name, "strategic merge patch is not supported in memory; use a merge patch (application/merge-patch+json)")
	case types.MergePatchType, types.JSONPatchType:
	default:
		return nil, badRequest(gr, q.name, "patch type %q is not supported", pt)
	}
	doc, err := json.Marshal(cur.Object)
	if err != nil {
		return nil, badRequest(gr, q.name, "%v", err)
	}
	var out []byte
	if pt == types.MergePatchType {
		if out, err = jsonpatch.MergePatch(doc, data); err != nil {
			return nil, badRequest(gr, q.name, "merge patch: %v", err)
		}
	} else {
		p, err := jsonpatch.DecodePatch(data)
		if err != nil {
			return nil, badRequest(gr, q.name, "JSON patch: %v", err)
		}
		if out, err = p.Apply(doc); err != nil {
			return nil, invalid(gr, q.name, "JSON patch: %v", err)
		}
	}
	obj, err := decodeObject(out)
	if err != nil {
		return nil, invalid(gr, q.name, "the patched object is %v", err)
	}
	return obj, nil
}

// decodeApplied reads the configuration of a server-side apply: a JSON or
// YAML object with apiVersion and kind.
func decodeApplied(q req, data []byte) (*unstructured.Unstructured, error) {
	gr := q.gr()
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, badRequest(gr, q.name, "apply: %v", err)
	}
	raw, err := decodeObject(js)
	if err != nil {
		return nil, badRequest(gr, q.name, "apply: the configuration is %v", err)
	}
	// Merged into nothing, to drop its nulls.
	cfg := &unstructured.Unstructured{Object: map[string]any{}}
	mergeApplied(cfg.Object, raw.Object)
	if cfg.GetAPIVersion() == "" || cfg.GetKind() == "" {
		return nil, badRequest(gr, q.name, "apply: the configuration needs apiVersion and kind")
	}
	return cfg, nil
}

// mergeApplied merges an applied configuration into dst, the approximation
// of server-side apply: maps merge key by key, any other value (lists
// included) replaces, and a null is ignored. dst must be the caller's own.
func mergeApplied(dst, cfg map[string]any) {
	for k, v := range cfg {
		switch cv := v.(type) {
		case nil:
		case map[string]any:
			dv, ok := dst[k].(map[string]any)
			if !ok {
				dv = map[string]any{}
				dst[k] = dv
			}
			mergeApplied(dv, cv)
		default:
			dst[k] = v
		}
	}
}
