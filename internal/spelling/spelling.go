// Package spelling finds what a misspelled name was meant to be, so that
// errors about configuration keys, operation names, fixture keys and the
// like can suggest a fix. Every "did you mean" of hook-operator comes from
// Suggest and DidYouMean, so they all follow one policy.
//
// The policy, case ignored throughout:
//   - a name of 4 or more characters that is part of candidates suggests
//     all of them ("Patch": MergePatch, JSONPatch or JQPatch; "selector":
//     labelSelector, fieldSelector or nameSelector), since the user knew
//     part of the name;
//   - otherwise the candidate nearest by edit distance, if the distance is
//     at most max(2, len(candidate)/3): a swap of two letters costs 2 and
//     is the most common typo, while a third of a long name's letters
//     wrong still reads as the same word. Candidates of 3 or fewer
//     characters allow 1, so that short names do not suggest each other.
package spelling

import "strings"

// Suggest returns the candidates s was likely meant to be, in their order,
// or nil when none is close (see the package doc for the policy).
func Suggest(s string, candidates []string) []string {
	lower := strings.ToLower(s)
	if lower == "" {
		return nil
	}
	var out []string
	if len(lower) >= 4 {
		for _, c := range candidates {
			if strings.Contains(strings.ToLower(c), lower) {
				out = append(out, c)
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	if best := Nearest(s, candidates); best != "" {
		return []string{best}
	}
	return nil
}

// Nearest returns the candidate nearest to s by edit distance within the
// policy's threshold, or "" when none is that close. Unlike Suggest it
// ignores names s is part of: it is for names that may well be new and
// right (the kind of a custom resource, such as "Policy", is part of
// several of Kubernetes' kinds), where only a near miss is a typo.
func Nearest(s string, candidates []string) string {
	lower := strings.ToLower(s)
	best, bestDist := "", -1
	for _, c := range candidates {
		d := Distance(lower, strings.ToLower(c))
		if d <= threshold(c) && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

func threshold(candidate string) int {
	if len(candidate) <= 3 {
		return 1
	}
	return max(2, len(candidate)/3)
}

// DidYouMean phrases Suggest's answer as a question: `did you mean "a"?`
// or `did you mean "a", "b" or "c"?`; "" when nothing is close.
func DidYouMean(s string, candidates []string) string {
	suggestions := Suggest(s, candidates)
	if len(suggestions) == 0 {
		return ""
	}
	quoted := make([]string, len(suggestions))
	for i, c := range suggestions {
		quoted[i] = `"` + c + `"`
	}
	if len(quoted) == 1 {
		return "did you mean " + quoted[0] + "?"
	}
	return "did you mean " + strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1] + "?"
}

// Distance is the Levenshtein edit distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
