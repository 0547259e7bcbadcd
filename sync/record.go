package sync

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// ReasonRecordRepaired is the Event reason of a sync record whose
// inventory was lost or damaged and has been rebuilt from the cluster.
const ReasonRecordRepaired = "SyncRecordRepaired"

// load reads the sync record. An inventory that is lost (the record was
// deleted) or damaged (a bad hand edit) is rebuilt from the objects that
// carry this sync's label, so that prune stays right: an object is pruned
// only when it carries the label and Git no longer has it. repair
// describes a rebuild worth reporting, "" for none (a sync's first run,
// where the rebuild finds nothing, is not one). An inventory that can be
// neither read nor rebuilt is an error; rec still holds the status then.
func (s *Syncer) load(ctx context.Context) (rec inventory.Record, repair string, err error) {
	rec, err = s.cfg.Store.Load(ctx)
	if err != nil || rec.Lost == "" {
		return rec, "", err
	}
	rebuilt, err := s.rebuild(ctx, rec.Lost)
	if err != nil {
		return rec, "", err
	}
	if rec.Lost == inventory.Missing && len(rebuilt.Inventory) == 0 {
		rec.Inventory = rebuilt.Inventory
		return rec, "", nil // a first sync
	}
	repair = fmt.Sprintf("%s; the inventory was rebuilt from the %d objects labelled %s=%s",
		rec.Lost, len(rebuilt.Inventory), contract.LabelSync, s.cfg.Name)
	if len(rebuilt.Unlisted) > 0 {
		repair += fmt.Sprintf(" (not listed, so not pruned if they left Git: %s)", strings.Join(rebuilt.Unlisted, ", "))
	}
	rec.Inventory, rec.Lost = rebuilt.Inventory, ""
	s.cfg.Log.Warn("sync record repaired", "sync", s.cfg.Name, "repair", repair)
	s.cfg.Events.Event(ctx, s.cfg.Store.Object(), corev1.EventTypeWarning, ReasonRecordRepaired, repair)
	return rec, repair, nil
}

// rebuild lists the objects labelled with this sync's name (the record
// itself left out) as an inventory, for a record whose inventory is lost
// for the reason given.
func (s *Syncer) rebuild(ctx context.Context, lost string) (apply.Rebuilt, error) {
	record := s.cfg.Store.Object()
	rebuilt, err := s.cfg.Applier.Rebuild(ctx, s.cfg.Namespaces, manifest.Key{Kind: "ConfigMap", Namespace: record.Namespace, Name: record.Name})
	if err != nil {
		return rebuilt, fmt.Errorf("%s, and it cannot be rebuilt: %w", lost, err)
	}
	return rebuilt, nil
}

// unreadable records a sync record whose inventory can be neither read nor
// rebuilt: nothing is applied or pruned, the stored inventory is left for
// a later try, and the failure is in the status and a Warning Event.
func (s *Syncer) unreadable(ctx context.Context, prev inventory.Status, err error) inventory.Status {
	st := prev
	st.State = contract.SyncFailed
	st.Message = fmt.Sprintf("nothing applied (still running %s): %s", shortOrNone(prev.Commit), oneLine(err))
	s.report(ctx, st, err)
	return st
}
