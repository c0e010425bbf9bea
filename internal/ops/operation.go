package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/spelling"
)

// fieldNames are the fields an operation may have: shell-operator's, then
// those of the extensions.
var fieldNames = []string{
	"operation", "apiVersion", "kind", "namespace", "name", "subresource",
	"object", "mergePatch", "jsonPatch", "jqFilter", "ignoreMissingObject",
	"parent", "force", "objects", "owner", "status", "observedGeneration",
	"after", "binding",
}

// accepts lists the fields each type accepts besides "operation".
func accepts(typ string) []string {
	target := []string{"apiVersion", "kind", "namespace", "name"}
	switch {
	case isCreate(typ):
		return []string{"object"}
	case isDelete(typ):
		return target
	}
	switch typ {
	case Apply:
		return []string{"object", "force", "parent"}
	case ApplySet:
		return []string{"name", "parent", "objects", "force", "owner"}
	case Status:
		return append(target, "status", "observedGeneration", "ignoreMissingObject")
	case Requeue:
		return append(target, "after", "binding")
	}
	target = append(target, "subresource", "ignoreMissingObject")
	switch typ {
	case MergePatch:
		return append(target, "mergePatch")
	case JSONPatch:
		return append(target, "jsonPatch")
	case JQPatch:
		return append(target, "jqFilter")
	}
	return nil
}

// required lists the fields each type needs.
func required(typ string) []string {
	switch {
	case takesObject(typ):
		return []string{"object"}
	case isDelete(typ):
		return []string{"kind", "name"}
	}
	switch typ {
	case MergePatch:
		return []string{"kind", "name", "mergePatch"}
	case JSONPatch:
		return []string{"kind", "name", "jsonPatch"}
	case JQPatch:
		return []string{"kind", "name", "jqFilter"}
	case ApplySet:
		return []string{"name", "parent", "objects"}
	case Status:
		return []string{"kind", "name", "status"}
	case Requeue:
		return []string{"after", "name"}
	}
	return nil
}

// parser collects the problems of one operation.
type parser struct {
	op   Operation
	errs []*Error
}

func (p *parser) fail(field string, format string, args ...any) {
	p.errs = append(p.errs, &Error{Index: p.op.Index, Field: field, Err: errors.New(limit.Sprintf(format, args...))})
}

// parseOperation decodes and validates the operation at index.
func parseOperation(index int, raw json.RawMessage) (Operation, []*Error) {
	p := &parser{op: Operation{Index: index}}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		p.fail("", "must be an object with an \"operation\" field, got %s", describeJSON(raw))
		return p.op, p.errs
	}
	for k, v := range fields {
		// A null value reads as an absent field, as YAML writes "name:" for null.
		if string(v) == "null" {
			delete(fields, k)
		}
	}

	typeKnown := p.parseType(fields["operation"])
	if p.op.Type == ApplySet {
		p.op.Owner = true
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "operation" {
			continue
		}
		if !slices.Contains(fieldNames, k) {
			p.unknownField(k)
			continue
		}
		// Without a type, which fields belong is unknown; its error is enough.
		if !typeKnown {
			continue
		}
		if !slices.Contains(accepts(p.op.Type), k) {
			p.fail(k, "%s", notAccepted(p.op.Type, k))
			continue
		}
		p.parseField(k, fields[k])
	}
	if !typeKnown {
		return p.op, p.errs
	}
	p.requireFields(fields)
	if p.op.Type == Requeue && p.op.APIVersion != "" && p.op.Kind == "" {
		p.fail("apiVersion", "needs kind: give both, or neither to leave the kind to the binding")
	}
	desc := p.op.String()
	for _, e := range p.errs {
		e.Op = desc
	}
	return p.op, p.errs
}

