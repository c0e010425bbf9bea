package listen

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// A source's budget is shared by its connections and outlives them; a
// banned source is refused for resetBan, others are not.
func TestResetBudgetsPerSource(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := newResetBudgets(func() time.Time { return now })
	for i := range earlyResetBurst {
		if ok, remembered := b.spend("10.0.0.2"); !ok || !remembered {
			t.Fatalf("early reset %d refused (remembered %v), want the burst of %d allowed", i, remembered, earlyResetBurst)
		}
	}
	if ok, _ := b.spend("10.0.0.2"); ok {
		t.Error("an early reset past the burst was allowed")
	}
	if ok, _ := b.spend("10.0.0.1"); !ok {
		t.Error("another source's first early reset was refused")
	}
	b.ban("10.0.0.2")
	if !b.banned("10.0.0.2") || b.banned("10.0.0.1") {
		t.Errorf("banned: 10.0.0.2 %v, 10.0.0.1 %v; want only the first", b.banned("10.0.0.2"), b.banned("10.0.0.1"))
	}
	now = now.Add(resetBan)
	if b.banned("10.0.0.2") {
		t.Errorf("still banned after %s", resetBan)
	}
	if ok, _ := b.spend("10.0.0.2"); !ok {
		t.Errorf("no early reset allowed after %s (the budget refills at %d a second)", resetBan, earlyResetRate)
	}
}

// At most resetSources sources are remembered: the ones as good as new
// are forgotten to make room, and when none is, a new source is not
// remembered (its connections keep budgets of their own).
func TestResetBudgetsAreBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := newResetBudgets(func() time.Time { return now })
	src := func(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255) }
	for i := range resetSources {
		b.spend(src(i))
		b.ban(src(i))
	}
	if _, remembered := b.spend("192.0.2.1"); remembered {
		t.Error("a new source was remembered while every place was held by a banned one")
	}
	now = now.Add(time.Minute)
	if _, remembered := b.spend("192.0.2.1"); !remembered {
		t.Error("a new source was not remembered once the others' bans were over and budgets whole")
	}
	if n := len(b.bySource); n > resetSources {
		t.Errorf("%d sources remembered, want at most %d", n, resetSources)
	}
}

// A client that dials again each time its rapid-reset connection is cut
// gets no new budget: its next connection from the same address is
// closed at once, told to Refused, while a client from another address is
// served.
func TestServerRefusesASourceCutForRapidReset(t *testing.T) {
	refused := &refusals{}
	l := Limits{MaxStreams: 1000, Refused: refused.add}
	addr := testServer(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	}))
	rapidReset(t, dialH2From(t, "127.0.0.2", addr))
	if !refused.wait("reset_flood 127.0.0.2:") {
		t.Fatalf("the flood was not cut: told to Refused %q", refused)
	}
	before := strings.Count(refused.String(), "reset_flood")
	again := dialFrom(t, "127.0.0.2", addr)
	_, _ = io.WriteString(again, http2.ClientPreface) // may fail: the server closes the connection at once
	if !closedWithin(again, 5*time.Second) {
		t.Error("the cut source's new connection was served")
	}
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(refused.String(), "reset_flood") == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Count(refused.String(), "reset_flood") == before {
		t.Errorf("the refused connection was not told to Refused: %q", refused)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("a client from 127.0.0.1 while 127.0.0.2 is refused: %v", err)
	}
	resp.Body.Close()
}
