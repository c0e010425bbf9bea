package hooks

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hook-operator/hook-operator/internal/hook"
	"github.com/hook-operator/hook-operator/internal/limit"
	"github.com/hook-operator/hook-operator/internal/webhook"
)

// writeTable prints one row per binding and, below, the entries of the
// hooks folder that are not run and why. Only wide tables have the DETAILS
// column (and a row for settings): as key=value pairs named like the
// configuration keys, what differs from the defaults. Without it a row of
// the shipped hooks fits a 160-column terminal, as kubectl's tables do.
// Every row stays on one line: whitespace in values (a multi-line
// jqFilter) becomes single spaces.
func writeTable(out io.Writer, hooks []*hook.Hook, skipped []hook.Skipped, wide bool) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	header := "HOOK\tMODE\tBINDING TYPE\tNAME\tKIND/CRONTAB\tQUEUE"
	if wide {
		header += "\tDETAILS"
	}
	fmt.Fprintln(tw, header)
	for _, h := range hooks {
		for _, r := range rows(h) {
			if !wide {
				if r[2] == "settings" {
					continue
				}
				r = r[:6]
			}
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(skipped) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SKIPPED\tREASON")
	for _, s := range skipped {
		fmt.Fprintf(tw, "%s\t%s\n", oneLine(s.Name), oneLine(s.Reason))
	}
	return tw.Flush()
}

func rows(h *hook.Hook) [][]string {
	c := &h.Config
	var out [][]string
	row := func(typ, name, what, queue string, details ...string) {
		for i, d := range details {
			details[i] = oneLine(d)
		}
		cells := []string{h.Name, mode(c.Settings), typ, dash(name), dash(what), dash(queue), dash(strings.Join(details, "; "))}
		for i := range cells {
			cells[i] = oneLine(cells[i])
		}
		out = append(out, cells)
	}
	if c.OnStartup != nil {
		row("onStartup", "onStartup", "", hook.DefaultQueue, fmt.Sprintf("order=%d", *c.OnStartup))
	}
	for _, b := range c.Schedule {
		row("schedule", b.Name, b.Crontab, b.Queue, common(b.Common)...)
	}
	for i := range c.Kubernetes {
		b := &c.Kubernetes[i]
		what := b.Kind
		if b.APIVersion != "" {
			what = b.APIVersion + " " + b.Kind
		}
		row("kubernetes", b.Name, what, b.Queue, kubernetes(b)...)
	}
	for _, b := range c.Validating {
		row("kubernetesValidating", b.Name, "", "", append(common(b.Common), "path="+webhook.Path(b.Name))...)
	}
	for _, b := range c.Mutating {
		d := append(common(b.Common), "path="+webhook.Path(b.Name))
		// Never is the API server's default: shown only when it differs.
		if p := b.ReinvocationPolicy(); p != "" && p != hook.ReinvocationNever {
			d = append(d, "reinvocationPolicy="+p)
		}
		row("kubernetesMutating", b.Name, "", "", d...)
	}
	for _, b := range c.Conversion {
		var convs []string
		for _, cv := range b.Conversions {
			convs = append(convs, cv.FromVersion+"->"+cv.ToVersion)
		}
		d := append([]string{"conversions=" + strings.Join(convs, ","), "path=" + webhook.ConversionPath(b.CRDName)}, common(b.Common)...)
		row("kubernetesCustomResourceConversion", b.Name, b.CRDName, "", d...)
	}
	if s := settings(c.Settings); len(s) > 0 {
		row("settings", "", "", "", s...)
	}
	return out
}

func kubernetes(b *hook.KubernetesBinding) []string {
	var d []string
	add := func(format string, args ...any) { d = append(d, fmt.Sprintf(format, args...)) }
	if ns := b.Namespace; ns != nil {
		if len(ns.Names) > 0 {
			add("namespaces=%s", strings.Join(ns.Names, ","))
		}
		if ns.LabelSelector != nil {
			add("namespaceLabels=%s", metav1.FormatLabelSelector(ns.LabelSelector))
		}
	}
	if len(b.NameSelector) > 0 {
		add("names=%s", strings.Join(b.NameSelector, ","))
	}
	if b.LabelSelector != nil {
		add("labels=%s", metav1.FormatLabelSelector(b.LabelSelector))
	}
	if b.FieldSelector != "" {
		add("fields=%s", b.FieldSelector)
	}
	if b.JQFilter != "" {
		add("jqFilter=%s", b.JQFilter)
	}
	switch {
	case len(b.ExecuteHookOnEvent) == 0:
		add("executeHookOnEvent=none (snapshots only)")
	case !slices.Equal(b.ExecuteHookOnEvent, []string{hook.Added, hook.Modified, hook.Deleted}):
		add("executeHookOnEvent=%s", strings.Join(b.ExecuteHookOnEvent, ","))
	}
	if !b.ExecuteHookOnSynchronization {
		add("executeHookOnSynchronization=false")
	}
	if !b.WaitForSynchronization {
		add("waitForSynchronization=false")
	}
	if !b.KeepFullObjectsInMemory {
		add("keepFullObjectsInMemory=false")
	}
	if b.ResynchronizationPeriod > 0 {
		add("resynchronizationPeriod=%s", b.ResynchronizationPeriod)
	}
	if b.Finalizer != "" {
		add("finalizer=%s", b.Finalizer)
	}
	if b.StaleAfter > 0 {
		add("staleAfter=%s", b.StaleAfter)
	}
	return append(d, common(b.Common)...)
}

func common(c hook.Common) []string {
	var d []string
	if c.Group != "" {
		d = append(d, "group="+c.Group)
	}
	if len(c.IncludeSnapshotsFrom) > 0 {
		d = append(d, "includeSnapshotsFrom="+strings.Join(c.IncludeSnapshotsFrom, ","))
	}
	if c.AllowFailure {
		d = append(d, "allowFailure=true")
	}
	return d
}

func settings(s hook.Settings) []string {
	var d []string
	if s.ExecutionMinInterval > 0 {
		d = append(d, fmt.Sprintf("executionMinInterval=%s", s.ExecutionMinInterval), fmt.Sprintf("executionBurst=%d", s.ExecutionBurst))
	} else if s.ExecutionBurst != 0 {
		d = append(d, fmt.Sprintf("executionBurst=%d", s.ExecutionBurst))
	}
	if s.Timeout > 0 {
		d = append(d, fmt.Sprintf("timeout=%s", s.Timeout))
	}
	if s.StaleAfter > 0 {
		d = append(d, fmt.Sprintf("staleAfter=%s", s.StaleAfter))
	}
	if s.Resident && s.ResidentMaxRuns != hook.DefaultResidentMaxRuns {
		d = append(d, fmt.Sprintf("residentMaxRuns=%d", s.ResidentMaxRuns))
	}
	if s.Resident && s.ResidentMaxMemory != hook.DefaultResidentMaxMemory {
		d = append(d, "residentMaxMemory="+resource.NewQuantity(s.ResidentMaxMemory, resource.BinarySI).String())
	}
	return d
}

// mode is the MODE column: whether the hook's process stays between runs.
func mode(s hook.Settings) string {
	if s.Resident {
		return "resident"
	}
	return "one-shot"
}

// oneLine turns every run of whitespace in s into one space, and shows
// what is left that a terminal would not print as itself (ESC, NUL) as
// an escape: names and values come from file names and hooks' output.
func oneLine(s string) string {
	return limit.Printable(strings.Join(strings.Fields(s), " "))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
