package run

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

func TestRunLogsOutputLines(t *testing.T) {
	r, logs := testRunner(t)
	h := bashHook(t, `
echo plain line
echo '{"msg":"structured","level":"warning","count":3,"hook":"spoof","binding":"spoof","queue":"spoof","output":"spoof","nested":{"a":1}}'
echo '{"message":"from message","level":"fatal"}'
echo '{not json'
echo oops >&2
printf 'no newline at the end'
`)
	_, err := r.Run(context.Background(), Request{Hook: h, Binding: "pods", Queue: "q1"})
	if err != nil {
		t.Fatal(err)
	}
	entries := outputEntries(logs)
	if len(entries) != 6 {
		for _, e := range entries {
			t.Logf("%s %v", e.Message, e.Data)
		}
		t.Fatalf("got %d output records, want 6", len(entries))
	}
	for i, e := range entries {
		if e.Data["hook"] != "test/hook.sh" || e.Data["binding"] != "pods" || e.Data["queue"] != "q1" {
			t.Errorf("record %d (%q) labels = %v", i, e.Message, e.Data)
		}
	}
	want := []struct {
		msg, output string
		level       logrus.Level
	}{
		{"plain line", "stdout", logrus.InfoLevel},
		{"structured", "stdout", logrus.WarnLevel},
		{"from message", "stdout", logrus.ErrorLevel},
		{"{not json", "stdout", logrus.InfoLevel},
		{"oops", "stderr", logrus.InfoLevel},
		{"no newline at the end", "stdout", logrus.InfoLevel},
	}
	// stdout and stderr are copied concurrently, so compare per stream.
	for _, stream := range []string{"stdout", "stderr"} {
		var got, exp []string
		for _, e := range entries {
			if e.Data["output"] == stream {
				got = append(got, e.Message+"@"+e.Level.String())
			}
		}
		for _, w := range want {
			if w.output == stream {
				exp = append(exp, w.msg+"@"+w.level.String())
			}
		}
		if strings.Join(got, "|") != strings.Join(exp, "|") {
			t.Errorf("%s records = %q, want %q", stream, got, exp)
		}
	}

	var structured logrus.Entry
	for _, e := range entries {
		if e.Message == "structured" {
			structured = e
		}
	}
	if structured.Data["count"] != json.Number("3") {
		t.Errorf("count = %#v, want 3 merged from the JSON line", structured.Data["count"])
	}
	if nested, ok := structured.Data["nested"].(map[string]any); !ok || nested["a"] != json.Number("1") {
		t.Errorf("nested = %#v", structured.Data["nested"])
	}
	for _, k := range []string{"hook", "binding", "queue", "output"} {
		if structured.Data["fields."+k] != "spoof" {
			t.Errorf("the line's own %q should be kept as fields.%s: %v", k, k, structured.Data)
		}
	}
	for _, k := range []string{"msg", "level"} {
		if _, ok := structured.Data[k]; ok {
			t.Errorf("%q should not stay a field", k)
		}
	}
}

func TestLineWriterCutsLongLines(t *testing.T) {
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	logs := logtest.NewLocal(logger)
	w := newLineWriter(logrus.NewEntry(logger), 8, 2)

	// Written in pieces, as a pipe delivers them.
	for _, piece := range []string{"0123", "4567", "89abc", "def\nshort", "\r\n", strings.Repeat("x", 20), "\nend"} {
		if n, err := w.Write([]byte(piece)); n != len(piece) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", piece, n, err)
		}
	}
	w.flush()

	var got []string
	for _, e := range logs.AllEntries() {
		m := e.Message
		if e.Data["truncated"] == true {
			m += " (cut)"
		}
		got = append(got, m)
	}
	want := []string{"01234567 (cut)", "short", "xxxxxxxx (cut)", "end"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("records = %q, want %q", got, want)
	}
	if w.tail() != "xxxxxxxx\nend" {
		t.Errorf("tail = %q", w.tail())
	}
}
