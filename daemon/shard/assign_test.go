package shard

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
)

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// loads counts the syncs of each member.
func loads(a map[string]string) map[string]int {
	out := map[string]int{}
	for _, m := range a {
		out[m]++
	}
	return out
}

func TestAssign(t *testing.T) {
	tests := []struct {
		name           string
		syncs, members int
	}{
		{name: "no member", syncs: 5},
		{name: "no sync", members: 3},
		{name: "one member", syncs: 7, members: 1},
		{name: "30 syncs on 3 replicas", syncs: 30, members: 3},
		{name: "200 syncs on 3 replicas", syncs: 200, members: 3},
		{name: "fewer syncs than replicas", syncs: 2, members: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			syncs, members := names("sync", tt.syncs), names("replica", tt.members)
			got := Assign(syncs, members)
			if tt.members == 0 {
				if len(got) != 0 {
					t.Fatalf("assigned %v with no member", got)
				}
				return
			}
			if len(got) != tt.syncs {
				t.Fatalf("assigned %d of %d syncs", len(got), tt.syncs)
			}
			bound := int(math.Ceil((1 + Balance) * float64(tt.syncs) / float64(tt.members)))
			for m, n := range loads(got) {
				if n > bound {
					t.Errorf("%s has %d syncs, more than the bound %d", m, n, bound)
				}
				if !slices.Contains(members, m) {
					t.Errorf("a sync went to %s, no member", m)
				}
			}
			shuffled := slices.Clone(syncs)
			slices.Reverse(shuffled)
			reordered := slices.Clone(members)
			slices.Reverse(reordered)
			if again := Assign(shuffled, reordered); !maps.Equal(again, got) {
				t.Error("the same syncs and members in another order gave another assignment")
			}
		})
	}
}

// TestAssignMovesFew: when one of three replicas leaves, its syncs move
// and few others do; when it comes back, few move again.
func TestAssignMovesFew(t *testing.T) {
	syncs := names("sync", 300)
	three := []string{"a", "b", "c"}
	before := Assign(syncs, three)
	after := Assign(syncs, []string{"a", "b"})
	moved, stayed := 0, 0
	for _, s := range syncs {
		switch {
		case before[s] == "c":
			if after[s] == "c" {
				t.Fatalf("sync %s stayed on the replica that left", s)
			}
		case before[s] != after[s]:
			moved++
		default:
			stayed++
		}
	}
	// 300 syncs: c had about 100; of the 200 others, the bound (150 each
	// on two) pushes some on, but far fewer than a rehash (about half).
	if moved > 60 {
		t.Errorf("%d syncs of the replicas that stayed moved (%d stayed); want few", moved, stayed)
	}
	back := Assign(syncs, three)
	if !maps.Equal(back, before) {
		t.Error("the same three replicas again gave another assignment")
	}
}
