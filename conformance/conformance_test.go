package conformance_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hook-operator/hook-operator/internal/gobuild"
	"github.com/hook-operator/hook-operator/internal/testcluster"
)

// Every case of the corpus runs under shell-operator and under
// hook-operator, one after the other, each in a namespace of its own, driven
// by the same steps. The binding contexts each hook received, the objects
// left in the namespace and the hooks' metrics must be the same once what
// legitimately differs is normalised away (normalize); a difference that is
// not listed in differences (each with its row in docs/hooks.md) fails.
func TestIntegrationConformance(t *testing.T) {
	c := testcluster.Get(t)
	refBin, _ := referenceBinary(t)
	oursBin := buildOurs(t)
	module := moduleDir(t)
	examples := filepath.Join(module, "examples")
	cases := loadCases(t)
	docs := differencesTable(t)
	used, ran := map[string]bool{}, map[string]bool{}
	var mu sync.Mutex
	// Two cases at a time, whatever go test's -parallel: the harness tells
	// one step's binding contexts from the next step's by a quiet period
	// (recorder.quiet), and with four cases at a time beside the other
	// packages' tests on 2 cores, shell-operator once started a step's run
	// after that period (example 102's Namespace events, in make test).
	running := make(chan struct{}, 2)
	t.Run("cases", func(t *testing.T) {
		for _, cs := range cases {
			t.Run(cs.Name, func(t *testing.T) {
				t.Parallel()
				running <- struct{}{}
				defer func() { <-running }()
				for _, s := range cs.Setup {
					applyStep(t, c.Kubeconfig, s, "", examples)
				}
				mu.Lock()
				ran[cs.Name] = true
				mu.Unlock()
				theirs := runCase(t, cs, reference{refBin}, c, module)
				mine := runCase(t, cs, ours{oursBin}, c, module)
				for _, d := range differences {
					if d.Case != cs.Name {
						continue
					}
					if !strings.Contains(docs, d.Row) {
						t.Errorf("difference %q: docs/hooks.md's table of differences has no row with %q", d.What, d.Row)
					}
					if d.apply(theirs, mine) {
						mu.Lock()
						used[cs.Name+"/"+d.What] = true
						mu.Unlock()
					}
				}
				compare(t, theirs, mine)
			})
		}
	})
	for _, d := range differences {
		if ran[d.Case] && !used[d.Case+"/"+d.What] && !t.Failed() {
			t.Errorf("listed difference %q of case %s was not seen: remove it from differences (and docs/hooks.md if no other case needs the row)", d.What, d.Case)
		}
	}
}

// excludedExamples are the folders of shell-operator's examples that are
// not in the corpus, each with the reason.
var excludedExamples = map[string]string{
	"002-startup-python":     "its hook is Python, which a fresh machine here does not have",
	"230-configmap-python":   "its hook is Python, which a fresh machine here does not have",
	"103-schedule":           "fires every 5 and 10 s, so which contexts a short case sees depends on the clock; the schedule case covers 6-field crontabs",
	"104-secret-copier":      "copies a Secret into every namespace of the cluster, which the other tests share",
	"106-monitor-events":     "watches events.k8s.io/v1beta1, which Kubernetes stopped serving in v1.25",
	"204-validating-webhook": "shell-operator registers webhooks only by Service, and the local API server, a process outside any cluster network, cannot reach one; TestIntegrationWebhookExamples runs it on hook-operator alone",
	"206-mutating-webhook":   "shell-operator registers webhooks only by Service, and the local API server, a process outside any cluster network, cannot reach one; TestIntegrationWebhookExamples runs it on hook-operator alone",
	"210-conversion-webhook": "shell-operator registers conversion webhooks only by Service, and the local API server, a process outside any cluster network, cannot reach one; TestIntegrationWebhookExamples runs it on hook-operator alone",
	"220-execution-rate":     "its CRD has the name of 105's with another version, and its rate limit makes the runs depend on timing",
}

// Every example of the pinned shell-operator is a case of the corpus or
// excluded with its reason, so a new version's examples are not missed.
func TestEveryExampleIsCoveredOrExcluded(t *testing.T) {
	examples := filepath.Join(moduleDir(t), "examples")
	entries, err := os.ReadDir(examples)
	must(t, err)
	covered := map[string]bool{}
	for _, c := range loadCases(t) {
		if c.Example != "" {
			covered[c.Example] = true
		}
	}
	unseen := map[string]bool{}
	for name := range excludedExamples {
		unseen[name] = true
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		_, excluded := excludedExamples[e.Name()]
		switch {
		case covered[e.Name()] && excluded:
			t.Errorf("example %s is both a case and excluded", e.Name())
		case !covered[e.Name()] && !excluded:
			t.Errorf("example %s is neither a case under conformance/cases nor in excludedExamples with a reason", e.Name())
		}
		delete(unseen, e.Name())
	}
	for name := range unseen {
		t.Errorf("excludedExamples names %s, which the pinned shell-operator has no example of", name)
	}
}

