package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
)

// stderrTailLines is how many of the last stderr lines Result.StderrTail
// keeps, each cut to stderrTailLineBytes.
const (
	stderrTailLines     = 10
	stderrTailLineBytes = 1024
)

// labels are the fields a hook's JSON line cannot override.
var labels = map[string]bool{"hook": true, "binding": true, "queue": true, "output": true}

// copyBuffers hold the buffers that copy a hook's output into its
// lineWriter, between runs.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// lineWriter logs each line written to it. A line longer than max is logged
// cut, marked truncated, and the rest of it dropped, so a hook that never
// writes a newline cannot make it buffer without bound. Only one goroutine
// writes to it (os/exec's copier), and Run reads it after Wait.
type lineWriter struct {
	log      *logrus.Entry
	max      int
	buf      []byte
	skipping bool // dropping the rest of a line that was already cut
	keep     int  // how many last lines to keep for tail
	last     []string
}

func newLineWriter(log *logrus.Entry, maxLine, keep int) *lineWriter {
	return &lineWriter{log: log, max: maxLine, keep: keep}
}

// Write never fails and never blocks on the hook's behalf.
func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk, p = p[:i], p[i+1:]
		} else {
			p = nil
		}
		if w.skipping {
			w.skipping = i < 0
			continue
		}
		if room := w.max - len(w.buf); len(chunk) > room {
			w.buf = append(w.buf, chunk[:room]...)
			w.emit(true)
			w.skipping = i < 0
			continue
		}
		w.buf = append(w.buf, chunk...)
		if i >= 0 {
			w.emit(false)
		}
	}
	return n, nil
}

// ReadFrom copies r into w with a pooled buffer; os/exec's copy would
// allocate 32 KiB for each stream of each run.
func (w *lineWriter) ReadFrom(r io.Reader) (int64, error) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// The structs hide w's own ReadFrom and r's WriteTo from io.CopyBuffer.
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, *buf)
}

// flush logs a last line that had no newline.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.emit(false)
	}
}

// tail returns the kept last lines, joined by newlines.
func (w *lineWriter) tail() string {
	return strings.Join(w.last, "\n")
}

func (w *lineWriter) emit(truncated bool) {
	line := string(bytes.TrimSuffix(w.buf, []byte("\r")))
	w.buf = w.buf[:0]
	if strings.TrimSpace(line) == "" {
		return
	}
	w.remember(line)
	if truncated {
		w.log.WithField("truncated", true).Info(line)
		return
	}
	entry, level, msg, ok := jsonRecord(w.log, line)
	if !ok {
		w.log.Info(line)
		return
	}
	entry.Log(level, msg)
}

func (w *lineWriter) remember(line string) {
	if w.keep == 0 {
		return
	}
	if len(line) > stderrTailLineBytes {
		line = line[:stderrTailLineBytes] + "..."
	}
	if len(w.last) == w.keep {
		w.last = append(w.last[:0], w.last[1:]...)
	}
	w.last = append(w.last, line)
}

// jsonRecord turns a line holding a JSON object into a log record: its keys
// become fields, "msg" (or "message") the message and "level" the level.
// Keys that would replace the run's labels are kept under "fields.<key>", as
// logrus does with its own reserved keys.
func jsonRecord(log *logrus.Entry, line string) (*logrus.Entry, logrus.Level, string, bool) {
	if !strings.HasPrefix(line, "{") {
		return nil, 0, "", false
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || dec.More() {
		return nil, 0, "", false
	}
	level := logrus.InfoLevel
	if s, ok := obj["level"].(string); ok {
		if l, err := logrus.ParseLevel(s); err == nil {
			// A hook must not be able to stop the operator through
			// logrus's fatal or panic levels.
			level = max(l, logrus.ErrorLevel)
			delete(obj, "level")
		}
	}
	var msg string
	for _, key := range []string{"msg", "message"} {
		if v, ok := obj[key]; ok {
			if s, isString := v.(string); isString {
				msg = s
			} else {
				msg = fmt.Sprint(v)
			}
			delete(obj, key)
			break
		}
	}
	fields := make(logrus.Fields, len(obj))
	for k, v := range obj {
		if labels[k] {
			k = "fields." + k
		}
		fields[k] = v
	}
	return log.WithFields(fields), level, msg, true
}
