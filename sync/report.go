package sync

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/redact"
	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
	"plimsoll.dev/plimsoll/sync/source"
)

// synced reports an applied commit: logs, metrics, an Event when anything
// happened, and the status to record.
func (s *Syncer) synced(ctx context.Context, prev, fetched inventory.Status, commit source.Commit, plan *apply.Plan, changes []apply.Change, pruned apply.PruneResult, charts []*manifest.ChartOutput) inventory.Status {
	log := s.cfg.Log.With("sync", s.cfg.Name, "commit", revision.Short(commit.Hash))
	// An object applied again that the server left as it was (its Git
	// form holds a value the server stores in another form, such as a
	// CPU of 1000m it keeps as 1, so it does not look in sync) is no
	// change: a poll that wrote nothing else logs nothing and records no
	// Event.
	written := slices.DeleteFunc(slices.Clone(changes), func(c apply.Change) bool { return c.Action == apply.ActionNone })
	for _, c := range written {
		log.Info("applied", "object", c.Key.String(), "action", string(c.Action), "origin", c.Item.Object.Origin.String())
		if c.Item.TemplateRestored && c.Item.Live != nil {
			s.cfg.Events.Event(ctx, c.Item.Live, corev1.EventTypeNormal, ReasonTemplateRestored,
				fmt.Sprintf("pod template changed outside Git (kubectl rollout undo, kubectl set image) put back as commit %s has it", revision.Short(commit.Hash)))
		}
	}
	for _, key := range pruned.Deleted {
		log.Info("pruned", "object", key.String())
	}
	s.cfg.Metrics.objects(changes, pruned)
	waits := describeWaits(pruned.Waiting)
	scopes, complete := plan.Scopes()
	s.applied = &appliedPass{commit: commit.Hash, scopes: scopes, complete: complete, waiting: len(pruned.Waiting) > 0}
	if commit.Hash != prev.Commit || len(written) > 0 || len(pruned.Deleted) > 0 || prev.State != contract.SyncSynced {
		summary := summarize(changes, pruned, len(plan.Items))
		s.cfg.Events.Event(ctx, s.cfg.Store.Object(), corev1.EventTypeNormal, ReasonSynced,
			fmt.Sprintf("applied %s %q: %s", revision.Short(commit.Hash), commit.Subject, joinNonEmpty(summary, waits)))
		log.Info("sync applied", "summary", summary)
	}
	done := fetched
	done.State, done.Commit = contract.SyncSynced, commit.Hash
	done.Message = joinNonEmpty(fmt.Sprintf("applied %s %q: %d objects", revision.Short(commit.Hash), commit.Subject, len(plan.Items)), chartSummary(charts), waits)
	if waits != "" && done.Message != prev.Message {
		// Logged when the waits change, not at every poll they last.
		for _, w := range pruned.Waiting {
			log.Info("prune waits", "object", w.Key.String(), "detail", w.String())
		}
	}
	return done
}

// joinNonEmpty joins the parts of a status line that are not empty with
// "; ".
func joinNonEmpty(parts ...string) string {
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), "; ")
}

// stale records a failure to read the source: the cluster keeps running the
// last applied commit, and StaleSince says since when it may be behind.
func (s *Syncer) stale(ctx context.Context, prev inventory.Status, err error) inventory.Status {
	st := prev
	if st.StaleSince == "" {
		st.StaleSince = s.cfg.Clock.Now().UTC().Format(time.RFC3339)
	}
	st.State = contract.SyncFailed
	st.Message = fmt.Sprintf("cannot read the source (stale since %s; still running %s): %v", st.StaleSince, shortOrNone(st.Commit), err)
	s.report(ctx, st, err)
	return st
}

// failed records a failed sync of commit head: nothing of it was applied
// (or, for an apply error, not all of it), and nothing was pruned.
func (s *Syncer) failed(ctx context.Context, prev inventory.Status, head, step string, err error) inventory.Status {
	// Whatever failed, a URL in the error (a chart's archive pre-signed
	// in its index, a repository given with a token) is shown without
	// its credentials, in the status, the log and the Event alike.
	err = redact.Error(err)
	s.handedOff = "" // the next good commit is handed off in full again
	// A kind the cache still maps may be gone (a CRD deleted by hand):
	// the next sync discovers afresh.
	s.cfg.Applier.ResetDiscovery()
	st := prev
	st.State = contract.SyncFailed
	st.Message = fmt.Sprintf("%s %s not applied (%s failed; still running %s): %s", revision.Noun(head), revision.Short(head), step, shortOrNone(prev.Commit), oneLine(err))
	s.report(ctx, st, err)
	return st
}

// report logs a failure and records it as a Warning Event; the same
// failure again increments the Event's count (the recorder aggregates).
func (s *Syncer) report(ctx context.Context, st inventory.Status, err error) {
	s.cfg.Log.Error("sync failed", "sync", s.cfg.Name, "err", oneLine(err))
	s.cfg.Events.Event(ctx, s.cfg.Store.Object(), corev1.EventTypeWarning, ReasonSyncFailed, st.Message)
}

func summarize(changes []apply.Change, pruned apply.PruneResult, total int) string {
	counts := map[apply.Action]int{}
	for _, c := range changes {
		counts[c.Action]++
	}
	return fmt.Sprintf("%d objects, %d created, %d configured, %d restored, %d pruned",
		total, counts[apply.ActionCreate], counts[apply.ActionUpdate], counts[apply.ActionRestore], len(pruned.Deleted))
}

// describeWaits is the status line of the prunes that wait for the
// workloads referring to them, "" for none: "1 prune waits: ConfigMap
// shop/app-config-5g2h7 (referenced by Deployment web, revision 3
// Progressing; rollback target)". With 7 waiting, 5 are named and ", and 2
// more" ends the line.
func describeWaits(waits []apply.Waiting) string {
	if len(waits) == 0 {
		return ""
	}
	head := fmt.Sprintf("%d prunes wait: ", len(waits))
	if len(waits) == 1 {
		head = "1 prune waits: "
	}
	named := make([]string, 0, waitsNamed)
	for _, w := range waits[:min(len(waits), waitsNamed)] {
		named = append(named, w.String())
	}
	line := head + strings.Join(named, ", ")
	if more := len(waits) - len(named); more > 0 {
		line += fmt.Sprintf(", and %d more", more)
	}
	return line
}
