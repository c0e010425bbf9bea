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
	"sort"
	"strings"
	"sync"

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
	var ops []HookOp
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

// HookMetrics holds the metrics hooks write, and is the Collector serving
// them. A metric name keeps the kind (counter, gauge, histogram), label
// names and buckets of its first use, by any hook.
type HookMetrics struct {
	mu       sync.Mutex
	families map[string]*family
	// reserved says whether a name is one of the operator's own metrics,
	// which hooks cannot take; nil reserves none.
	reserved func(name string) bool
	counts   hookCounts
}

type family struct {
	kind    string // ActionAdd, ActionSet or ActionObserve
	labels  []string
	buckets []float64
	series  map[string]*series
}

type series struct {
	labels  []string // values, in family.labels order
	group   string
	value   float64 // counter or gauge
	count   uint64  // histogram
	sum     float64
	buckets []uint64 // cumulative counts per family.buckets
}

// NewHookMetrics returns an empty store.
func NewHookMetrics() *HookMetrics { return &HookMetrics{families: map[string]*family{}} }

// Check reports the operations that conflict with metrics already held (a
// name used as another kind, or with other label names or buckets), one
// error per line, without changing anything.
func (h *HookMetrics) Check(hook string, ops []HookOp) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]*family{}
	var errs []error
	for _, op := range ops {
		if op.Action == ActionExpire {
			continue
		}
		if h.reserved != nil && h.reserved(op.Name) {
			errs = append(errs, fmt.Errorf("line %d: metric %s: the name is one of the operator's own metrics; choose another", op.Line, op.Name))
			continue
		}
		want := newFamily(op)
		f := h.families[op.Name]
		if f == nil {
			f = seen[op.Name]
		}
		if f == nil {
			seen[op.Name] = want
			continue
		}
		if err := f.compatible(want); err != nil {
			errs = append(errs, fmt.Errorf("line %d: metric %s: %w", op.Line, op.Name, err))
		}
	}
	return limit.Join(errs)
}

// Apply applies the operations of one run of hook, checked with Check:
// every group the operations name is dropped first, then the values are
// added, set or observed; expire drops its group.
//
// A new series over the caps of SetLimits is dropped and counted; the
// first drop of each hook is logged (HookLimits.Warn).
func (h *HookMetrics) Apply(hook string, ops []HookOp) {
	h.mu.Lock()
	warn := h.counts.limits.Warn
	msg := h.apply(hook, ops)
	h.mu.Unlock()
	warnOnce(warn, msg)
}

// apply is Apply with h.mu held; it returns what to log.
func (h *HookMetrics) apply(hook string, ops []HookOp) string {
	for _, g := range groups(ops) {
		h.dropGroup(g)
	}
	var dropped drops
	for _, op := range ops {
		if op.Action == ActionExpire {
			h.dropGroup(op.Group)
			continue
		}
		f := h.families[op.Name]
		if f == nil {
			f = newFamily(op)
		}
		key, values := f.key(hook, op.Labels)
		s := f.series[key]
		if s == nil {
			if reason := h.counts.admit(hook, len(op.Name)+seriesBytes(op.Labels)+8*len(f.buckets)); reason != "" {
				dropped.add(reason, op.Name)
				continue
			}
			h.families[op.Name] = f
			s = &series{labels: values, buckets: make([]uint64, len(f.buckets))}
			f.series[key] = s
			h.counts.added(hook, 1)
		}
		s.group = op.Group
		switch op.Action {
		case ActionAdd:
			s.value += op.Value
		case ActionSet:
			s.value = op.Value
		case ActionObserve:
			s.count++
			s.sum += op.Value
			for i, b := range f.buckets {
				if op.Value <= b {
					s.buckets[i]++
				}
			}
		}
	}
	return h.counts.report(hook, dropped)
}

// seriesBytes is the size of a series' label names and values (a
// histogram's counts take 8 bytes per bucket on top).
func seriesBytes(labels map[string]string) int {
	n := 0
	for k, v := range labels {
		n += len(k) + len(v)
	}
	return n
}

func groups(ops []HookOp) []string {
	var out []string
	for _, op := range ops {
		if op.Group != "" && op.Action != ActionExpire && !slices.Contains(out, op.Group) {
			out = append(out, op.Group)
		}
	}
	return out
}

func (h *HookMetrics) dropGroup(g string) {
	for name, f := range h.families {
		for k, s := range f.series {
			if s.group == g {
				delete(f.series, k)
				h.counts.added(s.labels[0], -1)
			}
		}
		if len(f.series) == 0 {
			delete(h.families, name)
		}
	}
}

func newFamily(op HookOp) *family {
	labels := []string{HookLabel}
	for k := range op.Labels {
		labels = append(labels, k)
	}
	sort.Strings(labels[1:])
	return &family{kind: op.Action, labels: labels, buckets: op.Buckets, series: map[string]*series{}}
}

func (f *family) compatible(o *family) error {
	kinds := map[string]string{ActionAdd: "counter (add)", ActionSet: "gauge (set)", ActionObserve: "histogram (observe)"}
	switch {
	case f.kind != o.kind:
		return fmt.Errorf("is a %s; it cannot also be a %s", kinds[f.kind], kinds[o.kind])
	case !slices.Equal(f.labels, o.labels):
		return fmt.Errorf("has the labels %v; every value needs the same label names, not %v", f.labels, o.labels)
	case !slices.Equal(f.buckets, o.buckets):
		return fmt.Errorf("has the buckets %v; it cannot change them to %v", f.buckets, o.buckets)
	}
	return nil
}

// key returns the series key and label values for hook and labels.
func (f *family) key(hook string, labels map[string]string) (string, []string) {
	values := make([]string, len(f.labels))
	values[0] = hook
	for i, l := range f.labels[1:] {
		values[i+1] = labels[l]
	}
	return strings.Join(values, "\x00"), values
}

// Names implements Collector: the names hooks write are not known in
// advance.
func (h *HookMetrics) Names() []string { return nil }

// Collect implements Collector.
func (h *HookMetrics) Collect() []Family {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Family, 0, len(h.families))
	for name, f := range h.families {
		fam := Family{Name: name, Help: "Written by hooks to $METRICS_PATH.", Labels: f.labels, Series: make([]Series, 0, len(f.series))}
		switch f.kind {
		case ActionAdd:
			fam.Kind = Counter
		case ActionSet:
			fam.Kind = Gauge
		case ActionObserve:
			fam.Kind, fam.Buckets = Histogram, f.buckets
		}
		for _, s := range f.series {
			fam.Series = append(fam.Series, Series{Values: s.labels, Value: s.value, Count: s.count, Sum: s.sum, Cumulative: slices.Clone(s.buckets)})
		}
		out = append(out, fam)
	}
	return out
}