// buildOurs builds hook-operator from this checkout.
func buildOurs(t *testing.T) string {
	t.Helper()
	root, err := testcluster.RepoRoot()
	must(t, err)
	bin := filepath.Join(t.TempDir(), "hook-operator")
	cmd := gobuild.Command(root, "-o", bin, "./cmd/hook-operator")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// differencesTable returns the section of docs/hooks.md that lists the
// differences from shell-operator.
func differencesTable(t *testing.T) string {
	t.Helper()
	root, err := testcluster.RepoRoot()
	must(t, err)
	data, err := os.ReadFile(filepath.Join(root, "docs", "hooks.md"))
	must(t, err)
	s := string(data)
	i := strings.Index(s, "## Differences from shell-operator")
	if i < 0 {
		t.Fatal("docs/hooks.md has no section 'Differences from shell-operator'")
	}
	s = s[i+3:]
	if j := strings.Index(s, "\n## "); j >= 0 {
		s = s[:j]
	}
	return s
}

// A result is what one operator did with one case, normalised: per step
// and hook, the binding contexts in order; the objects left; the hooks'
// metrics.
type result struct {
	operator string
	Runs     map[string][]any `json:"runs"`
	Objects  []any            `json:"objects"`
	Metrics  []string         `json:"metrics"`
}

func runCase(t *testing.T, cs *Case, op operator, c *testcluster.Cluster, module string) *result {
	t.Helper()
	ns := c.Namespace(t)
	rec := newRecorder(t)
	hooks := hooksFolder(t, cs, module, rec.dir)
	examples := filepath.Join(module, "examples")
	for _, s := range cs.Before {
		applyStep(t, c.Kubeconfig, s, ns, examples)
	}
	// Hooks read the namespace from CONFORMANCE_NS, to select it.
	stop, metricsURL := op.start(t, hooks, c.Kubeconfig, []string{"CONFORMANCE_NS=" + ns})
	// Every case has a run at start-up (onStartup, Synchronization or a
	// schedule): once it is done the operator is watching.
	if !rec.quiet(t, 1, 60*time.Second) {
		t.Fatalf("%s ran no hook within 60 s of its start", op.name())
	}
	for i, s := range cs.Steps {
		rec.setStep(t, i+1)
		applyStep(t, c.Kubeconfig, s, ns, examples)
		rec.quiet(t, 0, 30*time.Second)
	}
	res := &result{operator: op.name(), Runs: map[string][]any{}, Metrics: hookMetrics(t, metricsURL)}
	stop()
	n := normalizer{ns: ns}
	for _, r := range rec.runs(t) {
		key := fmt.Sprintf("step %d, %s", r.step, r.hook)
		for _, bc := range r.contexts {
			v, keep := n.context(bc)
			if !keep {
				continue
			}
			if b, _ := bc["binding"].(string); bc["type"] == "Schedule" && slices.Contains(cs.ClockBound, b) {
				continue
			}
			// How often a schedule fires in a case depends on timing:
			// a Schedule context like the one before it is counted once.
			if prev := res.Runs[key]; bc["type"] == "Schedule" && len(prev) > 0 && pretty(prev[len(prev)-1]) == pretty(v) {
				continue
			}
			res.Runs[key] = appendCollapsingGroups(res.Runs[key], v)
		}
	}
	for k, contexts := range res.Runs {
		res.Runs[k] = sortEventsByBinding(contexts)
	}
	for _, kind := range cs.Objects {
		var list struct{ Items []map[string]any }
		must(t, json.Unmarshal([]byte(kubectl(t, c.Kubeconfig, "", "get", kind, "-n", ns, "-o", "json")), &list))
		for _, o := range list.Items {
			res.Objects = append(res.Objects, n.value(o))
		}
	}
	return res
}

// appendCollapsingGroups appends context v to a step's contexts, a Group
// context replacing a Group context of the same group just before it. Both
// operators collapse consecutive contexts of one group within a run, and
// which contexts share a run depends on timing (two bindings'
// Synchronizations at start-up may run together or one after the other), so
// the contexts of a step's runs are compared as if they had shared one.
func appendCollapsingGroups(contexts []any, v any) []any {
	group := func(v any) string {
		m, _ := v.(map[string]any)
		if m["type"] != "Group" {
			return ""
		}
		g, _ := m["groupName"].(string)
		return g
	}
	if n := len(contexts); n > 0 && group(v) != "" && group(contexts[n-1]) == group(v) {
		contexts[n-1] = v
		return contexts
	}
	return append(contexts, v)
}

// sortEventsByBinding orders each stretch of consecutive Event and Group
// contexts by binding and then object, keeping the order of each object's
// events. shell-operator runs an informer per binding, and one per name of
// a nameSelector, so the order in which the bindings of one hook see one
// change, and in which a binding sees changes of different objects close
// together, differ from run to run; the order of one object's events does
// not.
func sortEventsByBinding(contexts []any) []any {
	isEvent := func(v any) bool { m, _ := v.(map[string]any); return m["type"] == "Event" || m["type"] == "Group" }
	binding := func(v any) string {
		m, _ := v.(map[string]any)
		s, _ := m["binding"].(string)
		if o, ok := m["object"].(map[string]any); ok {
			md, _ := o["metadata"].(map[string]any)
			ns, _ := md["namespace"].(string)
			name, _ := md["name"].(string)
			s += "\x00" + ns + "/" + name
		}
		return s
	}
	for i := 0; i < len(contexts); {
		j := i
		for j < len(contexts) && isEvent(contexts[j]) {
			j++
		}
		if j == i {
			i++
			continue
		}
		sort.SliceStable(contexts[i:j], func(a, b int) bool { return binding(contexts[i+a]) < binding(contexts[i+b]) })
		i = j
	}
	return contexts
}

// applyStep makes one step's change; $NS is ns, EXAMPLES the folder of
// shell-operator's examples.
func applyStep(t *testing.T, kubeconfig string, s Step, ns, examples string) {
	t.Helper()
	sub := strings.NewReplacer("$NS", ns, "EXAMPLES", examples).Replace
	if s.Apply != "" {
		kubectl(t, kubeconfig, sub(s.Apply), "apply", "-f", "-")
	}
	if s.Kubectl != "" {
		kubectl(t, kubeconfig, "", strings.Fields(sub(s.Kubectl))...)
	}
	if s.Wait != "" {
		d, err := time.ParseDuration(s.Wait)
		must(t, err)
		time.Sleep(d)
	}
}

// normalizer takes out of a binding context what differs between any two
// runs: the namespace's generated name, uids, resourceVersions, times; and
// keeps only what the case made (objects in its namespace, cluster-scoped
// objects named after it): other tests share the cluster.
type normalizer struct{ ns string }

// generated matches the random suffix of a name the API server generates
// from a generateName (a Pod's token volume).
var generated = regexp.MustCompile(`^(kube-api-access)-[a-z0-9]{5}$`)

var rfc3339 = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)

