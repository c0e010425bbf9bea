package ops

import (
	"strings"

	"github.com/hook-operator/hook-operator/internal/spelling"
)

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
		d := spelling.Distance(lower, strings.ToLower(c))
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
