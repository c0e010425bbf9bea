package hook

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/spelling"
)

// checker collects every problem in one hook's configuration while the
// configuration is walked, so that all of them are reported at once.
type checker struct {
	hook string
	errs ConfigErrors
}

func (c *checker) errorf(field, format string, args ...any) {
	c.errs = append(c.errs, &ConfigError{Hook: c.hook, Field: field, Reason: limit.Sprintf(format, args...)})
}

// object is one JSON object of the configuration with the path leading to
// it. Every key read through it is remembered, so that finish can report the
// keys nobody asked for: typos must not pass silently.
type object struct {
	c     *checker
	path  string
	m     map[string]any
	known []string
}

// asObject returns v as an object, or nil after recording a type error.
func (c *checker) asObject(path string, v any) *object {
	m, ok := v.(map[string]any)
	if !ok {
		c.errorf(path, "must be an object (key: value pairs), not %s", describe(v))
		return nil
	}
	return &object{c: c, path: path, m: m}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// at is the path of key in o.
func (o *object) at(key string) string { return join(o.path, key) }

// get returns the value of key. A null value counts as absent: in YAML,
// "labelSelector:" with nothing after it is null, and it means "not set".
func (o *object) get(key string) (any, bool) {
	o.known = append(o.known, key)
	v, ok := o.m[key]
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

func (o *object) has(key string) bool {
	v, ok := o.m[key]
	return ok && v != nil
}

// str returns the string at key; ok is false when it is absent or (after a
// recorded error) not a string.
func (o *object) str(key string) (string, bool) {
	v, ok := o.get(key)
	if !ok {
		return "", false
	}
	return o.c.asString(o.at(key), v)
}

func (c *checker) asString(path string, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		hint := ""
		if _, num := v.(json.Number); num {
			hint = "; quote it"
		} else if _, b := v.(bool); b {
			hint = "; quote it"
		}
		c.errorf(path, "must be a string, not %s%s", describe(v), hint)
		return "", false
	}
	return s, true
}

// required returns the string at key, recording an error when it is absent
// or empty. what describes the value for the message.
func (o *object) required(key, what string) (string, bool) {
	s, ok := o.str(key)
	if !ok {
		if !o.has(key) {
			o.c.errorf(o.at(key), "missing; set it to %s", what)
		}
		return "", false
	}
	if s == "" {
		o.c.errorf(o.at(key), "must not be empty; set it to %s", what)
		return "", false
	}
	return s, true
}

func (o *object) boolean(key string, def bool) bool {
	v, ok := o.get(key)
	if !ok {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		o.c.errorf(o.at(key), "must be true or false, not %s", describe(v))
		return def
	}
	return b
}

func (o *object) integer(key string) (int, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	n, isNum := v.(json.Number)
	if !isNum {
		hint := ""
		if s, isStr := v.(string); isStr {
			if _, err := strconv.Atoi(s); err == nil {
				hint = "; write it without quotes"
			}
		}
		o.c.errorf(o.at(key), "must be an integer, not %s%s", describe(v), hint)
		return 0, false
	}
	if i, err := n.Int64(); err == nil && i >= math.MinInt32 && i <= math.MaxInt32 {
		return int(i), true
	}
	if f, err := n.Float64(); err == nil && f == math.Trunc(f) && f >= math.MinInt32 && f <= math.MaxInt32 {
		return int(f), true
	}
	o.c.errorf(o.at(key), "must be an integer (a whole number of at most 9 digits), not %s", n)
	return 0, false
}

// duration reads a Go duration string such as "30s" or "1h30m"; negative
// durations are errors.
func (o *object) duration(key string) (time.Duration, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	s, isStr := v.(string)
	if !isStr {
		hint := ""
		if n, num := v.(json.Number); num {
			hint = fmt.Sprintf("; add a unit, for example \"%ss\"", n)
		}
		o.c.errorf(o.at(key), "must be a duration string such as \"30s\" or \"5m\", not %s%s", describe(v), hint)
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		o.c.errorf(o.at(key), "%q is not a duration; write a number with a unit (ms, s, m, h), such as \"30s\", \"5m\" or \"1h30m\"", s)
		return 0, false
	}
	if d < 0 {
		o.c.errorf(o.at(key), "%q is negative; use a positive duration", s)
		return 0, false
	}
	return d, true
}

// size reads a number of bytes written as a Kubernetes quantity ("256Mi",
// "1Gi", "500M") or a plain integer, as the operator's size flags are.
func (o *object) size(key string) (int64, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case json.Number:
		s = v.String()
	default:
		o.c.errorf(o.at(key), "must be a size such as \"256Mi\" or \"1Gi\", not %s", describe(v))
		return 0, false
	}
	q, err := resource.ParseQuantity(s)
	n, exact := q.AsInt64()
	if err != nil || !exact || n < 0 {
		o.c.errorf(o.at(key), "%q is not a size; write bytes or a quantity such as \"256Mi\" or \"1Gi\"", s)
		return 0, false
	}
	return n, true
}

