package redact

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"
)

// stringFields are the operation fields a hook may write as a string
// holding JSON or YAML instead of inline.
var stringFields = []string{"object", "objects", "mergePatch", "jsonPatch"}

// redactOperation masks, in place, what an operation (already a redacted
// copy) would write into a Secret.
func redactOperation(op map[string]any) {
	secret := targetsSecret(op)
	for _, field := range stringFields {
		s, ok := op[field].(string)
		if !ok {
			continue
		}
		v, err := decodeLoose(s)
		switch {
		case err != nil:
			// The operation is invalid and will be reported as such, but
			// the text may still hold Secret data.
			if secret || strings.Contains(s, "Secret") {
				op[field] = Mask
			}
		case secret:
			op[field] = Value(v)
		default:
			if red := Value(v); !reflect.DeepEqual(red, v) {
				op[field] = red
			}
		}
	}
	if !secret {
		return
	}
	if p, ok := op["mergePatch"].(map[string]any); ok {
		maskSecret(p)
	}
	if p, ok := op["jsonPatch"].([]any); ok {
		for _, e := range p {
			if e, ok := e.(map[string]any); ok {
				if v, ok := e["value"]; ok {
					e["value"] = maskStrings(v)
				}
			}
		}
	}
	if _, ok := op["jqFilter"]; ok {
		// A jq program that writes a Secret spells the values out.
		op["jqFilter"] = Mask
	}
}

// targetsSecret reports whether an operation names a Secret as its target
// (kinds as hooks write them: any case, singular or plural).
func targetsSecret(op map[string]any) bool {
	kind, _ := op["kind"].(string)
	if !strings.EqualFold(kind, "secret") && !strings.EqualFold(kind, "secrets") {
		return false
	}
	av, ok := op["apiVersion"]
	return !ok || av == nil || av == "" || av == "v1"
}

// decodeLoose decodes a string holding JSON or YAML, as the operation
// parser accepts it, keeping numbers exact.
func decodeLoose(s string) (any, error) {
	js, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
