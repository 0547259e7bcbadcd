// Package shard spreads syncs over the live replicas of a daemon with
// Kubernetes Leases: each replica renews a Lease of its own while it runs,
// every replica computes the same assignment of syncs to the live ones
// (Assign), and a replica writes for a sync only while it holds the sync's
// Lease, which it takes only from a replica that released it or died
// (Keeper).
package shard

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
)

// Shape of the ring.
const (
	// pointsPerMember is how many points each replica has on the ring:
	// with 100, three replicas split the ring within a few percent of a
	// third each, before the bound evens the rest out.
	pointsPerMember = 100
	// Balance is how far above the mean a replica's load may go: with
	// 0.25, 30 syncs on 3 replicas put at most ceil(1.25 * 10) = 13 on
	// one.
	Balance = 0.25
)

// Assign gives each sync a member, by consistent hashing with bounded
// loads: a sync goes to the first member clockwise from its point on the
// ring whose load is below the bound, ceil((1+Balance) * syncs/members).
// The syncs are placed in the order of their names, so every replica that
// sees the same syncs and members computes the same assignment. When a
// member joins or leaves, only about syncs/members syncs move: those of
// the member that left (or those the new one takes), and the few the
// bound pushes on. With no member, nothing is assigned.
func Assign(syncs, members []string) map[string]string {
	out := make(map[string]string, len(syncs))
	if len(members) == 0 || len(syncs) == 0 {
		return out
	}
	ring := newRing(members)
	bound := int(math.Ceil((1 + Balance) * float64(len(syncs)) / float64(len(members))))
	load := make(map[string]int, len(members))
	for _, name := range slices.Sorted(slices.Values(syncs)) {
		start, _ := slices.BinarySearchFunc(ring, point(name), func(p ringPoint, h uint64) int { return cmp.Compare(p.hash, h) })
		for i := range ring {
			p := ring[(start+i)%len(ring)]
			if load[p.member] < bound {
				out[name] = p.member
				load[p.member]++
				break
			}
		}
	}
	return out
}

// ringPoint is one of a member's points on the ring.
type ringPoint struct {
	hash   uint64
	member string
}

// newRing places pointsPerMember points of each member on the ring, in
// order.
func newRing(members []string) []ringPoint {
	ring := make([]ringPoint, 0, len(members)*pointsPerMember)
	for _, m := range members {
		for i := range pointsPerMember {
			ring = append(ring, ringPoint{hash: point(m + "#" + strconv.Itoa(i)), member: m})
		}
	}
	slices.SortFunc(ring, func(a, b ringPoint) int { return cmp.Compare(a.hash, b.hash) })
	return ring
}

// point is where s sits on the ring.
func point(s string) uint64 {
	sum := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}
