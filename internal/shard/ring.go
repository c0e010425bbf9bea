// Package shard spreads objects across replicas: each replica holds a
// membership Lease (Members), the live members form a consistent-hash ring
// (Ring), and each object belongs to the one member whose share of the
// 64-bit hash space holds the hash of its key.
//
// The hash of an object is the 64-bit FNV-1a hash of its uid (or of its
// namespace, sharding by namespace): the hash that Kubernetes' sharded list
// and watch (KEP-5866, alpha in 1.36) uses, so that a member's share can be
// asked of the API server as ranges of the same space. See
// docs/design/replicas.md, "Sharding across replicas".
//
// The membership Leases are written and watched with internal/lease, the
// record and watch code leader election (internal/election) uses too.
package shard

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
)

// Hash returns the 64-bit FNV-1a hash of s.
func Hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// VirtualNodes is how many points each member has on the ring. More points
// spread the shares more evenly (with 128, three members' shares stay
// within about a tenth of a third) and split a leaving member's share among
// all the others.
const VirtualNodes = 128

// Ring maps hashes to members. The zero Ring and a Ring without members own
// nothing. A Ring is immutable.
type Ring struct {
	members []string
	points  []point // sorted by at
}

type point struct {
	at     uint64
	member int // index into members
}

// NewRing returns the ring of members (duplicates count once).
func NewRing(members []string) *Ring {
	ms := slices.Clone(members)
	sort.Strings(ms)
	ms = slices.Compact(ms)
	r := &Ring{members: ms, points: make([]point, 0, len(ms)*VirtualNodes)}
	for i, m := range ms {
		seed := Hash(m)
		for v := range VirtualNodes {
			r.points = append(r.points, point{at: mix(seed + uint64(v)*0x9e3779b97f4a7c15), member: i})
		}
	}
	sort.Slice(r.points, func(i, j int) bool {
		a, b := r.points[i], r.points[j]
		if a.at != b.at {
			return a.at < b.at
		}
		return r.members[a.member] < r.members[b.member]
	})
	return r
}

// mix is splitmix64's finalizer: it places a member's points evenly even
// though their seeds differ only in their low bits.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Members returns the ring's members, sorted.
func (r *Ring) Members() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.members)
}

// Has reports whether member is on the ring.
func (r *Ring) Has(member string) bool {
	_, ok := r.index(member)
	return ok
}

func (r *Ring) index(member string) (int, bool) {
	if r == nil {
		return 0, false
	}
	return slices.BinarySearch(r.members, member)
}

// Owner returns the member that owns hash h, or "" on an empty ring. A
// point owns the hashes from the point before it (included) up to itself
// (excluded); the first point also owns those from the last one on.
func (r *Ring) Owner(h uint64) string {
	if r == nil || len(r.points) == 0 {
		return ""
	}
	return r.members[r.ownerIndex(h)]
}

func (r *Ring) ownerIndex(h uint64) int {
	i := sort.Search(len(r.points), func(i int) bool { return r.points[i].at > h })
	if i == len(r.points) {
		i = 0
	}
	return r.points[i].member
}

// Owns returns a test of whether member owns a hash; it is false for every
// hash when member is not on the ring.
func (r *Ring) Owns(member string) func(h uint64) bool {
	i, ok := r.index(member)
	if !ok {
		return func(uint64) bool { return false }
	}
	if len(r.members) == 1 {
		return func(uint64) bool { return true }
	}
	return func(h uint64) bool { return r.ownerIndex(h) == i }
}

// Range is the hashes from Start up to End, End excluded; an End of 0 means
// the end of the space (2^64).
type Range struct{ Start, End uint64 }

// Ranges returns member's share as ranges of the hash space, in order, with
// adjacent ranges joined.
func (r *Ring) Ranges(member string) []Range {
	i, ok := r.index(member)
	if !ok || len(r.points) == 0 {
		return nil
	}
	var out []Range
	add := func(start, end uint64) {
		if start == end && end != 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].End == start {
			out[n-1].End = end
			return
		}
		out = append(out, Range{start, end})
	}
	// The first point owns [0, points[0]) and [points[last], 2^64).
	last := r.points[len(r.points)-1].at
	if r.points[0].member == i {
		add(0, r.points[0].at)
	}
	for k := 1; k < len(r.points); k++ {
		if r.points[k].member == i {
			add(r.points[k-1].at, r.points[k].at)
		}
	}
	if r.points[0].member == i {
		add(last, 0)
	}
	return out
}

// Share returns the fraction of the hash space member owns.
func (r *Ring) Share(member string) float64 {
	var total float64
	for _, rg := range r.Ranges(member) {
		total += float64(rg.End-rg.Start) / (1 << 64) // End 0 wraps: End-Start is then 2^64-Start
	}
	if len(r.members) == 1 && r.Has(member) {
		return 1
	}
	return total
}

// Selector returns member's share as a KEP-5866 shardSelector over field
// (object.metadata.uid or object.metadata.namespace): shardRange terms
// joined by ||, with the 16-digit hex bounds the API server asks for.
func (r *Ring) Selector(field, member string) string {
	var terms []string
	for _, rg := range r.Ranges(member) {
		end := fmt.Sprintf("0x%016x", rg.End)
		if rg.End == 0 {
			end = "0x10000000000000000"
		}
		terms = append(terms, fmt.Sprintf("shardRange(%s, '0x%016x', '%s')", field, rg.Start, end))
	}
	return strings.Join(terms, " || ")
}

// Key returns the hash of an object's shard key: its uid, or its namespace
// when by is "namespace".
func Key(by, namespace, uid string) uint64 {
	if by == ByNamespace {
		return Hash(namespace)
	}
	return Hash(uid)
}

// Field is the object field whose hash places an object on the ring when
// sharding by by, as a shardSelector names it.
func Field(by string) string {
	if by == ByNamespace {
		return "object.metadata.namespace"
	}
	return "object.metadata.uid"
}

// The keys an operator can shard by.
const (
	ByUID       = "uid"
	ByNamespace = "namespace"
)
