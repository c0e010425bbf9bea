package metrics

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hook-operator/hook-operator/internal/limit"
)

// HookMetrics holds the metrics hooks write, and is the Collector serving
// them. A metric name keeps the kind (counter, gauge, histogram), label
// names and buckets of its first use, by any hook.
//
// A run's operations cost time linear in their number, and most of that
// is spent before mu is taken (see prepare): /metrics, which needs mu,
// waits at most for one run's map updates. A run that wrote 100,000 lines,
// each in a group of its own, held mu for 16.7 s before (issue 60).
type HookMetrics struct {
	mu       sync.Mutex
	families map[string]*family
	// groups holds the series of each group, so that dropping a group
	// costs its own series, not a walk over every series held.
	groups map[string]map[*series]struct{}
	// reserved says whether a name is one of the operator's own metrics,
	// which hooks cannot take; nil reserves none. Set once, before use.
	reserved func(name string) bool
	counts   hookCounts
}

// family is one metric name as hooks write it. Its name, kind, labels and
// buckets never change once made, so they may be read without mu; series
// needs mu.
type family struct {
	name    string
	kind    string // ActionAdd, ActionSet or ActionObserve
	labels  []string
	buckets []float64
	series  map[string]*series
}

type series struct {
	fam     *family
	key     string   // in fam.series
	labels  []string // values, in family.labels order
	group   string
	value   float64 // counter or gauge
	count   uint64  // histogram
	sum     float64
	buckets []uint64 // cumulative counts per family.buckets
}

// NewHookMetrics returns an empty store.
func NewHookMetrics() *HookMetrics {
	return &HookMetrics{families: map[string]*family{}, groups: map[string]map[*series]struct{}{}}
}

// Check reports the operations that conflict with metrics already held (a
// name used as another kind, or with other label names or buckets), one
// error per line, without changing anything. It holds mu only to look up
// the names the operations use, once each.
func (h *HookMetrics) Check(hook string, ops []HookOp) error {
	// The family each name has: the one held, else the one its first
	// line in this run makes.
	fams := map[string]*family{}
	for _, op := range ops {
		if op.Action != ActionExpire {
			fams[op.Name] = nil
		}
	}
	h.mu.Lock()
	for name := range fams {
		fams[name] = h.families[name]
	}
	h.mu.Unlock()
	reserved := map[string]bool{}
	for name := range fams {
		reserved[name] = h.reserved != nil && h.reserved(name)
	}
	var errs []error
	for _, op := range ops {
		if op.Action == ActionExpire {
			continue
		}
		if reserved[op.Name] {
			errs = append(errs, fmt.Errorf("line %d: metric %s: the name is one of the operator's own metrics; choose another", op.Line, op.Name))
			continue
		}
		f := fams[op.Name]
		if f == nil {
			fams[op.Name] = newFamily(op)
			continue
		}
		if err := f.accepts(op); err != nil {
			errs = append(errs, fmt.Errorf("line %d: metric %s: %w", op.Line, op.Name, err))
		}
	}
	return limit.Join(errs)
}

// Apply applies the operations of one run of hook, checked with Check:
// every group the operations name is dropped first, then the values are
// added, set or observed; expire drops its group. An operation that Check
// would refuse (Apply was called without it, or another hook took the
// name since) is left out.
//
// A new series over the caps of SetLimits is dropped and counted; the
// first drop of each hook is logged (HookLimits.Warn).
func (h *HookMetrics) Apply(hook string, ops []HookOp) {
	run := prepare(hook, ops)
	h.mu.Lock()
	warn := h.counts.limits.Warn
	msg := h.apply(hook, run)
	h.mu.Unlock()
	warnOnce(warn, msg)
}

// preparedRun is a run's operations with what can be worked out without
// mu: each series' key and label values, and the groups to drop first.
type preparedRun struct {
	ops    []preparedOp
	groups []string
}

type preparedOp struct {
	*HookOp
	// names are the label names, sorted: the family's labels after the
	// hook label.
	names []string
	key   string // the label values, the hook's first, joined by NUL
	size  int    // what admit counts
}

// values returns the series' label values, the hook's first.
func (p *preparedOp) values(hook string) []string {
	values := make([]string, 1, 1+len(p.names))
	values[0] = hook
	for _, k := range p.names {
		values = append(values, p.Labels[k])
	}
	return values
}

