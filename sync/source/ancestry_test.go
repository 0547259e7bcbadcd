package source

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"plimsoll.dev/plimsoll/internal/revision"
)

// storeCommit writes a commit of an empty tree with parents straight into
// st and returns its hash; a parent need not be stored.
func storeCommit(t *testing.T, st storer.EncodedObjectStorer, message string, parents ...plumbing.Hash) plumbing.Hash {
	t.Helper()
	tree := st.NewEncodedObject()
	if err := (&object.Tree{}).Encode(tree); err != nil {
		t.Fatalf("encode tree: %v", err)
	}
	root, err := st.SetEncodedObject(tree)
	if err != nil {
		t.Fatalf("store tree: %v", err)
	}
	return putCommit(t, st, &object.Commit{Author: testSignature, Committer: testSignature, Message: message, TreeHash: root, ParentHashes: parents})
}

// TestDescends decides ancestry on this history in the clone:
//
//	a - b - c - m     (main; m merges x)
//	 \         /
//	  x ------
//	r                 (an unrelated root: a force-pushed new history)
//	o - (gone)        (o's parent is not in the clone)
func TestDescends(t *testing.T) {
	r := newRepo(t, Config{URL: "file:///nowhere"})
	st := r.storage
	a := storeCommit(t, st, "a")
	b := storeCommit(t, st, "b", a)
	c := storeCommit(t, st, "c", b)
	x := storeCommit(t, st, "x", a)
	m := storeCommit(t, st, "m", c, x)
	root := storeCommit(t, st, "r")
	orphan := storeCommit(t, st, "o", plumbing.NewHash("0123456789abcdef0123456789abcdef01234567"))
	unstored := plumbing.NewHash("89abcdef0123456789abcdef0123456789abcdef")

	tests := []struct {
		name             string
		commit, ancestor plumbing.Hash
		want             bool
		// unknown is the end of the error when it cannot be told.
		unknown string
	}{
		{name: "a fast-forward descends", commit: c, ancestor: a, want: true},
		{name: "a commit descends from itself", commit: b, ancestor: b, want: true},
		{name: "a merge descends from both sides", commit: m, ancestor: x, want: true},
		{name: "back to an older commit (a rewind)", commit: a, ancestor: c},
		{name: "a side branch does not descend from main", commit: x, ancestor: b},
		{name: "an unrelated history (a force-push)", commit: root, ancestor: c},
		{name: "an applied commit the clone never had", commit: m, ancestor: unstored},
		{name: "a missing parent cannot be told", commit: orphan, ancestor: a, unknown: "commit 0123456 is not in the local clone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Descends(context.Background(), tt.commit.String(), tt.ancestor.String())
			switch {
			case tt.unknown != "" && (!errors.Is(err, ErrAncestryUnknown) || !strings.HasSuffix(err.Error(), tt.unknown)):
				t.Fatalf("Descends = %v, %v; want ErrAncestryUnknown ending %q", got, err, tt.unknown)
			case tt.unknown != "":
				return
			case err != nil:
				t.Fatalf("Descends: %v", err)
			case got != tt.want:
				t.Fatalf("Descends(%s, %s) = %v, want %v", tt.commit, tt.ancestor, got, tt.want)
			}
		})
	}

	t.Run("a shallow boundary cannot be told past", func(t *testing.T) {
		if err := st.SetShallow([]plumbing.Hash{b}); err != nil {
			t.Fatal(err)
		}
		if got, err := r.Descends(context.Background(), c.String(), b.String()); err != nil || !got {
			t.Errorf("Descends(c, b) at a boundary b = %v, %v; want true", got, err)
		}
		_, err := r.Descends(context.Background(), c.String(), a.String())
		want := "check whether " + revision.Short(c.String()) + " descends from " + revision.Short(a.String()) +
			": ancestry cannot be told: the local clone's history is shallow at commit " + revision.Short(b.String())
		assertErr(t, err, want)
		if !errors.Is(err, ErrAncestryUnknown) {
			t.Errorf("error %v does not wrap ErrAncestryUnknown", err)
		}
	})
}
