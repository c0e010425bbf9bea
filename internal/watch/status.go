package watch

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/hook-operator/hook-operator/internal/applyset"
)

// statusOnly reports whether two versions of an object, given as JSON,
// differ at most in status, the runtime's own inventory annotations, and
// the metadata the API server changes on every write. An object that does
// not decode counts as changed.
func statusOnly(old, cur json.RawMessage) bool {
	o, err := decodeObject(old)
	if err != nil {
		return false
	}
	c, err := decodeObject(cur)
	if err != nil {
		return false
	}
	return reflect.DeepEqual(withoutStatus(o), withoutStatus(c))
}

// decodeObject decodes an object's JSON, numbers as written, so that any
// two different numbers compare different.
func decodeObject(data json.RawMessage) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var m map[string]any
	err := d.Decode(&m)
	return m, err
}

func withoutStatus(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "status" {
			out[k] = v
		}
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(md))
		for k, v := range md {
			if k != "resourceVersion" && k != "managedFields" && k != "annotations" {
				m[k] = v
			}
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			kept := map[string]any{}
			for k, v := range ann {
				if !strings.HasPrefix(k, applyset.InventoryPrefix) {
					kept[k] = v
				}
			}
			if len(kept) > 0 {
				m["annotations"] = kept
			}
		}
		out["metadata"] = m
	}
	return out
}
