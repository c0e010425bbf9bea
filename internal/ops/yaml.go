package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// yamlToJSON converts one YAML document to JSON. It reads YAML 1.2, as
// shell-operator does for this file: only true and false are booleans, so
// unquoted values like "n", "no" and "on" stay strings. A document whose
// aliases would expand it beyond limit.CheckYAML's bound is refused before
// anything is expanded.
func yamlToJSON(doc []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	var n yaml.Node
	if err := dec.Decode(&n); err != nil && err != io.EOF {
		return nil, err
	}
	if err := limit.CheckYAML(&n, len(doc)); err != nil {
		return nil, err
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	// The decoder stops after one value; anything after it is a mistake
	// (two JSON objects without a "---" between them, say).
	var more any
	if err := dec.Decode(&more); err != io.EOF {
		if err != nil {
			return nil, err
		}
		return nil, errors.New("more than one value in one document: separate documents with a --- line")
	}
	v, err := jsonValue(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// jsonValue turns mappings with non-string keys, which JSON cannot hold,
// into mappings with string keys.
func jsonValue(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			ev, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			x[k] = ev
		}
		return x, nil
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ev, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			switch k.(type) {
			case string, int, int64, uint64, float64, bool:
				m[fmt.Sprint(k)] = ev
			default:
				return nil, fmt.Errorf("mapping key %v is not a string", k)
			}
		}
		return m, nil
	case []any:
		for i, e := range x {
			ev, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			x[i] = ev
		}
		return x, nil
	}
	return v, nil
}
