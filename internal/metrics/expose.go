package metrics

import (
	"bufio"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// This file is the Prometheus text exposition format (version 0.0.4) and the
// metric families behind it. It replaces the Prometheus Go client, which with
// its protobuf dependency cost the idle operator about 2 MB of memory
// (docs/design/process.md, "Metrics"): counters, gauges and histograms with
// labels are all the runtime needs.

// Kind is a family's type as the text format names it.
type Kind string

// The kinds of family served.
const (
	Counter   Kind = "counter"
	Gauge     Kind = "gauge"
	Histogram Kind = "histogram"
	Summary   Kind = "summary"
)

// Family is one metric family as served: a name, its help, its kind, its
// label names, and its series.
type Family struct {
	Name, Help string
	Kind       Kind
	Labels     []string
	// Buckets are a histogram's upper bounds, ascending (+Inf implied).
	Buckets []float64
	Series  []Series
}

// Series is one series of a family.
type Series struct {
	// Values are the label values, in Family.Labels order.
	Values []string
	// Value is a counter's or gauge's value.
	Value float64
	// Count and Sum are a histogram's or summary's.
	Count uint64
	Sum   float64
	// Cumulative are a histogram's counts of observations at or below
	// each of Family.Buckets.
	Cumulative []uint64
	// Quantiles are a summary's.
	Quantiles []Quantile
}

// Quantile is one quantile of a summary.
type Quantile struct{ Q, Value float64 }

// Collector gives families computed when the metrics are read.
type Collector interface {
	// Names are the families Collect gives, so that hooks' metrics cannot
	// take them; nil when they are not known in advance.
	Names() []string
	Collect() []Family
}

// registry is what one page serves: families kept by the runtime (vecs),
// and collectors asked at each read.
type registry struct {
	mu         sync.Mutex
	vecs       []*vec
	collectors []Collector
}

func (r *registry) addVec(v *vec) *vec {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.vecs {
		if o.name == v.name {
			panic("metrics: " + v.name + " is registered twice")
		}
	}
	r.vecs = append(r.vecs, v)
	return v
}

// Register adds a collector.
func (r *registry) Register(c Collector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
}

// has says whether name is a family of the vecs or of a collector that
// names its families.
func (r *registry) has(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.vecs {
		if v.name == name {
			return true
		}
	}
	for _, c := range r.collectors {
		if slices.Contains(c.Names(), name) {
			return true
		}
	}
	return false
}

// Gather returns every family with at least one series, sorted by name,
// with its labels sorted by name and its series by their label values, as
// the Prometheus Go client writes them (so that what hooks write reads the
// same as under shell-operator). A name given twice is served once, from
// the first that gives it (the runtime's own families come before the
// hooks').
func (r *registry) Gather() []Family {
	r.mu.Lock()
	vecs, collectors := slices.Clone(r.vecs), slices.Clone(r.collectors)
	r.mu.Unlock()
	var out []Family
	seen := map[string]bool{}
	keep := func(f Family) {
		if len(f.Series) == 0 || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		sortLabels(&f)
		slices.SortFunc(f.Series, func(a, b Series) int { return slices.Compare(a.Values, b.Values) })
		out = append(out, f)
	}
	for _, v := range vecs {
		keep(v.family())
	}
	for _, c := range collectors {
		for _, f := range c.Collect() {
			keep(f)
		}
	}
	slices.SortFunc(out, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// sortLabels puts f's labels in name order, and each series' values with
// them.
func sortLabels(f *Family) {
	if slices.IsSorted(f.Labels) {
		return
	}
	order := make([]int, len(f.Labels))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(f.Labels[a], f.Labels[b]) })
	labels := make([]string, len(order))
	for i, o := range order {
		labels[i] = f.Labels[o]
	}
	f.Labels = labels
	for j, s := range f.Series {
		values := make([]string, len(order))
		for i, o := range order {
			values[i] = s.Values[o]
		}
		f.Series[j].Values = values
	}
}

// ContentType is the text format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// handler serves r in the text format.
func (r *registry) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		_ = WriteText(w, r.Gather())
	})
}

