package sync

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
	"plimsoll.dev/plimsoll/sync/source"
)

// DeploymentDiffer is the rollout controller as `plimsoll diff` asks it
// about the Deployments it runs. Package rollout's Controller implements
// it; a sync never asks it (see DeploymentSink).
//
// DiffDeployment returns the live Deployment that serves a Git Deployment
// (under Git's name, whatever it runs as) and what the controller's write
// of it would make of that Deployment, as the API server's dry-run
// returns it, leaving out what the controller keeps (its status, a
// refused template, an autoscaled count); nil, nil when it runs nothing
// for it yet, for the sync's own dry-run to diff its namesake.
//
// ServingDeployment returns the live Deployment that serves workload
// namespace/name, renamed to name when it runs under another (a
// blue-green color); nil for none. A workload leaving Git is diffed as
// that Deployment going.
type DeploymentDiffer interface {
	DiffDeployment(ctx context.Context, desired *appsv1.Deployment, commit, subject string) (live, after *appsv1.Deployment, err error)
	ServingDeployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
}

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
		return "", nil, fmt.Errorf("read commit %s: %w", revision.Short(head), err)
	}
	objs, _, secrets, err := s.render(ctx, snap, len(rec.Inventory))
	if err != nil {
		return "", nil, err
	}
	// An error of the dry-run may quote a value of the commit's secrets,
	// and a value decrypted from Git may be in any object, not only in a
	// Secret, whose diff shows no value anyway.
	diffs, err = s.diffRendered(ctx, objs, rec.Inventory, snap.Commit)
	if err != nil {
		return "", nil, secrets.err(err)
	}
	for i := range diffs {
		diffs[i].Diff = secrets.text(diffs[i].Diff)
	}
	return head, diffs, nil
}

// diffRendered is Diff's work once the commit is rendered: the diffs of
// objs against the cluster, and of what the prune would delete of inv.
func (s *Syncer) diffRendered(ctx context.Context, objs []manifest.Object, inv inventory.Inventory, commit source.Commit) (diffs []apply.ObjectDiff, err error) {
	// The check's answer is not the diff's: only what the controller
	// steers is taken from it, so that the diff shows what an apply keeps.
	checked, _ := s.checkDeployments(ctx, objs, commit)
	plan, err := s.cfg.Applier.PlanDiff(ctx, objs, s.writable(inv), steeredBy(checked))
	if err != nil {
		return nil, err
	}
	if !s.cfg.Prune {
		plan.Prune = nil
	}
	// The rollout controller's Deployments are diffed as it writes them,
	// the rest through the sync's dry-run. A workload leaving Git is
	// judged by the Deployment that serves it: a blue-green one takes its
	// colors along, under names that are not in the inventory.
	plan.Items, err = divert(plan.Items, &diffs, func(it *apply.Item) (*apply.ObjectDiff, error) {
		return s.handedOffDiff(ctx, it, commit)
	})
	if err != nil {
		return nil, err
	}
	plan.Prune, err = divert(plan.Prune, &diffs, func(e inventory.Entry) (*apply.ObjectDiff, error) {
		return s.removedDiff(ctx, e)
	})
	if err != nil {
		return nil, err
	}
	dry, err := s.cfg.Applier.Diff(ctx, plan)
	if err != nil {
		return nil, err
	}
	return append(diffs, dry...), nil
}

// divert diffs each of xs with diff, adds the changes it finds to diffs,
// and returns those it had no answer (nil) for, to be diffed otherwise.
func divert[T any](xs []T, diffs *[]apply.ObjectDiff, diff func(T) (*apply.ObjectDiff, error)) ([]T, error) {
	var rest []T
	for _, x := range xs {
		d, err := diff(x)
		switch {
		case err != nil:
			return nil, err
		case d == nil:
			rest = append(rest, x)
		case d.Diff != "":
			*diffs = append(*diffs, *d)
		}
	}
	return rest, nil
}
