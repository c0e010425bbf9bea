package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// The actions of a hook metric operation.
const (
	ActionAdd     = "add"
	ActionSet     = "set"
	ActionObserve = "observe"
	ActionExpire  = "expire"
)

// HookLabel is the label the runtime adds to every hook metric: the hook's
// path under the hooks folder.
const HookLabel = "hook"

// HookOp is one line of a hook's $METRICS_PATH file.
type HookOp struct {
	// Line is the 1-based line number in the file.
	Line int
	Name string
	// Action is add (counter), set (gauge), observe (histogram) or expire
	// (drops Group).
	Action  string
	Value   float64
	Labels  map[string]string
	Buckets []float64
	// Group names a set of series that the next operations with the same
	// group replace as a whole.
	Group string
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// rawOp is a line as written. "add" and "set" may also be given as keys
// holding the value, as shell-operator allows.
type rawOp struct {
	Name    string            `json:"name"`
	Action  string            `json:"action"`
	Value   *float64          `json:"value"`
	Add     *float64          `json:"add"`
	Set     *float64          `json:"set"`
	Labels  map[string]string `json:"labels"`
	Buckets []float64         `json:"buckets"`
	Group   string            `json:"group"`
}

// ParseHookOps reads a $METRICS_PATH file: one JSON object per line, blank
// lines ignored. Every line is checked; the error joins one error per bad
// line, each naming its line number.
func ParseHookOps(data []byte) ([]HookOp, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil // the common case: a run without metrics
	}
	// One allocation for the lines' operations: appending one by one
	// copied 100,000 of them some twenty times over.
	ops := make([]HookOp, 0, bytes.Count(data, []byte{'\n'})+1)
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(data))
	// No line is longer than data: a buffer of its size (at least 4 KiB,
	// at most 16 MiB) is never grown, and small files do not pay for 64 KiB.
	sc.Buffer(make([]byte, min(max(len(data)+1, 4096), 16*1024*1024)), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		op, err := parseHookOp(n, line)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			continue
		}
		ops = append(ops, op)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	return ops, limit.Join(errs)
}

func parseHookOp(n int, line []byte) (HookOp, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var r rawOp
	if err := dec.Decode(&r); err != nil {
		return HookOp{}, fmt.Errorf("not a metric operation (a JSON object with name, action, value, labels, buckets, group): %v", err)
	}
	op := HookOp{Line: n, Name: r.Name, Action: r.Action, Labels: r.Labels, Buckets: r.Buckets, Group: r.Group}
	switch {
	case r.Add != nil && r.Action == "" && r.Value == nil:
		op.Action, op.Value = ActionAdd, *r.Add
	case r.Set != nil && r.Action == "" && r.Value == nil:
		op.Action, op.Value = ActionSet, *r.Set
	case r.Add != nil || r.Set != nil:
		return op, errors.New(`write either "action" and "value", or the shortcut "add" or "set", not both`)
	case r.Value != nil:
		op.Value = *r.Value
	}
	switch op.Action {
	case ActionExpire:
		if op.Group == "" {
			return op, errors.New(`action expire needs the group to drop: add "group"`)
		}
		return op, nil
	case ActionAdd, ActionSet, ActionObserve:
	case "":
		return op, errors.New(`no action: add "action": "add" (counter), "set" (gauge), "observe" (histogram) or "expire"`)
	default:
		return op, fmt.Errorf("action %q: use add, set, observe or expire", op.Action)
	}
	if !metricName.MatchString(op.Name) {
		return op, fmt.Errorf("name %q: a metric name is letters, digits, _ and :, not starting with a digit", op.Name)
	}
	if r.Value == nil && r.Add == nil && r.Set == nil {
		return op, errors.New(`no "value"`)
	}
	if math.IsNaN(op.Value) || math.IsInf(op.Value, 0) {
		return op, errors.New("value must be a finite number")
	}
	if op.Action == ActionAdd && op.Value < 0 {
		return op, fmt.Errorf("add %v: a counter only goes up; use set (a gauge) for values that go down", op.Value)
	}
	for k := range op.Labels {
		if !labelName.MatchString(k) || strings.HasPrefix(k, "__") {
			return op, fmt.Errorf("label %q: a label name is letters, digits and _, not starting with a digit or __", k)
		}
		if k == HookLabel {
			return op, errors.New(`label "hook" is set by the runtime to the hook's path; use another name`)
		}
	}
	if op.Action == ActionObserve {
		if len(op.Buckets) == 0 {
			return op, errors.New(`observe needs "buckets": the histogram's upper bounds, ascending`)
		}
		if !slices.IsSorted(op.Buckets) || len(slices.Compact(slices.Clone(op.Buckets))) != len(op.Buckets) {
			return op, fmt.Errorf("buckets %v: write them ascending, each once", op.Buckets)
		}
	} else if len(op.Buckets) > 0 {
		return op, fmt.Errorf("buckets are for observe, not %s: remove them", op.Action)
	}
	return op, nil
}
