package notify

import (
	"slices"
	"testing"

	clocktesting "k8s.io/utils/clock/testing"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/rollout"
	"plimsoll.dev/plimsoll/strategies"
	psync "plimsoll.dev/plimsoll/sync"
	"plimsoll.dev/plimsoll/sync/inventory"
)

// record collects what an adapter sends.
type record struct{ sent []Notification }

func (r *record) send(n Notification) { r.sent = append(r.sent, n) }

// states returns "<phase or status> <revision>" of each notification.
func (r *record) states() []string {
	var out []string
	for _, n := range r.sent {
		s := n.state()
		if n.Revision > 0 {
			s += " " + string(rune('0'+n.Revision))
		}
		out = append(out, s)
	}
	return out
}

func status(rev int64, phase strategies.Phase, msg string) strategies.Status {
	return strategies.Status{Revision: rev, Phase: phase, Hash: "h" + string(rune('0'+rev)), Commit: "c0ffee" + string(rune('0'+rev)), Message: msg}
}

// TestRolloutsPassOnChanges follows a canary's reports through revisions
// 1 to 3 (see Rollouts): one notification per change of phase or
// revision, the handoff's unreported Progressing included, a rollback
// told as RolledBack with severity error.
func TestRolloutsPassOnChanges(t *testing.T) {
	rec := &record{}
	n := NewRollouts(rec.send, clocktesting.NewFakePassiveClock(at))
	canary := func(recorded, st strategies.Status, rolledBack bool) {
		n.Notify(rollout.StatusReport{Namespace: "shop", Workload: "api", Strategy: contract.StrategyCanary,
			Recorded: recorded, Status: st, RolledBack: rolledBack})
	}
	p := strategies.PhaseProgressing
	canary(status(1, p, "rolling out revision 1"), status(1, p, "canary step 1/1: 100%"), false) // first report: same as recorded
	canary(status(1, p, "canary step 1/1: 100%"), status(1, strategies.PhaseHealthy, "serving"), false)
	// Revision 2: the handoff wrote Progressing 2 unreported.
	canary(status(2, p, "rolling out revision 2"), status(2, p, "canary step 1/5: 25% (0/1)"), false)
	canary(status(2, p, "canary step 1/5: 25% (0/1)"), status(2, p, "canary step 1/5: 25% (1/1)"), false)
	canary(status(2, p, "canary step 1/5: 25% (1/1)"), status(2, strategies.PhasePaused, "step 2/5"), false)
	canary(status(2, strategies.PhasePaused, "step 2/5"), status(2, p, "step 3/5"), false)
	canary(status(2, p, "step 3/5"), status(2, strategies.PhaseHealthy, "serving"), false)
	// Revision 3 fails and is rolled back.
	canary(status(3, p, "rolling out revision 3"), status(3, p, "step 1/5"), false)
	canary(status(3, p, "step 1/5"), status(3, strategies.PhaseDegraded, "progress deadline exceeded"), true)

	want := []string{"Healthy 1", "Progressing 2", "Paused 2", "Progressing 2", "Healthy 2", "Progressing 3", "RolledBack 3"}
	if got := rec.states(); !slices.Equal(got, want) {
		t.Fatalf("notified %v, want %v", got, want)
	}
	last := rec.sent[len(rec.sent)-1]
	if last.Severity != SeverityError || last.Kind != KindRollout || last.Namespace != "shop" || last.Workload != "api" ||
		last.Strategy != contract.StrategyCanary || last.Commit != "c0ffee3" || last.TemplateHash != "h3" ||
		last.Message != "progress deadline exceeded" || !last.Time.Equal(at) {
		t.Errorf("rollback notification %+v", last)
	}
	if rec.sent[2].Severity != SeverityInfo {
		t.Errorf("Paused has severity %s, want info", rec.sent[2].Severity)
	}
}

// TestRolloutsAfterRestart: a daemon that starts again takes the recorded
// status as the last one told, so it repeats nothing; a Degraded phase
// without rollback (an abort) is an error too.
func TestRolloutsAfterRestart(t *testing.T) {
	rec := &record{}
	n := NewRollouts(rec.send, clocktesting.NewFakePassiveClock(at))
	paused := status(4, strategies.PhasePaused, "step 2/5")
	n.Notify(rollout.StatusReport{Namespace: "shop", Workload: "api", Recorded: paused, Status: paused})
	n.Notify(rollout.StatusReport{Namespace: "shop", Workload: "api", Recorded: paused, Status: status(4, strategies.PhaseDegraded, "aborted")})
	n.Notify(rollout.StatusReport{Namespace: "shop", Workload: "web", Status: strategies.Status{}})
	if got, want := rec.states(), []string{"Degraded 4"}; !slices.Equal(got, want) {
		t.Fatalf("notified %v, want %v", got, want)
	}
	if rec.sent[0].Severity != SeverityError || rec.sent[0].Phase != "Degraded" {
		t.Errorf("abort notification %+v, want phase Degraded, severity error", rec.sent[0])
	}
}

// TestSyncsPassOnTrouble: a failure is told once, not at every poll; a
// new failure, a hold and the recovery are told; a sync that goes on
// succeeding tells nothing.
func TestSyncsPassOnTrouble(t *testing.T) {
	rec := &record{}
	n := NewSyncs(rec.send, clocktesting.NewFakePassiveClock(at))
	synced := inventory.Status{State: contract.SyncSynced, Commit: "aaa1111", FetchedCommit: "aaa1111", Message: "applied aaa1111"}
	failed := inventory.Status{State: contract.SyncFailed, Commit: "aaa1111", FetchedCommit: "bbb2222", Message: "commit bbb2222 not applied: broken.yaml"}
	failed2 := failed
	failed2.FetchedCommit, failed2.Message = "ccc3333", "commit ccc3333 not applied: other.yaml"
	held := inventory.Status{State: contract.SyncHeld, Commit: "aaa1111", FetchedCommit: "ddd4444", Message: "commit ddd4444 held"}
	recovered := inventory.Status{State: contract.SyncSynced, Commit: "ddd4444", FetchedCommit: "ddd4444", Message: "applied ddd4444"}
	for _, step := range [][2]inventory.Status{
		{inventory.Status{}, synced}, {synced, synced}, // first sync, then the same
		{synced, failed}, {failed, failed}, {failed, failed}, // told once
		{failed, failed2},   // a new failure
		{failed2, held},     // held
		{held, recovered},   // recovery
		{recovered, synced}, // success again
	} {
		n.Notify(psync.StatusReport{Sync: "platform", Namespace: "plimsoll-system", Previous: step[0], Status: step[1]})
	}
	if got, want := rec.states(), []string{"Failed", "Failed", "Held", "Synced"}; !slices.Equal(got, want) {
		t.Fatalf("notified %v, want %v", got, want)
	}
	for i, want := range []struct {
		commit   string
		severity Severity
	}{{"bbb2222", SeverityError}, {"ccc3333", SeverityError}, {"ddd4444", SeverityWarning}, {"ddd4444", SeverityInfo}} {
		got := rec.sent[i]
		if got.Commit != want.commit || got.Severity != want.severity || got.Kind != KindSync || got.Sync != "platform" ||
			got.Namespace != "plimsoll-system" || got.Message == "" {
			t.Errorf("notification %d: %+v, want commit %s, severity %s", i, got, want.commit, want.severity)
		}
	}
}