func (o *object) list(key string) ([]any, bool) {
	v, ok := o.get(key)
	if !ok {
		return nil, false
	}
	l, isList := v.([]any)
	if !isList {
		hint := ""
		if s, isStr := v.(string); isStr {
			hint = fmt.Sprintf("; write it as a list: [%q]", s)
		}
		o.c.errorf(o.at(key), "must be a list, not %s%s", describe(v), hint)
		return nil, false
	}
	return l, true
}

// strings reads a list of strings. ok is true when the key is set to a list
// of strings, even an empty one; a list with a wrong element is reported and
// then treated as absent, so that indexes in later messages stay right.
func (o *object) strings(key string) (out []string, ok bool) {
	l, ok := o.list(key)
	if !ok {
		return nil, false
	}
	out = []string{}
	for i, v := range l {
		s, isStr := o.c.asString(index(o.at(key), i), v)
		if !isStr {
			ok = false
		}
		out = append(out, s)
	}
	if !ok {
		return nil, false
	}
	return out, true
}

// object returns the object at key, or nil when it is absent or not an
// object (an error is recorded then).
func (o *object) object(key string) *object {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	return o.c.asObject(o.at(key), v)
}

// objects returns the objects of the list at key with their paths; elements
// that are not objects are reported and left out.
func (o *object) objects(key string) []*object {
	l, ok := o.list(key)
	if !ok {
		return nil
	}
	var out []*object
	for i, v := range l {
		if e := o.c.asObject(index(o.at(key), i), v); e != nil {
			out = append(out, e)
		}
	}
	return out
}

// finish reports every key of o that was not read, suggesting the known key
// it most likely misspells.
func (o *object) finish() {
	var unknown []string
	for k := range o.m {
		if !slices.Contains(o.known, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		if s := spelling.DidYouMean(k, o.known); s != "" {
			o.c.errorf(o.at(k), "unknown key; %s", s)
			continue
		}
		o.c.errorf(o.at(k), "unknown key; remove it (known keys here: %s)", strings.Join(sorted(o.known), ", "))
	}
}

func sorted(list []string) []string {
	out := append([]string(nil), list...)
	sort.Strings(out)
	// drop duplicates: a key may be read twice
	uniq := out[:0]
	for i, s := range out {
		if i == 0 || s != out[i-1] {
			uniq = append(uniq, s)
		}
	}
	return uniq
}

// describe names the JSON type of v for error messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", x)
	case json.Number:
		return "the number " + x.String()
	case bool:
		return fmt.Sprintf("the boolean %t", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// member is the path of a user-chosen key (a label name) in the object at
// path: path.key when key is a plain word, path["key"] otherwise.
func member(path, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return join(path, key)
	}
	return fmt.Sprintf("%s[%q]", path, key)
}

// oneOf records an error at path unless s is one of allowed, suggesting the
// allowed value s most likely misspells.
func (c *checker) oneOf(path, s, what string, allowed ...string) bool {
	if slices.Contains(allowed, s) {
		return true
	}
	hint := ""
	if q := spelling.DidYouMean(s, allowed); q != "" {
		hint = " (" + q + ")"
	}
	c.errorf(path, "%q is not %s%s; use %s", s, what, hint, orList(allowed))
	return false
}

// orList renders "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
