// Package jq compiles and runs jq programs (with gojq) the way hook bindings
// and JQPatch operations use them: compiled once, run many times, on plain
// JSON values.
package jq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"github.com/hook-operator/hook-operator/internal/jsonenc"
)

// Filter is a compiled jq program, safe for concurrent use.
type Filter struct {
	src  string
	code *gojq.Code
	// path, when the program is a plain path of fields (`.`, `.data`,
	// `.metadata.labels`), is its fields (empty, not nil, for `.`):
	// ResultJSON then looks them up without running the program (see
	// pathResult). nil for every other program.
	path []string
}

// Compile parses and compiles src. The error says where the program is wrong.
func Compile(src string) (*Filter, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("jq program %q: %w", src, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("jq program %q: %w", src, err)
	}
	f := &Filter{src: src, code: code}
	f.path = fieldPath(q.String())
	return f, nil
}

// fieldPath returns the fields of a program that is a plain path of
// fields, as gojq prints its parsed form: `.` (no fields, an empty slice)
// or `.a.b` with identifiers; nil for any other program.
func fieldPath(program string) []string {
	switch {
	case program == ".":
		return []string{}
	case fieldPathRE.MatchString(program):
		return strings.Split(program[1:], ".")
	}
	return nil
}

var fieldPathRE = regexp.MustCompile(`^(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

// pathResult is what the path program returns for input, without running
// it: a field of an object, or null for a missing field or a null. ok is
// false where jq would fail (a field of a value that is not an object),
// and for a program that is no path: the program then runs, to fail with
// jq's own error or give its result.
func (f *Filter) pathResult(input any) (v any, ok bool) {
	if f.path == nil {
		return nil, false
	}
	v = input
	for _, field := range f.path {
		switch m := v.(type) {
		case map[string]any:
			v = m[field]
		case nil:
		default:
			return nil, false
		}
	}
	return v, true
}

// String returns the program's source.
func (f *Filter) String() string { return f.src }

// Timeout bounds one run of a program, so that a program that never ends
// (`repeat(.)`) fails instead of stalling a watch or an operation.
var Timeout = 5 * time.Second

// All runs the program on input (a value made of map[string]any, []any,
// string, float64/int, bool and nil, as decoded JSON) and returns every
// output.
func (f *Filter) All(input any) ([]any, error) {
	ctx := newRunContext()
	defer ctx.stop()
	var out []any
	iter := f.code.RunWithContext(ctx, input)
	for {
		v, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if err, isErr := v.(error); isErr {
			if h, ok := err.(*gojq.HaltError); ok && h.Value() == nil {
				return out, nil
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("jq program %q: still running after %v; make sure it ends", f.src, Timeout)
			}
			return nil, fmt.Errorf("jq program %q: %w", f.src, err)
		}
		out = append(out, v)
	}
}

// Result runs the program and folds its outputs into one value, as binding
// contexts carry it in filterResult: one output is itself, several become an
// array, none is null.
func (f *Filter) Result(input any) (any, error) {
	out, err := f.All(input)
	if err != nil {
		return nil, err
	}
	switch len(out) {
	case 0:
		return nil, nil
	case 1:
		return out[0], nil
	default:
		return out, nil
	}
}

// ResultJSON is Result encoded as canonical JSON (object keys sorted), so
// that two results can be compared as bytes.
func (f *Filter) ResultJSON(input any) ([]byte, error) {
	v, ok := f.pathResult(input)
	if !ok {
		var err error
		if v, err = f.Result(input); err != nil {
			return nil, err
		}
	}
	b, err := jsonenc.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("jq program %q: result is not JSON: %w", f.src, err)
	}
	return b, nil
}

// Normalize rewrites, in place, the number types that gojq does not accept
// (int64, int32, float32 ... as found in unstructured Kubernetes objects)
// into int or float64, and returns v. Call it only on values the caller owns.
func Normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				Normalize(e)
			default:
				if n, ok := number(e); ok {
					x[k] = n
				}
			}
		}
	case []any:
		for i, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				Normalize(e)
			default:
				if n, ok := number(e); ok {
					x[i] = n
				}
			}
		}
	default:
		if n, ok := number(v); ok {
			return n
		}
	}
	return v
}

func number(v any) (any, bool) {
	switch n := v.(type) {
	case int64:
		return int(n), true
	case int32:
		return int(n), true
	case int16:
		return int(n), true
	case int8:
		return int(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return int(n), true
	case uint:
		return float64(n), true
	case float32:
		return float64(n), true
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i), true
		}
		f, _ := n.Float64()
		return f, true
	}
	return nil, false
}
