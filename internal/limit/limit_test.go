package limit

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 16 << 20: "16 MiB", 64 << 30: "64 GiB", 200e6: "190.7 MiB",
	} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestQuoteCutsLongValues(t *testing.T) {
	if got := Quote("short"); got != "short" {
		t.Errorf("Quote(short) = %q", got)
	}
	got := Quote(strings.Repeat("x", 1<<20))
	if len(got) > MaxQuotedBytes+40 || !strings.HasSuffix(got, "... (1 MiB in all)") {
		t.Errorf("Quote(1 MiB) = %q", got)
	}
}

func TestJoinListsTheFirstAndCountsTheRest(t *testing.T) {
	if Join(nil) != nil {
		t.Fatal("Join(nil) is not nil")
	}
	target := errors.New("the last one")
	long := strings.Repeat("y", 10_000)
	var errs []error
	for i := range 100_000 {
		if i < MaxListed+1 {
			errs = append(errs, fmt.Errorf("problem %d: %s", i, long))
		} else {
			errs = append(errs, errors.New("another"))
		}
	}
	errs = append(errs, target)
	err := Join(errs)
	msg := err.Error()
	if max := MaxListed*(MaxProblemBytes+40) + 200; len(msg) > max {
		t.Errorf("message is %d bytes, over %d", len(msg), max)
	}
	if !strings.HasPrefix(msg, "problem 0: yyy") || !strings.Contains(msg, "\nproblem 9: ") || strings.Contains(msg, "problem 10:") {
		t.Errorf("message does not list exactly the first %d problems:\n%.300s", MaxListed, msg)
	}
	if !strings.HasSuffix(msg, "... and 99991 more (100001 problems in all; fix these and run again to see the rest)") {
		t.Errorf("message ends with %q", msg[len(msg)-120:])
	}
	if !errors.Is(err, target) {
		t.Error("errors.Is does not see an error past the listed ones")
	}
}

func TestJoinOfFewListsAll(t *testing.T) {
	err := Join([]error{errors.New("a"), errors.New("b")})
	if err.Error() != "a\nb" {
		t.Errorf("got %q, want errors.Join's text", err)
	}
}

func TestSprintfCutsQuotedStringsOnly(t *testing.T) {
	long := strings.Repeat("n", 1000)
	got := Sprintf("%d%% %q is not a name: %s", 5, long, long)
	want := fmt.Sprintf("5%% %q is not a name: %s", Quote(long), long)
	if got != want {
		t.Errorf("got  %.200s\nwant %.200s", got, want)
	}
	if got := Sprintf("%q %5.2f %q", "a", 1.5, "b"); got != `"a"  1.50 "b"` {
		t.Errorf("got %s", got)
	}
}

func TestCutKeepsTheStartAndTheEnd(t *testing.T) {
	s := "start " + strings.Repeat("m", 5000) + " what to change"
	got := Cut(s)
	if len(got) > MaxProblemBytes+40 || !strings.HasPrefix(got, "start mmm") || !strings.HasSuffix(got, "mmm what to change") ||
		!strings.Contains(got, " ...(3.9 KiB left out)... ") {
		t.Errorf("Cut = %q", got)
	}
	if Cut("short") != "short" {
		t.Error("Cut changed a short text")
	}
}
