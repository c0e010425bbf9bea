package ops

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hook-operator/hook-operator/internal/jq"
)

func (p *parser) str(k string, raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.fail(k, "must be a string, got %s", describeJSON(raw))
		return "", false
	}
	if (k == "kind" || k == "name") && s == "" {
		p.fail(k, "must not be empty")
		return "", false
	}
	return s, true
}

func (p *parser) checkAPIVersion(field, s string) {
	if s == "" {
		return
	}
	if _, err := schema.ParseGroupVersion(s); err != nil {
		p.fail(field, "%q is not an apiVersion: write group/version (apps/v1), v1 for the core group, or leave it out for the preferred version", s)
	}
}

func (p *parser) checkNamespace(field, s string) {
	if s == "" {
		return
	}
	if msgs := validation.IsDNS1123Label(s); len(msgs) > 0 {
		p.fail(field, "%q is not a namespace name: %s", s, strings.Join(msgs, "; "))
	}
}

func (p *parser) checkName(field, s string) {
	if msgs := path.IsValidPathSegmentName(s); len(msgs) > 0 {
		p.fail(field, "%q is not an object name: %s", s, strings.Join(msgs, "; "))
	}
}

func (p *parser) parseSubresource(raw json.RawMessage) {
	s, ok := p.str("subresource", raw)
	if !ok {
		return
	}
	// Some shell-operator hooks write "/status".
	s = strings.TrimPrefix(s, "/")
	for _, r := range s {
		if r < 'a' || r > 'z' {
			p.fail("subresource", "%q is not a subresource name: use a lowercase word such as status or scale", s)
			return
		}
	}
	p.op.Subresource = s
}

// structured decodes a field that holds JSON inline, or a string holding
// JSON or YAML. want is "an object" or "an array". It returns the value as
// compact JSON, or nil after reporting a problem.
func (p *parser) structured(k string, raw json.RawMessage, want string) json.RawMessage {
	var s string
	fromString := json.Unmarshal(raw, &s) == nil
	if fromString {
		if strings.TrimSpace(s) == "" {
			p.fail(k, "is an empty string: write %s inline, or a string holding it in JSON or YAML", want)
			return nil
		}
		js, err := yamlToJSON([]byte(s))
		if err != nil {
			p.fail(k, "the string is neither JSON nor YAML: %v", err)
			return nil
		}
		raw = js
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		p.fail(k, "not valid JSON: %v", err)
		return nil
	}
	if got := describeValue(v); got != want {
		if fromString {
			p.fail(k, "the string holds %s, but it must hold %s", got, want)
		} else {
			p.fail(k, "must be %s (inline, or a string holding it in JSON or YAML), got %s", want, got)
		}
		return nil
	}
	compact, err := json.Marshal(v)
	if err != nil {
		p.fail(k, "%v", err)
		return nil
	}
	return compact
}

func (p *parser) parseObject(raw json.RawMessage) {
	js := p.structured("object", raw, "an object")
	if js == nil {
		return
	}
	var m map[string]any
	// utiljson keeps integers int64, as unstructured objects need them.
	if err := utiljson.Unmarshal(js, &m); err != nil {
		p.fail("object", "%v", err)
		return
	}
	if meta, found := m["metadata"]; found {
		if _, isMap := meta.(map[string]any); !isMap {
			p.fail("object.metadata", "must be an object, got %s", describeValue(meta))
			return
		}
	}
	fields := map[string]string{}
	bad := false
	for _, path := range [][]string{
		{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "generateName"}, {"metadata", "namespace"},
	} {
		field := "object." + strings.Join(path, ".")
		s, _, err := unstructured.NestedString(m, path...)
		if err != nil {
			v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
			p.fail(field, "must be a string, got %s", describeValue(v))
			bad = true
		}
		fields[field] = s
	}
	if bad {
		return
	}
	apiVersion, kind := fields["object.apiVersion"], fields["object.kind"]
	name, namespace := fields["object.metadata.name"], fields["object.metadata.namespace"]
	if kind == "" {
		p.fail("object.kind", "required: the kind of the object")
	}
	p.checkAPIVersion("object.apiVersion", apiVersion)
	p.checkNamespace("object.metadata.namespace", namespace)
	switch {
	case name != "":
		p.checkName("object.metadata.name", name)
	case fields["object.metadata.generateName"] != "" && p.op.Type == Create:
	case p.op.Type == Create:
		p.fail("object.metadata.name", "required (or object.metadata.generateName)")
	default:
		p.fail("object.metadata.name", "required: %s needs the name to find an existing object", p.op.Type)
	}
	p.op.Object = &unstructured.Unstructured{Object: m}
	p.op.APIVersion, p.op.Kind, p.op.Namespace, p.op.Name = apiVersion, kind, namespace, name
}

func (p *parser) parseMergePatch(raw json.RawMessage) {
	p.op.MergePatch = p.structured("mergePatch", raw, "an object")
}

func (p *parser) parseJSONPatch(raw json.RawMessage) {
	js := p.structured("jsonPatch", raw, "an array")
	if js == nil {
		return
	}
	var patch []any
	if err := json.Unmarshal(js, &patch); err != nil {
		p.fail("jsonPatch", "%v", err)
		return
	}
	valid := true
	for i, e := range patch {
		if err := checkJSONPatchOp(e); err != nil {
			p.fail(fmt.Sprintf("jsonPatch[%d]", i), "%v", err)
			valid = false
		}
	}
	if valid {
		p.op.JSONPatch = js
	}
}

// jsonPatchOps maps each RFC 6902 op to the member it needs besides "path".
var jsonPatchOps = map[string]string{
	"add": "value", "replace": "value", "test": "value",
	"remove": "", "move": "from", "copy": "from",
}

func checkJSONPatchOp(e any) error {
	m, ok := e.(map[string]any)
	if !ok {
		return fmt.Errorf(`must be an object like {"op": "add", "path": "/a", "value": 1}, got %s`, describeValue(e))
	}
	op, ok := m["op"].(string)
	if !ok {
		return fmt.Errorf(`"op" is required: one of add, remove, replace, move, copy, test`)
	}
	needs, known := jsonPatchOps[op]
	if !known {
		return fmt.Errorf(`"op" %q is not a JSON patch op: use one of add, remove, replace, move, copy, test`, op)
	}
	if err := checkPointer("path", m["path"]); err != nil {
		return err
	}
	switch needs {
	case "value":
		if _, ok := m["value"]; !ok {
			return fmt.Errorf(`"value" is required by op %q`, op)
		}
	case "from":
		if err := checkPointer("from", m["from"]); err != nil {
			return err
		}
	}
	return nil
}

func checkPointer(member string, v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("%q is required: a JSON pointer such as /metadata/labels/app", member)
	}
	if s != "" && !strings.HasPrefix(s, "/") {
		return fmt.Errorf("%q %q is not a JSON pointer: it must start with / (as in /metadata/labels)", member, s)
	}
	return nil
}

func (p *parser) parseJQFilter(raw json.RawMessage) {
	s, ok := p.str("jqFilter", raw)
	if !ok {
		return
	}
	if strings.TrimSpace(s) == "" {
		p.fail("jqFilter", "must not be empty: write a jq program that returns the whole new object, such as .metadata.labels.a = \"b\"")
		return
	}
	f, err := jq.Compile(s)
	if err != nil {
		p.fail("jqFilter", "%v", err)
		return
	}
	p.op.JQFilter = f
}