// WriteText writes families in the Prometheus text format.
func WriteText(w io.Writer, families []Family) error {
	b := bufio.NewWriter(w)
	var line []byte
	for _, f := range families {
		line = append(line[:0], "# HELP "...)
		line = append(line, f.Name...)
		line = append(line, ' ')
		line = appendEscaped(line, f.Help, false)
		line = append(line, "\n# TYPE "...)
		line = append(line, f.Name...)
		line = append(line, ' ')
		line = append(line, f.Kind...)
		line = append(line, '\n')
		for _, s := range f.Series {
			switch f.Kind {
			case Histogram:
				for i, ub := range f.Buckets {
					line = appendSample(line, f.Name, "_bucket", f.Labels, s.Values, "le", ub, float64(s.Cumulative[i]))
				}
				line = appendSample(line, f.Name, "_bucket", f.Labels, s.Values, "le", math.Inf(1), float64(s.Count))
				line = appendSample(line, f.Name, "_sum", f.Labels, s.Values, "", 0, s.Sum)
				line = appendSample(line, f.Name, "_count", f.Labels, s.Values, "", 0, float64(s.Count))
			case Summary:
				for _, q := range s.Quantiles {
					line = appendSample(line, f.Name, "", f.Labels, s.Values, "quantile", q.Q, q.Value)
				}
				line = appendSample(line, f.Name, "_sum", f.Labels, s.Values, "", 0, s.Sum)
				line = appendSample(line, f.Name, "_count", f.Labels, s.Values, "", 0, float64(s.Count))
			default:
				line = appendSample(line, f.Name, "", f.Labels, s.Values, "", 0, s.Value)
			}
		}
		if _, err := b.Write(line); err != nil {
			return err
		}
	}
	return b.Flush()
}

// appendSample appends one sample line: name+suffix, the labels (and the
// extra label, le or quantile, when given) and the value.
func appendSample(line []byte, name, suffix string, labels, values []string, extra string, extraValue, value float64) []byte {
	line = append(line, name...)
	line = append(line, suffix...)
	if len(labels) > 0 || extra != "" {
		line = append(line, '{')
		for i, l := range labels {
			if i > 0 {
				line = append(line, ',')
			}
			line = append(line, l...)
			line = append(line, `="`...)
			line = appendEscaped(line, values[i], true)
			line = append(line, '"')
		}
		if extra != "" {
			if len(labels) > 0 {
				line = append(line, ',')
			}
			line = append(line, extra...)
			line = append(line, `="`...)
			line = appendFloat(line, extraValue)
			line = append(line, '"')
		}
		line = append(line, '}')
	}
	line = append(line, ' ')
	line = appendFloat(line, value)
	return append(line, '\n')
}

// appendEscaped escapes \ and newlines (help text), and " too (label
// values), as the text format asks.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// vec is one family the runtime keeps: a counter, gauge or histogram with
// a series per combination of label values.
type vec struct {
	name, help string
	kind       Kind
	labels     []string
	buckets    []float64

	mu     sync.Mutex
	series map[string]*Series
}

func newVec(name, help string, kind Kind, buckets []float64, labels ...string) *vec {
	return &vec{name: name, help: help, kind: kind, labels: labels, buckets: buckets, series: map[string]*Series{}}
}

// at returns the series of values, made on first use; v.mu is held.
func (v *vec) at(values []string) *Series {
	if len(values) != len(v.labels) {
		panic("metrics: " + v.name + " takes " + strconv.Itoa(len(v.labels)) + " label values, not " + strconv.Itoa(len(values)))
	}
	var buf [256]byte
	key := buf[:0]
	for _, s := range values {
		key = append(key, s...)
		key = append(key, 0xff) // not in UTF-8 text
	}
	if s := v.series[string(key)]; s != nil {
		return s
	}
	s := &Series{Values: slices.Clone(values)}
	if v.kind == Histogram {
		s.Cumulative = make([]uint64, len(v.buckets))
	}
	v.series[string(key)] = s
	return s
}

// add adds d to a counter or gauge.
func (v *vec) add(d float64, values ...string) {
	v.mu.Lock()
	v.at(values).Value += d
	v.mu.Unlock()
}

// set sets a gauge.
func (v *vec) set(x float64, values ...string) {
	v.mu.Lock()
	v.at(values).Value = x
	v.mu.Unlock()
}

// observe adds an observation to a histogram.
func (v *vec) observe(x float64, values ...string) {
	v.mu.Lock()
	s := v.at(values)
	s.Count++
	s.Sum += x
	for i := len(v.buckets) - 1; i >= 0 && x <= v.buckets[i]; i-- {
		s.Cumulative[i]++
	}
	v.mu.Unlock()
}

// reset drops every series.
func (v *vec) reset() {
	v.mu.Lock()
	clear(v.series)
	v.mu.Unlock()
}

// family copies the vec's series for serving.
func (v *vec) family() Family {
	v.mu.Lock()
	defer v.mu.Unlock()
	f := Family{Name: v.name, Help: v.help, Kind: v.kind, Labels: v.labels, Buckets: v.buckets, Series: make([]Series, 0, len(v.series))}
	for _, s := range v.series {
		c := *s
		c.Cumulative = slices.Clone(s.Cumulative)
		f.Series = append(f.Series, c)
	}
	return f
}
