package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// configured is a logger set up by Configure with level, format and
// noTime, writing to the buffer it returns.
func configured(t *testing.T, level, format string, noTime bool) (*logrus.Logger, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	l := logrus.New()
	if err := Configure(l, level, format, noTime, &buf); err != nil {
		t.Fatal(err)
	}
	return l, &buf
}

func TestConfigureJSON(t *testing.T) {
	l, buf := configured(t, "debug", "json", false)
	l.WithField("hook", "a.sh").Debug("ran")
	l.Trace("hidden")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("one JSON record expected, got %q: %v", buf.String(), err)
	}
	if rec["msg"] != "ran" || rec["hook"] != "a.sh" || rec["level"] != "debug" {
		t.Errorf("record %v", rec)
	}
}

func TestConfigureText(t *testing.T) {
	l, buf := configured(t, "warn", "text", false)
	l.Info("hidden")
	l.Warn("shown")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, "msg=shown") {
		t.Errorf("output %q", out)
	}
}

// Without the time, a line has no time field in either format; with it,
// it has one.
func TestConfigureNoTime(t *testing.T) {
	for _, format := range Formats {
		for _, noTime := range []bool{false, true} {
			l, buf := configured(t, "info", format, noTime)
			l.Info("line")
			has := strings.Contains(buf.String(), "time=") || strings.Contains(buf.String(), `"time":`)
			if has == noTime {
				t.Errorf("format %s, noTime %v: %q", format, noTime, buf.String())
			}
		}
	}
}

func TestConfigureRejects(t *testing.T) {
	l := logrus.New()
	for _, c := range [][2]string{{"loud", "text"}, {"info", "xml"}} {
		err := Configure(l, c[0], c[1], false, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "use one of") {
			t.Errorf("Configure(%q, %q) = %v, want an error listing the accepted values", c[0], c[1], err)
		}
	}
	if l.GetLevel() != logrus.InfoLevel {
		t.Errorf("a rejected configuration changed the level to %v", l.GetLevel())
	}
}

// What client-go logs through klog comes out as the logger's own lines.
func TestRouteKlog(t *testing.T) {
	l, buf := configured(t, "debug", "json", false)
	RouteKlog(l)
	defer klog.ClearLogger()
	klog.InfoS("Warning: watch ended with error", "reflector", "r1")
	klog.ErrorS(errors.New("boom"), "list failed")
	klog.V(4).InfoS("chatty")
	klog.Flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2 (the V(4) one dropped):\n%s", len(lines), buf.String())
	}
	for i, want := range []map[string]string{
		{"level": "debug", "msg": "Warning: watch ended with error", "reflector": "r1", "source": "client-go"},
		{"level": "warning", "msg": "list failed", "error": "boom", "source": "client-go"},
	} {
		var got map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, lines[i])
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("line %d: %s = %v, want %q", i, k, got[k], v)
			}
		}
	}
}