// prepare works out the series of each operation and the distinct groups
// the run names, in time linear in the operations.
func prepare(hook string, ops []HookOp) preparedRun {
	var run preparedRun
	run.ops = make([]preparedOp, len(ops))
	named := map[string]bool{}
	for i := range ops {
		op := &ops[i]
		p := &run.ops[i]
		p.HookOp = op
		if op.Action == ActionExpire {
			continue
		}
		if op.Group != "" && !named[op.Group] {
			named[op.Group] = true
			run.groups = append(run.groups, op.Group)
		}
		p.key = hook
		if len(op.Labels) > 0 {
			p.names = make([]string, 0, len(op.Labels))
			for k := range op.Labels {
				p.names = append(p.names, k)
			}
			sort.Strings(p.names)
			p.key = strings.Join(p.values(hook), "\x00")
		}
		p.size = len(op.Name) + seriesBytes(op.Labels) + 8*len(op.Buckets)
	}
	return run
}

// apply is Apply with h.mu held; it returns what to log. Each operation
// costs a few map lookups, and one over the caps no more.
func (h *HookMetrics) apply(hook string, run preparedRun) string {
	for _, g := range run.groups {
		h.dropGroup(g)
	}
	var dropped drops
	for i := range run.ops {
		op := &run.ops[i]
		if op.Action == ActionExpire {
			h.dropGroup(op.Group)
			continue
		}
		f := h.families[op.Name]
		if f != nil && !f.fits(op) {
			continue
		}
		var s *series
		if f != nil {
			s = f.series[op.key]
		}
		if s == nil {
			if reason := h.counts.admit(hook, op.size); reason != "" {
				dropped.add(reason, op.Name)
				continue
			}
			if f == nil {
				f = newFamily(*op.HookOp)
				h.families[op.Name] = f
			}
			s = &series{fam: f, key: op.key, labels: op.values(hook), buckets: make([]uint64, len(f.buckets))}
			f.series[op.key] = s
			h.counts.added(hook, 1)
		}
		h.setGroup(s, op.Group)
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

// setGroup moves s into group g ("": none); h.mu is held.
func (h *HookMetrics) setGroup(s *series, g string) {
	if s.group == g {
		return
	}
	if members := h.groups[s.group]; members != nil {
		delete(members, s)
		if len(members) == 0 {
			delete(h.groups, s.group)
		}
	}
	s.group = g
	if g == "" {
		return
	}
	members := h.groups[g]
	if members == nil {
		members = map[*series]struct{}{}
		h.groups[g] = members
	}
	members[s] = struct{}{}
}

// dropGroup drops the series of group g, of every hook; h.mu is held.
func (h *HookMetrics) dropGroup(g string) {
	for s := range h.groups[g] {
		f := s.fam
		delete(f.series, s.key)
		if len(f.series) == 0 && h.families[f.name] == f {
			delete(h.families, f.name)
		}
		h.counts.added(s.labels[0], -1)
	}
	delete(h.groups, g)
}

func newFamily(op HookOp) *family {
	labels := []string{HookLabel}
	for k := range op.Labels {
		labels = append(labels, k)
	}
	sort.Strings(labels[1:])
	return &family{name: op.Name, kind: op.Action, labels: labels, buckets: op.Buckets, series: map[string]*series{}}
}

// accepts says why op cannot write to f, or nil when it can. It allocates
// only to describe a conflict.
func (f *family) accepts(op HookOp) error {
	if f.kind == op.Action && len(f.labels) == 1+len(op.Labels) && slices.Equal(f.buckets, op.Buckets) {
		same := true
		for _, l := range f.labels[1:] {
			if _, ok := op.Labels[l]; !ok {
				same = false
				break
			}
		}
		if same {
			return nil
		}
	}
	return f.compatible(newFamily(op))
}

// fits says whether the prepared op writes to f as its kind, label names
// and buckets are (what Check makes sure of).
func (f *family) fits(op *preparedOp) bool {
	return f.kind == op.Action && slices.Equal(f.labels[1:], op.names) && slices.Equal(f.buckets, op.Buckets)
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
