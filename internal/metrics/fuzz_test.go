package metrics_test

import (
	"bytes"
	"fmt"
	"regexp"
	"testing"

	"github.com/hook-operator/hook-operator/internal/metrics"
)

var lineRef = regexp.MustCompile(`line (\d+)`)

// Any $METRICS_PATH file: ParseHookOps does not panic, gives the same
// answer twice, names in its error only lines the file has, and returns at
// most one operation per non-blank line.
func FuzzParseHookOps(f *testing.F) {
	for _, seed := range []string{
		`{"name":"hook_runs","action":"add","value":1,"labels":{"kind":"a"}}`,
		"{\"name\":\"queue\",\"action\":\"set\",\"value\":3}\n\n{\"name\":\"lat\",\"action\":\"observe\",\"value\":0.2,\"buckets\":[0.1,1]}\n",
		`{"group":"g","action":"expire"}`,
		`{"name":"x","action":"set"}`, `{"name":"","action":"add","value":1}`, "not json\n{}", "{\"name\":\"a b\",\"action\":\"add\",\"value\":1}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops1, err1 := metrics.ParseHookOps(data)
		_, err2 := metrics.ParseHookOps(data)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("two parses differ:\n%v\n%v", err1, err2)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		if err1 != nil {
			refs := lineRef.FindAllStringSubmatch(err1.Error(), -1)
			if len(refs) == 0 {
				t.Fatalf("error names no line: %v", err1)
			}
			for _, m := range refs {
				var n int
				fmt.Sscan(m[1], &n)
				if n < 1 || n > lines {
					t.Fatalf("error names line %d of a %d-line file: %v", n, lines, err1)
				}
			}
			return
		}
		nonBlank := 0
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				nonBlank++
			}
		}
		if len(ops1) > nonBlank {
			t.Fatalf("%d operations from %d non-blank lines", len(ops1), nonBlank)
		}
	})
}