// ours reports whether obj (a Kubernetes object) belongs to the case.
func (n normalizer) ours(obj any) bool {
	o, ok := obj.(map[string]any)
	if !ok {
		return true
	}
	md, _ := o["metadata"].(map[string]any)
	if md == nil {
		return true
	}
	if ns, _ := md["namespace"].(string); ns != "" {
		return ns == n.ns
	}
	name, _ := md["name"].(string)
	return strings.Contains(name, n.ns)
}

func (n normalizer) context(bc map[string]any) (any, bool) {
	if obj, ok := bc["object"]; ok && !n.ours(obj) {
		return nil, false
	}
	if objs, ok := bc["objects"].([]any); ok {
		bc["objects"] = n.list(objs)
	}
	if snaps, ok := bc["snapshots"].(map[string]any); ok {
		for k, v := range snaps {
			if l, ok := v.([]any); ok {
				snaps[k] = n.list(l)
			}
		}
	}
	return n.value(bc), true
}

// list keeps the items (objects or {object, filterResult}) of the case,
// sorted by name as both operators sort snapshots.
func (n normalizer) list(items []any) []any {
	out := []any{}
	for _, it := range items {
		obj := it
		if m, ok := it.(map[string]any); ok {
			if o, ok := m["object"]; ok {
				obj = o
			}
		}
		if n.ours(obj) {
			out = append(out, it)
		}
	}
	return out
}

// value returns v with the run's namespace name replaced by NS and the
// fields that differ between runs replaced or dropped.
func (n normalizer) value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			switch k {
			case "uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink":
				continue
			}
			out[k] = n.value(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = n.value(e)
		}
		return out
	case string:
		if rfc3339.MatchString(x) {
			return "<time>"
		}
		return generated.ReplaceAllString(strings.ReplaceAll(x, n.ns, "NS"), "$1-<random>")
	}
	return v
}

