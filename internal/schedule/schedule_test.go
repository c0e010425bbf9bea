package schedule

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for crontab, want := range map[string]time.Time{
		"*/5 * * * *":    base.Add(5 * time.Minute),
		"*/10 * * * * *": base.Add(10 * time.Second),
		"0 3 * * *":      base.Add(3 * time.Hour),
		"@every 90s":     base.Add(90 * time.Second),
	} {
		s, err := Parse(crontab)
		if err != nil {
			t.Errorf("Parse(%q): %v", crontab, err)
			continue
		}
		if got := s.Next(base); !got.Equal(want) {
			t.Errorf("%q next after %v = %v, want %v", crontab, base, got, want)
		}
	}
	for _, bad := range []string{"* * *", "61 * * * *", "* * * * * * *", "every minute"} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "minute hour day-of-month") {
			t.Errorf("Parse(%q) = %v, want an error explaining the format", bad, err)
		}
	}
}

func TestRunFires(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	if err := Run(ctx, []Entry{{Crontab: "* * * * * *", Fire: func(time.Time) { n.Add(1) }}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for n.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if n.Load() < 2 {
		t.Fatalf("an every-second crontab fired %d times in 3s", n.Load())
	}
	time.Sleep(100 * time.Millisecond)
	after := n.Load()
	time.Sleep(1500 * time.Millisecond)
	if n.Load() != after {
		t.Errorf("fired after the context ended")
	}
	if err := Run(context.Background(), []Entry{{Crontab: "bad"}}); err == nil {
		t.Error("Run accepted an invalid crontab")
	}
}
