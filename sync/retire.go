package sync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/sync/inventory"
)

// ReasonRetired is the Event reason of a sync whose declaration is gone,
// once it is retired.
const ReasonRetired = "SyncRetired"

// Retire ends a sync whose declaration is gone. With Config.Prune it
// deletes every object of the sync's inventory, as if all had left Git
// (its workloads are retired first, and the objects another sync or a
// person took over are left), then deletes the sync record; without
// Prune it leaves the objects where they are and deletes only the
// record. When anything could not be deleted yet (a failure, a ConfigMap
// a rollout still refers to), the record keeps what is left and Retire
// returns an error: the caller tries again.
func (s *Syncer) Retire(ctx context.Context) error {
	rec, _, err := s.load(ctx)
	if err != nil {
		return fmt.Errorf("retire sync %s: %w", s.cfg.Name, err)
	}
	if s.cfg.Prune && len(rec.Inventory) > 0 {
		if err := s.pruneAll(ctx, &rec); err != nil {
			return fmt.Errorf("retire sync %s: %w", s.cfg.Name, err)
		}
	}
	if err := s.cfg.Store.Delete(ctx); err != nil {
		return fmt.Errorf("retire sync %s: %w", s.cfg.Name, err)
	}
	msg := fmt.Sprintf("sync %s retired: its declaration is gone", s.cfg.Name)
	if !s.cfg.Prune {
		msg += "; what it applied is left in place (prune: false)"
	}
	s.cfg.Log.Info("sync retired", "sync", s.cfg.Name, "prune", s.cfg.Prune)
	s.cfg.Events.Event(ctx, s.cfg.Store.Object(), corev1.EventTypeNormal, ReasonRetired, msg)
	return nil
}

// pruneAll deletes what rec's inventory holds; what is left of it is
// saved in the record, and named in the error.
func (s *Syncer) pruneAll(ctx context.Context, rec *inventory.Record) error {
	entries := make([]inventory.Entry, 0, len(rec.Inventory))
	for _, e := range s.writable(rec.Inventory) {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b inventory.Entry) int { return strings.Compare(a.Key().String(), b.Key().String()) })
	if s.cfg.Deployments != nil {
		// The sync's last handoff: nothing desired, every workload leaving.
		h, err := s.cfg.Deployments.Check(ctx, Handoff{})
		if err == nil {
			err = h.Take(ctx, deploymentsOf(entries))
		}
		if err != nil {
			return fmt.Errorf("retire the workloads: %w", err)
		}
	}
	pruned, err := s.cfg.Applier.Prune(ctx, entries)
	for _, ref := range append(pruned.Deleted, pruned.Kept...) {
		delete(rec.Inventory, ref)
	}
	if err == nil && len(pruned.Waiting) > 0 {
		err = errors.New(describeWaits(pruned.Waiting))
	}
	if err != nil {
		if _, serr := s.cfg.Store.Save(ctx, *rec); serr != nil {
			err = errors.Join(err, serr)
		}
		return err
	}
	return nil
}
