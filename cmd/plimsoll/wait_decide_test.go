package main

import (
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/internal/revision"
)

// Commits of a branch a1 <- x2 <- y3, and z2 force-pushed on a1.
const (
	a1 = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
	x2 = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"
	y3 = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"
	z2 = "d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2"
)

func TestRelate(t *testing.T) {
	for _, tc := range []struct {
		name               string
		applied, head      string
		contains, onBranch bool
		want               ancestry
	}{
		{name: "the awaited commit applied", applied: x2, head: x2, want: ancestry{rel: relSame}},
		{name: "a descendant pushed over it and applied", applied: y3, head: y3, contains: true, onBranch: true, want: ancestry{rel: relContains, by: y3}},
		{name: "the sync still at its parent", applied: a1, head: x2, onBranch: true, want: ancestry{rel: relPending}},
		{name: "the sync still at its parent, a descendant on the branch", applied: a1, head: y3, onBranch: true, want: ancestry{rel: relPending}},
		{name: "force-pushed away and applied", applied: z2, head: z2, want: ancestry{rel: relReplaced, by: z2}},
		{name: "force-pushed away, not applied yet", applied: a1, head: z2, want: ancestry{rel: relReplaced, by: z2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := relate(x2, tc.applied, tc.head, tc.contains, tc.onBranch); got != tc.want {
				t.Errorf("relate(x2, %s, head %s) = %+v, want %+v", revision.Short(tc.applied), revision.Short(tc.head), got, tc.want)
			}
		})
	}
}

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		awaited string
		looks   []recordLook
		// want is a part of the error, "" for none: the wait goes on.
		want []string
	}{
		{name: "the sync applied the awaited commit, without the workload", awaited: x2,
			looks: []recordLook{{sync: "platform", applied: x2, awaited: x2, ancestry: ancestry{rel: relSame}}},
			want:  []string{`workload "wbe" not found in namespace shop`, "commit b2b2b2b applied by sync platform has none"}},
		{name: "the sync applied a descendant, without the workload", awaited: x2,
			looks: []recordLook{{sync: "platform", applied: y3, awaited: x2, ancestry: ancestry{rel: relContains, by: y3}}},
			want:  []string{"commit c3c3c3c applied by sync platform (it contains b2b2b2b)"}},
		{name: "the applied commit, no --commit", awaited: "",
			looks: []recordLook{{sync: "platform", applied: a1, awaited: a1, ancestry: ancestry{rel: relSame}}},
			want:  []string{"commit a1a1a1a applied by sync platform"}},
		{name: "the awaited commit not applied yet: it may add the workload", awaited: x2,
			looks: []recordLook{{sync: "platform", applied: a1, awaited: x2, ancestry: ancestry{rel: relPending}}}},
		{name: "another commit applied, no repository to tell", awaited: x2,
			looks: []recordLook{{sync: "platform", applied: y3, awaited: x2}}},
		{name: "the inventory lists it: being created, or restored", awaited: x2,
			looks: []recordLook{{sync: "platform", applied: x2, awaited: x2, ancestry: ancestry{rel: relSame}, listed: true}}},
		{name: "listed by one of two syncs", awaited: "",
			looks: []recordLook{
				{sync: "a", applied: a1, awaited: a1, ancestry: ancestry{rel: relSame}},
				{sync: "b", applied: x2, awaited: x2, ancestry: ancestry{rel: relSame}, listed: true}}},
		{name: "in neither of two syncs", awaited: "",
			looks: []recordLook{
				{sync: "a", applied: a1, awaited: a1, ancestry: ancestry{rel: relSame}},
				{sync: "b", applied: x2, awaited: x2, ancestry: ancestry{rel: relSame}}},
			want: []string{"commit a1a1a1a applied by sync a, nor the commit b2b2b2b applied by sync b"}},
		{name: "no record, a given commit: the sync has not run yet", awaited: x2},
		{name: "no record, no commit: nothing to wait on", awaited: "",
			want: []string{"no sync record was found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := missing("shop", "wbe", tc.awaited, tc.looks)
			switch {
			case len(tc.want) == 0 && err != nil:
				t.Fatalf("missing = %v, want the wait to go on", err)
			case len(tc.want) > 0 && err == nil:
				t.Fatalf("missing = nil, want an error with %q", tc.want)
			}
			for _, part := range tc.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("missing = %q, want it to say %q", err, part)
				}
			}
		})
	}
}

func TestReplacedNamesBoth(t *testing.T) {
	err := replaced("platform", x2, ancestry{rel: relReplaced, by: z2})
	for _, part := range []string{"commit b2b2b2b was replaced by d2d2d2d, which does not contain it", "sync platform"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("replaced = %q, want it to say %q", err, part)
		}
	}
}
