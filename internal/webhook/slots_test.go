package webhook

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// taken takes a place of slots for a small review from source, or fails
// the test; it returns the function that gives it back.
func taken(t *testing.T, slots *Slots, source string) (give func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	give, err := slots.take(ctx, source, 1<<10)
	if err != nil {
		t.Fatalf("no slot for %s: %v", source, err)
	}
	return give
}

// tryTake reports whether a review of size bytes from source gets a
// place within 50 ms, and gives it back at once.
func tryTake(slots *Slots, source string, size int64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	give, err := slots.take(ctx, source, size)
	if err != nil {
		return false
	}
	give()
	return true
}

// One address holds at most three quarters of the slots: with 16, its
// 13th request waits while another address's is taken at once, and once
// the first gives one back it takes it.
func TestSlotsKeepAShareForOtherSources(t *testing.T) {
	slots := NewSlots(16, 0)
	var gives []func()
	for range 12 {
		gives = append(gives, taken(t, slots, "10.0.0.2"))
	}
	if tryTake(slots, "10.0.0.2", 1<<10) {
		t.Errorf("one address took a 13th of 16 slots; want 12 at most")
	}
	if !tryTake(slots, "10.0.0.1", 1<<10) {
		t.Errorf("another address found no slot while the first held 12 of 16")
	}
	gives[0]()
	if !tryTake(slots, "10.0.0.2", 1<<10) {
		t.Errorf("the first address found no slot after giving one back")
	}
	for _, give := range gives[1:] {
		give()
	}
	if n, m := slots.Held(); n != 0 || m != 0 {
		t.Errorf("after every slot was given back: %d held, %d bytes", n, m)
	}
	// One slot: its one address may take it (a share of at least one).
	if !tryTake(NewSlots(1, 0), "10.0.0.2", 1<<10) {
		t.Errorf("the only slot was not given to the only address")
	}
}

// Each review counts its hook at 8 MiB and 32 times its size against the
// hooks' memory: with 128 MiB, small reviews run 15 at once; one address's
// 7.8 MB reviews, each counted at the address's share (96 MiB), run one
// at a time, while another address's small review still finds room.
func TestSlotsBoundTheHooksMemory(t *testing.T) {
	const big = 7_800_000
	if HookMemory(big) != 8<<20+32*big {
		t.Fatalf("HookMemory(%d) = %d", big, HookMemory(big))
	}
	slots := NewSlots(16, 128<<20)
	var gives []func()
	for i := range 16 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		give, err := slots.take(ctx, fmt.Sprintf("10.0.0.%d", 10+i), 4<<10)
		cancel()
		if err != nil {
			break
		}
		gives = append(gives, give)
	}
	if len(gives) != 15 {
		t.Errorf("%d small reviews ran at once within 128 MiB; want 15 (8 MiB and 128 KiB each)", len(gives))
	}
	for _, give := range gives {
		give()
	}
	first, err := slots.take(context.Background(), "10.0.0.2", big)
	if err != nil {
		t.Fatal(err)
	}
	if tryTake(slots, "10.0.0.2", big) {
		t.Errorf("a second 7.8 MB review of one address ran beside the first")
	}
	if !tryTake(slots, "10.0.0.1", 10<<10) {
		t.Errorf("another address's small review found no room while the first held its share")
	}
	if n, m := slots.Held(); n != 1 || m != 96<<20 {
		t.Errorf("held %d slots, %d bytes; want 1 and 96 MiB", n, m)
	}
	first()
	first() // twice gives back once
	if !tryTake(slots, "10.0.0.2", big) {
		t.Errorf("a 7.8 MB review found no room once the one before was answered")
	}
	if n, m := slots.Held(); n != 0 || m != 0 {
		t.Errorf("after every slot was given back: %d held, %d bytes", n, m)
	}
}

// A request that finds no place says why: its address's share, every
// slot, or the hooks' memory.
func TestSlotsSayWhyTheyAreBusy(t *testing.T) {
	slots := NewSlots(4, 64<<20)
	for range 3 {
		taken(t, slots, "10.0.0.2")
	}
	if got := slots.busy("10.0.0.2", 1<<10); got != "the client's address held its 3 of the 4 webhook slots the whole time" {
		t.Errorf("busy for the address at its share: %q", got)
	}
	if got := slots.busy("10.0.0.1", 8<<20); got != "the hooks of the reviews in flight held the 64 MiB of --webhook-hook-memory the whole time (this review's hook counts 48 MiB)" {
		t.Errorf("busy for the hooks' memory: %q", got)
	}
	taken(t, slots, "10.0.0.1")
	if got := slots.busy("10.0.0.3", 1<<10); got != "every one of the 4 webhook slots stayed busy" {
		t.Errorf("busy with every slot taken: %q", got)
	}
}
