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

// str decodes the string at field ("kind", "parent.name"). Kinds, names
// and bindings must not be empty.
func (p *parser) str(field string, raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.fail(field, "must be a string, got %s", describeJSON(raw))
		return "", false
	}
	last := field[strings.LastIndex(field, ".")+1:]
	if (last == "kind" || last == "name" || last == "binding") && s == "" {
		p.fail(field, "must not be empty")
		return "", false
	}
	return s, true
}

func (p *parser) boolean(field string, raw json.RawMessage) bool {
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		p.fail(field, "must be true or false, got %s", describeJSON(raw))
	}
	return b
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
	t, ok := p.object("object", m)
	if !ok {
		return
	}
	p.op.Object = &unstructured.Unstructured{Object: m}
	p.op.APIVersion, p.op.Kind, p.op.Namespace, p.op.Name = t.APIVersion, t.Kind, t.Namespace, t.Name
}

// object checks the object m found at field ("object", "objects[2]") and
// returns its apiVersion, kind, namespace and name. ok is false when these
// cannot be read; other problems are reported and ok is true.
func (p *parser) object(field string, m map[string]any) (t ObjectRef, ok bool) {
	if meta, found := m["metadata"]; found {
		if _, isMap := meta.(map[string]any); !isMap {
			p.fail(field+".metadata", "must be an object, got %s", describeValue(meta))
			return t, false
		}
	}
	fields := map[string]string{}
	bad := false
	for _, path := range [][]string{
		{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "generateName"}, {"metadata", "namespace"},
	} {
		key := strings.Join(path, ".")
		s, _, err := unstructured.NestedString(m, path...)
		if err != nil {
			v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
			p.fail(field+"."+key, "must be a string, got %s", describeValue(v))
			bad = true
		}
		fields[key] = s
	}
	if bad {
		return t, false
	}
	t = ObjectRef{APIVersion: fields["apiVersion"], Kind: fields["kind"], Namespace: fields["metadata.namespace"], Name: fields["metadata.name"]}
	if t.Kind == "" {
		p.fail(field+".kind", "required: the kind of the object")
	}
	p.checkAPIVersion(field+".apiVersion", t.APIVersion)
	p.checkNamespace(field+".metadata.namespace", t.Namespace)
	switch {
	case t.Name != "":
		p.checkName(field+".metadata.name", t.Name)
	case fields["metadata.generateName"] != "" && p.op.Type == Create:
	case p.op.Type == Create:
		p.fail(field+".metadata.name", "required (or %s.metadata.generateName)", field)
	case p.op.Type == Apply || p.op.Type == ApplySet:
		p.fail(field+".metadata.name", "required: %s needs the name (server-side apply cannot use metadata.generateName)", p.op.Type)
	default:
		p.fail(field+".metadata.name", "required: %s needs the name to find an existing object", p.op.Type)
	}
	return t, true
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
