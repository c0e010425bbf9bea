package residenttest

import (
	"os"
	"testing"

	"github.com/hook-operator/hook-operator/internal/hookspan"
)

// The trace context of a traced run in the tests of the hook side.
const (
	Trace       = "4bf92f3577b34da6a3ce929d0e0e4736"
	RunSpan     = "00f067aa0ba902b7"
	TraceParent = "00-" + Trace + "-" + RunSpan + "-01"
)

// ReadSpans reads the spans file a traced run wrote (docs/running.md,
// Traces extension) with the runtime's own parser, as spans of Trace under
// the run's span RunSpan. A file that is missing or breaks the contract
// fails t, the latter with the file's text.
func ReadSpans(t testing.TB, path string) []hookspan.Span {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spans, err := hookspan.Parse(data, Trace, RunSpan)
	if err != nil {
		t.Fatalf("%v\nthe file:\n%s", err, data)
	}
	return spans
}
