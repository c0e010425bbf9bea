package spelling

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 3}, {"kind", "kind", 0}, {"knid", "kind", 2}, {"jqFiltr", "jqFilter", 1}, {"kitten", "sitting", 3}} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	keys := []string{"kind", "apiVersion", "jqFilter", "labelSelector", "fieldSelector", "nameSelector", "namespaced", "executeHookOnEvent"}
	for _, c := range []struct{ in, want string }{
		{"jqfilter", `did you mean "jqFilter"?`},                                         // case only
		{"knid", `did you mean "kind"?`},                                                 // two letters swapped: distance 2
		{"jqFiltr", `did you mean "jqFilter"?`},                                          // one letter missing
		{"executeHookOnEvents", `did you mean "executeHookOnEvent"?`},                    // one letter too many
		{"selector", `did you mean "labelSelector", "fieldSelector" or "nameSelector"?`}, // part of several
		{"namespace", `did you mean "namespaced"?`},                                      // part of one
		{"frobnicate", ""}, // nothing close
		{"", ""},
	} {
		if got := DidYouMean(c.in, keys); got != c.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Short candidates allow one edit only: "ab" is not a typo of "v1".
	if got := Suggest("ab", []string{"v1", "abc"}); len(got) != 1 || got[0] != "abc" {
		t.Errorf("Suggest(ab) = %v, want [abc]", got)
	}
	if got := Suggest("xy", []string{"v1"}); got != nil {
		t.Errorf("Suggest(xy, [v1]) = %v, want nothing", got)
	}
}

// Nearest finds near misses only: a name that is part of candidates, but
// far from each, is not a typo.
func TestNearest(t *testing.T) {
	kinds := []string{"Namespace", "NetworkPolicy", "Pod", "PodDisruptionBudget", "CronJob", "Lease"}
	for s, want := range map[string]string{
		"Namespce":  "Namespace",
		"namespace": "Namespace",
		"Pdo":       "",
		"Pods":      "Pod",
		"Policy":    "",
		"CronTab":   "CronJob",
		"Widget":    "",
	} {
		if got := Nearest(s, kinds); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", s, got, want)
		}
	}
}
