package sync

// What one commit's objects go through once its checks passed: render and
// validate, plan, the prunes' rights, the charts' hooks, apply, the
// handoff of its Deployments, prune.

import (
	"context"
	"fmt"
	"slices"

	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/decrypt"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
	"plimsoll.dev/plimsoll/sync/source"
)

// render renders and validates the objects of a commit, Helm charts
// included; an empty render is refused (it would prune the inventory's n
// objects) unless AllowEmpty. It also returns the chart releases rendered,
// and the redactor of the commit's secrets: the values of its Secrets and
// every value it held SOPS-encrypted, which its error is already rid of.
func (s *Syncer) render(ctx context.Context, snap *source.Snapshot, n int) ([]manifest.Object, []*manifest.ChartOutput, *redactor, error) {
	var charts manifest.Charts
	if s.cfg.Charts != nil {
		s.cfg.Charts.StartSync()
		charts = s.cfg.Charts
	}
	var objs []manifest.Object
	var rendered []*manifest.ChartOutput
	fsys := s.decrypted(ctx, snap.FS)
	out, err := manifest.RenderTree(ctx, fsys, s.cfg.Path, s.cfg.Limits, charts)
	if err == nil {
		objs, rendered = out.Objects, out.Charts
	}
	if err == nil && len(objs) == 0 && !s.cfg.AllowEmpty {
		err = fmt.Errorf("path %q renders no object; refusing to sync an empty set (and to prune %d objects) without --allow-empty", s.cfg.Path, n)
	}
	if err == nil {
		s.cfg.Applier.StartSync()
		err = manifest.Validate(objs, s.cfg.Applier, s.cfg.Namespace)
	}
	if err == nil {
		err = manifest.Confine(objs, s.cfg.Namespaces)
	}
	if err == nil {
		err = confineHooks(rendered, s.cfg.Namespaces)
	}
	secrets := newRedactor(objs, decrypt.Values(fsys)...)
	return objs, rendered, secrets, secrets.err(err)
}

// applyCommit plans, dry-runs and applies the commit's objects, hands the
// Deployments to the rollout controller, and records in rec's inventory
// every object now as desired. It returns the plan and what was written.
//
// The hooks of the chart releases run around it (see chartRuns): the pre
// hooks once the plan is made and before anything is written, the post
// hooks once the Deployments are handed off. A failed pre hook stops the
// sync with nothing applied; a failed post hook fails it with everything
// applied.
func (s *Syncer) applyCommit(ctx context.Context, objs []manifest.Object, charts []*manifest.ChartOutput, rec *inventory.Record, commit source.Commit, h Checked) (*apply.Plan, []apply.Change, error) {
	plan, err := s.cfg.Applier.Plan(ctx, objs, s.writable(rec.Inventory), steeredBy(h))
	if err == nil && s.cfg.Prune {
		err = s.cfg.Applier.CheckPrunes(ctx, plan.Prune)
	}
	if err != nil {
		return nil, nil, err
	}
	for _, it := range plan.Items {
		if isDeployment(it) && unchangedInGit(it, rec.Inventory) {
			// The rollout controller keeps it as Git says; its live
			// object (another color's name, an older template mid-rollout)
			// is the controller's business, so it needs no dry-run.
			it.Action = apply.ActionNone
		}
	}
	createOnly(plan)
	runs := chartRuns(charts, plan, rec.Inventory)
	if err := s.runHooks(ctx, runs, false); err != nil {
		return nil, nil, err
	}
	res, err := s.cfg.Applier.Apply(ctx, plan, isDeployment)
	for _, it := range res.Applied {
		rec.Inventory[it.Key()] = apply.EntryOf(it)
	}
	if err != nil {
		return nil, nil, err
	}
	handed, err := s.handOff(ctx, h, plan, rec.Inventory, commit)
	if err != nil {
		return nil, nil, err
	}
	for _, it := range plan.Items {
		if isDeployment(it) {
			rec.Inventory[it.Key()] = apply.EntryOf(it)
		}
	}
	if err := s.runHooks(ctx, runs, true); err != nil {
		return nil, nil, err
	}
	return plan, append(res.Changes, handed...), nil
}

// steeredBy is what keeps the fields h's controller steers on the live
// objects a plan applies over; nil without a controller.
func steeredBy(h Checked) apply.Steered {
	if h == nil {
		return nil
	}
	return h.Steered
}

// writable returns the entries of inv in the namespaces the sync may write
// in (Config.Namespaces): the others, applied while the sync was not
// limited, are neither read nor pruned, and stay in the inventory for a
// sync that may.
func (s *Syncer) writable(inv inventory.Inventory) inventory.Inventory {
	if len(s.cfg.Namespaces) == 0 {
		return inv
	}
	out := make(inventory.Inventory, len(inv))
	for key, e := range inv {
		if e.Namespace != "" && slices.Contains(s.cfg.Namespaces, e.Namespace) {
			out[key] = e
		}
	}
	return out
}

// prune deletes what left Git (when pruning is on) and drops it from rec's
// inventory. An object that could not be deleted stays in the inventory, so
// the next sync tries again.
func (s *Syncer) prune(ctx context.Context, plan *apply.Plan, rec *inventory.Record) (apply.PruneResult, error) {
	if !s.cfg.Prune {
		// Objects that left Git are no longer this sync's to manage.
		for _, e := range plan.Prune {
			delete(rec.Inventory, e.Key())
		}
		return apply.PruneResult{}, nil
	}
	if len(plan.Prune) == 0 {
		return apply.PruneResult{}, nil
	}
	pruned, err := s.cfg.Applier.Prune(ctx, plan.Prune)
	for _, ref := range append(pruned.Deleted, pruned.Kept...) {
		delete(rec.Inventory, ref)
	}
	return pruned, err
}