// compare fails t with each difference between the two results.
func compare(t *testing.T, theirs, mine *result) {
	t.Helper()
	keys := map[string]bool{}
	for k := range theirs.Runs {
		keys[k] = true
	}
	for k := range mine.Runs {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if a, b := pretty(theirs.Runs[k]), pretty(mine.Runs[k]); a != b {
			t.Errorf("%s: the binding contexts differ:\n%s", k, diff(t, a, b))
		}
	}
	if a, b := pretty(theirs.Objects), pretty(mine.Objects); a != b {
		t.Errorf("the objects left differ:\n%s", diff(t, a, b))
	}
	if a, b := strings.Join(theirs.Metrics, "\n"), strings.Join(mine.Metrics, "\n"); a != b {
		t.Errorf("the hooks' metrics differ:\n%s", diff(t, a, b))
	}
}

// diff returns a unified diff of shell-operator's text a and ours b.
func diff(t *testing.T, a, b string) string {
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "shell-operator"), filepath.Join(dir, "hook-operator")
	must(t, os.WriteFile(pa, []byte(a+"\n"), 0o600))
	must(t, os.WriteFile(pb, []byte(b+"\n"), 0o600))
	out, _ := exec.Command("diff", "-u", "--label", "shell-operator", "--label", "hook-operator", pa, pb).CombinedOutput()
	return string(out)
}

func pretty(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// A difference is a known, documented way in which hook-operator differs
// from shell-operator in a case: apply normalises it away in both results
// and says whether it was there. Row is text of its row in docs/hooks.md's
// table of differences.
type difference struct {
	Case, What, Row string
	apply           func(theirs, mine *result) bool
}

var differences = []difference{{
	Case: "metrics-allow-failure",
	What: "metrics without a group keep only the last run's values in shell-operator",
	Row:  "shell-operator (v1.14.0 and v1.20.3) keeps only the last run's values",
	apply: func(theirs, mine *result) bool {
		cumulative := regexp.MustCompile(`^(conf_runs_total|conf_events_total|conf_seconds_(bucket|sum|count))[{ ]`)
		drop := func(lines []string) ([]string, []string) {
			var kept, dropped []string
			for _, l := range lines {
				if cumulative.MatchString(l) {
					dropped = append(dropped, l)
				} else {
					kept = append(kept, l)
				}
			}
			return kept, dropped
		}
		var a, b []string
		theirs.Metrics, a = drop(theirs.Metrics)
		mine.Metrics, b = drop(mine.Metrics)
		return strings.Join(a, "\n") != strings.Join(b, "\n")
	},
}, {
	Case: "shell-framework",
	What: "shell-operator delivers a Synchronization of executeHookOnSynchronization: false when its queue merges it into another run of the hook",
	Row:  "shell-operator's main queue (v1.14.0 and v1.20.3) merges that Synchronization into another Synchronization run of the same hook",
	apply: func(theirs, _ *result) bool {
		found := false
		for key, contexts := range theirs.Runs {
			if !strings.HasSuffix(key, ", grouped.sh") {
				continue
			}
			kept := contexts[:0]
			for _, v := range contexts {
				if m, _ := v.(map[string]any); m["type"] == "Synchronization" && m["binding"] == "plain" {
					found = true
					continue
				}
				kept = append(kept, v)
			}
			theirs.Runs[key] = kept
		}
		return found
	},
}}

func TestAppendCollapsingGroups(t *testing.T) {
	ctx := func(typ, b, g string) any {
		m := map[string]any{"type": typ, "binding": b}
		if g != "" {
			m["groupName"] = g
		}
		return m
	}
	var got []any
	for _, c := range []any{
		ctx("Group", "cms", "g"), ctx("Group", "secrets", "g"), // one run or two: the last stays
		ctx("Group", "x", "h"),                       // another group
		ctx("Event", "e", ""), ctx("Event", "e", ""), // events are never collapsed
		ctx("Group", "cms", "g"), // not next to the first g
	} {
		got = appendCollapsingGroups(got, c)
	}
	want := []any{ctx("Group", "secrets", "g"), ctx("Group", "x", "h"), ctx("Event", "e", ""), ctx("Event", "e", ""), ctx("Group", "cms", "g")}
	if pretty(got) != pretty(want) {
		t.Fatalf("got %s, want %s", pretty(got), pretty(want))
	}
}
