package ops

import "strings"

// suggest returns the candidates s was likely meant to be: those that
// contain it ("Patch" → MergePatch, JSONPatch, JQPatch), or else the one
// nearest to it when near enough to be a typo. Case is ignored.
func suggest(s string, candidates []string) []string {
	lower := strings.ToLower(s)
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
	best, bestDist := "", -1
	for _, c := range candidates {
		d := distance(lower, strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist > max(2, len(s)/3) {
		return nil
	}
	return []string{best}
}

// didYouMean phrases suggestions as a question, or returns "" for none.
func didYouMean(suggestions []string) string {
	if len(suggestions) == 0 {
		return ""
	}
	quoted := make([]string, len(suggestions))
	for i, s := range suggestions {
		quoted[i] = `"` + s + `"`
	}
	if len(quoted) == 1 {
		return "did you mean " + quoted[0] + "?"
	}
	return "did you mean " + strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1] + "?"
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
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
