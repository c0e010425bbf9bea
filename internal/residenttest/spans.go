package residenttest

import (
	"os"
	"testing"

	"github.com/hook-operator/hook-operator/internal/hookspan"
)

// ReadSpans reads the spans file a traced run wrote (docs/running.md,
// Traces extension) with the runtime's own parser, as spans of trace under
// the run's span parent. A file that is missing or breaks the contract fails
// t, the latter with the file's text.
func ReadSpans(t testing.TB, path, trace, parent string) []hookspan.Span {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spans, err := hookspan.Parse(data, trace, parent)
	if err != nil {
		t.Fatalf("%v\nthe file:\n%s", err, data)
	}
	return spans
}
