package sync

import (
	"context"
	"fmt"

	"plimsoll.dev/plimsoll/sync/apply"
)

// Diff returns what a sync of the branch head would change, one unified
// diff per object, without changing anything: the objects are dry-run
// with server-side apply, but the Deployments the rollout controller
// runs, which are dry-run as it writes them, against the Deployment that
// serves them (so that a field Git dropped shows as removed where its
// write removes it, and the status it keeps does not show); the objects a
// prune would delete diff to nothing. commit is the head.
func (s *Syncer) Diff(ctx context.Context) (commit string, diffs []apply.ObjectDiff, err error) {
	rec, err := s.cfg.Store.Load(ctx)
	if err != nil {
		return "", nil, err
	}
	if rec.Lost != "" {
		// What a sync would prune, by the inventory it would rebuild.
		rebuilt, err := s.rebuild(ctx, rec.Lost)
		if err != nil {
			return "", nil, err
		}
		rec.Inventory = rebuilt.Inventory
	}
	head, err := s.cfg.Source.Head(ctx)
	if err == nil {
		err = s.cfg.Source.Fetch(ctx, head)
	}
	if err != nil {
		return "", nil, fmt.Errorf("read the source: %w", err)
	}
	snap, err := s.cfg.Source.Snapshot(ctx, head)
	if err != nil {
		return "", nil, fmt.Errorf("read commit %s: %w", short(head), err)
	}
	objs, err := s.render(snap, len(rec.Inventory))
	if err != nil {
		return "", nil, err
	}
	if objs, err = s.scaleTargets(ctx, objs); err != nil {
		return "", nil, err
	}
	plan, err := s.cfg.Applier.Plan(ctx, objs, s.writable(rec.Inventory))
	if err != nil {
		return "", nil, err
	}
	if !s.cfg.Prune {
		plan.Prune = nil
	}
	// The rollout controller's Deployments are diffed as it writes them,
	// the rest through the sync's dry-run.
	rest := plan.Items[:0:0]
	for _, it := range plan.Items {
		d, err := s.handedOffDiff(ctx, it, snap.Commit)
		switch {
		case err != nil:
			return "", nil, err
		case d == nil:
			rest = append(rest, it)
		case d.Diff != "":
			diffs = append(diffs, *d)
		}
	}
	plan.Items = rest
	dry, err := s.cfg.Applier.Diff(ctx, plan)
	if err != nil {
		return "", nil, err
	}
	return head, append(diffs, dry...), nil
}
