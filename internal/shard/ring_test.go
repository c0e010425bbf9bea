package shard

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestHashIsFNV1a64(t *testing.T) {
	// The FNV-1a 64-bit offset basis and a published test vector.
	if got := Hash(""); got != 0xcbf29ce484222325 {
		t.Errorf("Hash(\"\") = %#x", got)
	}
	if got := Hash("a"); got != 0xaf63dc4c8601ec8c {
		t.Errorf("Hash(\"a\") = %#x", got)
	}
}

func TestRingOwnersAreExactlyOne(t *testing.T) {
	r := NewRing([]string{"c", "a", "b", "a"})
	if got := strings.Join(r.Members(), ","); got != "a,b,c" {
		t.Fatalf("members %s", got)
	}
	owns := map[string]func(uint64) bool{}
	for _, m := range r.Members() {
		owns[m] = r.Owns(m)
	}
	counts := map[string]int{}
	const n = 30000
	for i := range n {
		h := Hash(fmt.Sprintf("uid-%d", i))
		owner := r.Owner(h)
		k := 0
		for m, f := range owns {
			if f(h) {
				k++
				if m != owner {
					t.Fatalf("hash %#x: Owns(%s) but Owner is %s", h, m, owner)
				}
			}
		}
		if k != 1 {
			t.Fatalf("hash %#x owned by %d members", h, k)
		}
		counts[owner]++
	}
	for m, c := range counts {
		if share := float64(c) / n; math.Abs(share-1.0/3) > 0.06 {
			t.Errorf("%s holds %.3f of the objects; want about a third", m, share)
		}
	}
}

func TestRangesCoverTheSpaceOnce(t *testing.T) {
	r := NewRing([]string{"x", "y", "z"})
	var total float64
	for _, m := range r.Members() {
		total += r.Share(m)
		for _, rg := range r.Ranges(m) {
			// Both ends of every range agree with Owner.
			if o := r.Owner(rg.Start); o != m {
				t.Fatalf("%s's range %#x–%#x starts in %s's share", m, rg.Start, rg.End, o)
			}
			if o := r.Owner(rg.End - 1); o != m {
				t.Fatalf("%s's range %#x–%#x ends in %s's share", m, rg.Start, rg.End, o)
			}
		}
	}
	if math.Abs(total-1) > 1e-9 {
		t.Errorf("shares add up to %v", total)
	}
	if got := NewRing([]string{"solo"}).Share("solo"); got != 1 {
		t.Errorf("a lone member's share = %v", got)
	}
	if got := NewRing(nil).Owner(42); got != "" {
		t.Errorf("empty ring's owner = %q", got)
	}
	if r.Owns("nobody")(1) {
		t.Error("a member not on the ring owns a hash")
	}
}

func TestLeavingMovesOnlyTheLeaversShare(t *testing.T) {
	before := NewRing([]string{"a", "b", "c"})
	after := NewRing([]string{"a", "b"})
	moved := 0
	for i := range 10000 {
		h := Hash(fmt.Sprintf("o%d", i))
		b, a := before.Owner(h), after.Owner(h)
		if b != "c" && a != b {
			t.Fatalf("hash %#x moved from %s to %s although %s stayed", h, b, a, b)
		}
		if b == "c" {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("c owned nothing")
	}
}

func TestSelector(t *testing.T) {
	sel := NewRing([]string{"solo"}).Selector("object.metadata.uid", "solo")
	if want := "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"; sel != want {
		t.Errorf("selector %s, want %s", sel, want)
	}
	r := NewRing([]string{"a", "b"})
	if n := strings.Count(r.Selector("object.metadata.namespace", "a"), "shardRange("); n != len(r.Ranges("a")) {
		t.Errorf("%d terms for %d ranges", n, len(r.Ranges("a")))
	}
}

func TestKey(t *testing.T) {
	if Key(ByNamespace, "ns", "u") != Hash("ns") || Key(ByUID, "ns", "u") != Hash("u") {
		t.Error("Key hashes the wrong field")
	}
}
