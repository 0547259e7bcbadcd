package source

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"plimsoll.dev/plimsoll/internal/revision"
)

// Descends reports whether commit descends from ancestor, or is it:
// whether ancestor is reachable from commit through parents in the local
// clone. commit must be in the clone (see Fetch); ancestor need not be (a
// commit that is not there is not reachable).
//
// The clone holds every commit reachable from each tip it fetched (a fetch
// is never shallow: it asks for the whole history it lacks), so the walk
// sees the whole history and the answer is exact. When a commit on the way
// is missing all the same (a clone cut short, a shallow boundary), the
// error wraps ErrAncestryUnknown and names it: no guess either way.
//
// The walk goes breadth first from commit, so a descendant is found after
// the commits pushed since ancestor; a commit that does not descend (a
// force-push) costs a walk of its whole history, one object read per
// commit.
func (r *Repository) Descends(ctx context.Context, commit, ancestor string) (bool, error) {
	from, err := parseHash(commit)
	if err != nil {
		return false, fmt.Errorf("check ancestry: %w", err)
	}
	to, err := parseHash(ancestor)
	if err != nil {
		return false, fmt.Errorf("check ancestry: %w", err)
	}
	if err := r.lock(ctx); err != nil {
		return false, fmt.Errorf("check whether %s descends from %s: %w", from, to, err)
	}
	defer r.gate.release()
	found, err := r.reaches(ctx, from, to)
	if err != nil {
		return false, fmt.Errorf("check whether %s descends from %s: %w", revision.Short(from.String()), revision.Short(to.String()), err)
	}
	return found, nil
}

// reaches walks the parents of from, breadth first, until it meets to.
func (r *Repository) reaches(ctx context.Context, from, to plumbing.Hash) (bool, error) {
	shallow, err := r.storage.Shallow()
	if err != nil {
		return false, fmt.Errorf("read the clone's shallow commits: %w", err)
	}
	boundary := make(map[plumbing.Hash]bool, len(shallow))
	for _, h := range shallow {
		boundary[h] = true
	}
	seen := map[plumbing.Hash]bool{from: true}
	queue := []plumbing.Hash{from}
	for n := 0; len(queue) > 0; n++ {
		h := queue[0]
		queue = queue[1:]
		if h == to {
			return true, nil
		}
		if n%ancestryCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		c, err := object.GetCommit(r.storage, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return false, fmt.Errorf("%w: commit %s is not in the local clone", ErrAncestryUnknown, revision.Short(h.String()))
		}
		if err != nil {
			return false, fmt.Errorf("read commit %s: %w", revision.Short(h.String()), err)
		}
		if boundary[h] {
			return false, fmt.Errorf("%w: the local clone's history is shallow at commit %s", ErrAncestryUnknown, revision.Short(h.String()))
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, nil
}
