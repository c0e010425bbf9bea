package loop

import (
	"context"
	"testing"
	"time"
)

// Pokes made while nobody waits are kept as one: the next Wait returns at
// once, the one after waits again.
func TestNudgeKeepsOnePoke(t *testing.T) {
	n := NewNudge()
	n.Poke()
	n.Poke() // never blocks
	if !n.Wait(context.Background(), time.Hour) {
		t.Fatal("Wait reported an ended context")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n.Wait(ctx, time.Hour) {
		t.Fatal("a second Wait returned for the same poke instead of with its ended context")
	}
}

func TestNudgeWakesAWaiter(t *testing.T) {
	n := NewNudge()
	woke := make(chan bool)
	go func() { woke <- n.Wait(context.Background(), time.Hour) }()
	n.Poke()
	select {
	case ok := <-woke:
		if !ok {
			t.Fatal("Wait reported an ended context")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a poke did not wake the waiter within 10 s")
	}
	if !n.Wait(context.Background(), time.Millisecond) {
		t.Fatal("Wait reported an ended context after its time")
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep reported an ended context")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep with an ended context reported its time passed")
	}
}
