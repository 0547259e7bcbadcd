package notify

import (
	"sync"

	"k8s.io/utils/clock"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/rollout"
	"plimsoll.dev/plimsoll/strategies"
	psync "plimsoll.dev/plimsoll/sync"
)

// Rollouts is the rollout controller's rollout.Notifier: of the statuses
// the controller writes, it passes on one notification each time a
// workload's phase or revision changes.
//
// It compares each status with the last one it passed on for the
// workload rather than with the one the write replaced: a canary or
// blue-green revision is handed off (written Progressing) before the
// first report of it, so that report's recorded status already says
// Progressing. Worked through for revision 2 of a canary: Healthy 1
// passed on; the handoff writes Progressing 2 unreported; step 1
// reports Progressing 2 over Progressing 2, which differs from Healthy 1
// and is passed on; step 2 reports Paused 2, passed on. A workload it has
// not heard of (a daemon just started) compares with the recorded status,
// so that a restart repeats nothing.
type Rollouts struct {
	send  func(Notification)
	clock clock.PassiveClock
	mu    sync.Mutex
	// last is the phase and revision last passed on, by
	// "namespace/workload": one small entry per workload seen.
	last map[string]phaseAt
}

// phaseAt is a phase of a revision.
type phaseAt struct {
	revision int64
	phase    strategies.Phase
}

// NewRollouts returns a Rollouts that passes its notifications to send
// (a Dispatcher's Send), stamped with clk's time.
func NewRollouts(send func(Notification), clk clock.PassiveClock) *Rollouts {
	return &Rollouts{send: send, clock: clk, last: map[string]phaseAt{}}
}

// Notify passes on r when it changes the workload's phase or revision.
func (n *Rollouts) Notify(r rollout.StatusReport) {
	if r.Status.Phase == "" {
		return
	}
	key := r.Kind + "/" + r.Namespace + "/" + r.Workload
	now := phaseAt{revision: r.Status.Revision, phase: r.Status.Phase}
	n.mu.Lock()
	last, known := n.last[key]
	if !known {
		last = phaseAt{revision: r.Recorded.Revision, phase: r.Recorded.Phase}
	}
	n.last[key] = now
	n.mu.Unlock()
	if now == last {
		return
	}
	phase, severity := string(r.Status.Phase), SeverityInfo
	switch {
	case r.RolledBack:
		phase, severity = PhaseRolledBack, SeverityError
	case r.Status.Phase == strategies.PhaseDegraded:
		severity = SeverityError
	}
	n.send(Notification{
		Kind: KindRollout, Severity: severity, Namespace: r.Namespace, Workload: r.Workload, WorkloadKind: r.Kind, Strategy: r.Strategy,
		Phase: phase, Revision: r.Status.Revision, TemplateHash: r.Status.Hash, Commit: r.Status.Commit,
		Message: r.Status.Message, Time: n.clock.Now().UTC(),
	})
}

// Syncs is the syncer's sync.Notifier: it passes on a sync that failed or
// is held, once for each new status (the same failure again at the next
// poll is not repeated), and a sync that is Synced again after one of
// those. A sync that goes on succeeding tells nothing: its rollouts do.
type Syncs struct {
	send  func(Notification)
	clock clock.PassiveClock
}

// NewSyncs returns a Syncs that passes its notifications to send (a
// Dispatcher's Send), stamped with clk's time.
func NewSyncs(send func(Notification), clk clock.PassiveClock) *Syncs {
	return &Syncs{send: send, clock: clk}
}

// Notify passes on r when it is worth telling (see Syncs).
func (n *Syncs) Notify(r psync.StatusReport) {
	prev, st := r.Previous, r.Status
	troubled := func(state string) bool { return state == contract.SyncFailed || state == contract.SyncHeld }
	var severity Severity
	switch {
	case troubled(st.State) && prev.State == st.State && prev.Message == st.Message:
		return // the same again
	case st.State == contract.SyncFailed:
		severity = SeverityError
	case st.State == contract.SyncHeld:
		severity = SeverityWarning
	case st.State == contract.SyncSynced && troubled(prev.State):
		severity = SeverityInfo
	default:
		return
	}
	commit := st.FetchedCommit
	if commit == "" || st.State == contract.SyncSynced {
		commit = st.Commit
	}
	n.send(Notification{
		Kind: KindSync, Severity: severity, Namespace: r.Namespace, Sync: r.Sync, Status: st.State,
		Commit: commit, Message: st.Message, Time: n.clock.Now().UTC(),
	})
}