func (p *parser) parseType(raw json.RawMessage) bool {
	if raw == nil {
		p.fail("operation", "required: one of %s", strings.Join(Types, ", "))
		return false
	}
	var typ string
	if err := json.Unmarshal(raw, &typ); err != nil {
		p.fail("operation", "must be a string, one of %s; got %s", strings.Join(Types, ", "), describeJSON(raw))
		return false
	}
	if slices.Contains(Types, typ) {
		p.op.Type = typ
		return true
	}
	if q := spelling.DidYouMean(typ, Types); q != "" {
		p.fail("operation", "unknown operation %q: %s", typ, q)
	} else {
		p.fail("operation", "unknown operation %q: use one of %s", typ, strings.Join(Types, ", "))
	}
	return false
}

func (p *parser) unknownField(k string) {
	switch {
	case k == "ignoreHookError":
		p.fail(k, "not supported: operations are applied only when the hook exits 0; remove the field")
	case spelling.DidYouMean(k, fieldNames) != "":
		p.fail(k, "unknown field: %s", spelling.DidYouMean(k, fieldNames))
	default:
		p.fail(k, "unknown field: an operation has only the fields %s", strings.Join(fieldNames, ", "))
	}
}

// notAccepted explains why a known field does not belong to typ.
func notAccepted(typ, field string) string {
	if takesObject(typ) {
		switch field {
		case "apiVersion", "kind", "name":
			return fmt.Sprintf("not used by %s: the target comes from object; set object.%s instead", typ, field)
		case "namespace":
			return fmt.Sprintf("not used by %s: the target comes from object; set object.metadata.namespace instead", typ)
		}
	}
	var users []string
	for _, t := range Types {
		if slices.Contains(accepts(t), field) {
			users = append(users, t)
		}
	}
	return fmt.Sprintf("not used by %s, only by %s; remove it or change the operation", typ, strings.Join(users, ", "))
}

func (p *parser) parseField(k string, raw json.RawMessage) {
	switch k {
	case "apiVersion":
		if s, ok := p.str(k, raw); ok {
			p.op.APIVersion = s
			p.checkAPIVersion(k, s)
		}
	case "kind":
		p.op.Kind, _ = p.str(k, raw)
	case "namespace":
		if s, ok := p.str(k, raw); ok {
			p.op.Namespace = s
			p.checkNamespace(k, s)
		}
	case "name":
		s, ok := p.str(k, raw)
		switch {
		case !ok:
		case p.op.Type == ApplySet:
			p.op.SetName = s
			p.checkSetName(k, s)
		default:
			p.op.Name = s
			p.checkName(k, s)
		}
	case "subresource":
		p.parseSubresource(raw)
	case "ignoreMissingObject":
		p.op.IgnoreMissingObject = p.boolean(k, raw)
	case "force":
		p.op.Force = p.boolean(k, raw)
	case "owner":
		p.op.Owner = p.boolean(k, raw)
	case "observedGeneration":
		p.op.ObservedGeneration = p.boolean(k, raw)
	case "object":
		p.parseObject(raw)
	case "mergePatch":
		p.parseMergePatch(raw)
	case "jsonPatch":
		p.parseJSONPatch(raw)
	case "jqFilter":
		p.parseJQFilter(raw)
	case "parent":
		p.parseParent(raw)
	case "objects":
		p.parseObjects(raw)
	case "status":
		p.parseStatus(raw)
	case "after":
		p.parseAfter(raw)
	case "binding":
		p.op.Binding, _ = p.str(k, raw)
	}
}

// requireFields reports the fields the operation's type needs and lacks.
func (p *parser) requireFields(fields map[string]json.RawMessage) {
	for _, k := range required(p.op.Type) {
		if _, ok := fields[k]; !ok {
			p.fail(k, "required by %s", p.op.Type)
		}
	}
}

// describeJSON names the type of a JSON value for messages.
func describeJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "something that is not JSON"
	}
	return describeValue(v)
}

func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case float64, int64, int, json.Number:
		return fmt.Sprintf("number %v", x)
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("string %q", x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
