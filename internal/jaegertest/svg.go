package jaegertest

import (
	"fmt"
	"html"
	"slices"
	"strings"
	"time"
)

// SVG draws tr as a waterfall, the way a trace viewer shows it: one row
// per span, in tree order (children under their parent, by start time),
// indented by depth, with a bar from its start to its end on a shared
// time axis and its duration. Spans a hook recorded (those with
// hook.name but not among the operator's names) are drawn in a second
// colour, failed spans in a third.
func SVG(tr Trace) []byte {
	const (
		rowH, labelW, barW, pad, top = 22, 300, 560, 10, 40
	)
	byParent := map[string][]Span{}
	ids := map[string]bool{}
	for _, s := range tr.Spans {
		ids[s.SpanID] = true
	}
	var start, end time.Time
	for _, s := range tr.Spans {
		p := s.ParentSpanID
		if !ids[p] {
			p = ""
		}
		byParent[p] = append(byParent[p], s)
		if start.IsZero() || s.Start.Before(start) {
			start = s.Start
		}
		if e := s.Start.Add(s.Duration); e.After(end) {
			end = e
		}
	}
	for _, c := range byParent {
		slices.SortStableFunc(c, func(a, b Span) int { return a.Start.Compare(b.Start) })
	}
	type row struct {
		s     Span
		depth int
	}
	var rows []row
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range byParent[parent] {
			rows = append(rows, row{s, depth})
			walk(s.SpanID, depth+1)
		}
	}
	walk("", 0)
	total := end.Sub(start)
	if total <= 0 {
		total = time.Microsecond
	}
	width, height := labelW+barW+2*pad+80, top+len(rows)*rowH+pad+20
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">trace %s: %d spans, %s</text>`+"\n", pad, tr.ID, len(tr.Spans), round(total))
	for i := 0; i <= 4; i++ { // the time axis
		x := pad + labelW + barW*i/4
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#dddddd"/>`, x, top-6, x, top+len(rows)*rowH)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#777777" text-anchor="middle">%s</text>`+"\n", x, top+len(rows)*rowH+16, round(total*time.Duration(i)/4))
	}
	for i, r := range rows {
		y := top + i*rowH
		fill := "#4e79a7" // the operator's spans
		if _, own := r.s.Attributes["hook.name"]; own && !operatorSpans[r.s.Name] {
			fill = "#59a14f" // the hook's own
		}
		if r.s.StatusError {
			fill = "#e15759"
		}
		x0 := pad + labelW + int(float64(barW)*float64(r.s.Start.Sub(start))/float64(total))
		w := max(int(float64(barW)*float64(r.s.Duration)/float64(total)), 2)
		label := r.s.Name
		if h := r.s.Attributes["hook.name"]; h != "" && r.depth == 0 {
			label += " (" + h + ")"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, pad+12*r.depth, y+15, html.EscapeString(label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="14" rx="2" fill="%s"/>`, x0, y+4, w, fill)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555555">%s</text>`+"\n", x0+w+4, y+15, round(r.s.Duration))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// operatorSpans are the names of the operator's own spans.
var operatorSpans = map[string]bool{
	"watch event": true, "synchronization": true, "schedule": true, "onStartup": true, "trigger": true, "requeue": true,
	"queue wait": true, "hook run": true, "hook process": true, "hook output": true, "operation": true,
	"remove finalizer": true, "admission review": true, "conversion review": true,
}

func round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}
