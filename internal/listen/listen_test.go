package listen

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// http.Server's messages go through logrus as JSON: a failed TLS
// handshake as a warning with the client's address, each one counted, and
// a flood of them sampled down to a few lines that say how many were held
// back.
func TestErrorLogIsStructuredAndSampled(t *testing.T) {
	var out bytes.Buffer
	log := logrus.New()
	log.SetOutput(&out)
	log.SetFormatter(&logrus.JSONFormatter{})
	var handshakes atomic.Int64
	l := ErrorLog(log, func() { handshakes.Add(1) })
	for range 100 {
		l.Printf("http: TLS handshake error from 10.0.0.7:51234: tls: client offered only unsupported versions: [302 301]")
	}
	l.Printf("http: Accept error: too many open files; retrying in 5ms")
	if handshakes.Load() != 100 {
		t.Errorf("%d handshake failures counted, want 100", handshakes.Load())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) > 15 {
		t.Errorf("101 messages made %d log lines; want them sampled (a burst of 10, then one a second)", len(lines))
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatalf("not a JSON line: %q", lines[0])
	}
	if first["msg"] != "TLS handshake failed" || first["client"] != "10.0.0.7:51234" || first["level"] != "warning" ||
		!strings.Contains(first["error"].(string), "unsupported versions") {
		t.Errorf("the first line: %v", first)
	}
}

// The sampler lets a burst through, then holds lines back and says how
// many it held back when it lets the next one through.
func TestSamplerCountsWhatItHoldsBack(t *testing.T) {
	s := NewSampler(2, 10*time.Millisecond)
	for i := range 2 {
		if ok, n := s.Allow(); !ok || n != 0 {
			t.Fatalf("line %d of the burst: %v %d", i, ok, n)
		}
	}
	held := 0
	for {
		ok, n := s.Allow()
		if !ok {
			time.Sleep(time.Millisecond)
		}
		if ok {
			if n != held {
				t.Errorf("the line after %d held back says %d", held, n)
			}
			return
		}
		held++
	}
}
