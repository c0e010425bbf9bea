package metrics

import (
	"strings"
	"testing"
)

// Each review of the secure metrics listener counts by review and result.
func TestMetricsReviewsCounted(t *testing.T) {
	m := New("p_")
	m.MetricsReview("token", "denied")
	m.MetricsReview("token", "cached")
	m.MetricsReview("token", "cached")
	var b strings.Builder
	if err := WriteText(&b, m.Gather()); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{`p_metrics_reviews_total{result="cached",review="token"} 2`, `p_metrics_reviews_total{result="denied",review="token"} 1`} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("no line %q in:\n%s", line, b.String())
		}
	}
	var nilMetrics *Metrics
	nilMetrics.MetricsReview("token", "allowed")
}
