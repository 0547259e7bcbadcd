package strategies

import (
	"strings"
	"testing"
	"time"
)

// TestPlanSet plans each step of a StatefulSet or DaemonSet under the
// rolling strategy, by table.
func TestPlanSet(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	healthy := Status{Phase: PhaseHealthy, Revision: 1, Hash: "aaa", StableHash: "aaa", Message: "3/3 updated and Ready"}
	rolling := Status{Phase: PhaseProgressing, Revision: 2, Hash: "bbb", StableHash: "aaa"}
	rolledBack := Status{Phase: PhaseDegraded, Revision: 2, Hash: "aaa", StableHash: "aaa", FailedHash: "bbb", Message: "revision 2 (template bbb) failed: x; rolled back to template aaa"}
	done := SetProgress{Observed: true, Desired: 3, Updated: 3, Ready: 3, Done: true}
	stuck := SetProgress{Observed: true, Desired: 3, Updated: 1, Ready: 2}
	for _, c := range []struct {
		name     string
		o        SetObserved
		phase    Phase
		hash     string
		stable   string
		failed   string
		since    time.Time
		rollback bool
		replace  bool
		message  string
		commit   string
	}{
		{name: "adopted, its pods on its template: Healthy at once",
			o:     SetObserved{Hash: "aaa", Progress: done},
			phase: PhaseHealthy, hash: "aaa", stable: "aaa", since: now, message: "3/3 updated and Ready"},
		{name: "a new template: Progressing from now",
			o:     SetObserved{Hash: "bbb", Recorded: healthy, Since: now.Add(-time.Hour), Progress: stuck},
			phase: PhaseProgressing, hash: "bbb", stable: "aaa", since: now, message: "updating every pod, within 10m0s"},
		{name: "within its deadline",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: now.Add(-9 * time.Minute), Progress: stuck},
			phase: PhaseProgressing, hash: "bbb", stable: "aaa", since: now.Add(-9 * time.Minute)},
		{name: "done: Healthy, the stable template",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: now.Add(-time.Minute), Progress: done},
			phase: PhaseHealthy, hash: "bbb", stable: "bbb", since: now.Add(-time.Minute)},
		{name: "counts of an older generation are not done",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: now.Add(-time.Minute), Progress: SetProgress{Done: true}},
			phase: PhaseProgressing, hash: "bbb", stable: "aaa", since: now.Add(-time.Minute), message: "updating every pod"},
		{name: "past its deadline: failed, rolled back",
			o:     SetObserved{Kind: "StatefulSet", Hash: "bbb", Recorded: rolling, Since: now.Add(-11 * time.Minute), Progress: stuck, StableKept: true},
			phase: PhaseDegraded, hash: "aaa", stable: "aaa", failed: "bbb", since: now, rollback: true,
			message: "revision 2 (template bbb) failed: not every pod updated and Ready within its deadline of 10m0s (1/3 updated, 2/3 Ready); rolled back to template aaa"},
		{name: "past its deadline, auto-rollback off",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: now.Add(-11 * time.Minute), Progress: stuck, StableKept: true, AutoRollback: false},
			phase: PhaseDegraded, hash: "bbb", stable: "aaa", failed: "bbb", since: now.Add(-11 * time.Minute), message: "auto-rollback is off"},
		{name: "past its deadline, the stable template gone",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: now.Add(-11 * time.Minute), Progress: stuck},
			phase: PhaseDegraded, hash: "bbb", stable: "aaa", failed: "bbb", since: now.Add(-11 * time.Minute), message: "no previous template to roll back to"},
		{name: "rolled back, the failed pods not replaced yet",
			o:     SetObserved{Hash: "aaa", Recorded: rolledBack, Since: now.Add(-time.Second), Progress: stuck},
			phase: PhaseDegraded, hash: "aaa", stable: "aaa", failed: "bbb", since: now.Add(-time.Second), replace: true, message: "rolled back to template aaa"},
		{name: "rolled back and done: still Degraded until Git changes",
			o:     SetObserved{Kind: "StatefulSet", Hash: "aaa", Recorded: rolledBack, Since: now.Add(-time.Minute), Progress: done},
			phase: PhaseDegraded, hash: "aaa", stable: "aaa", failed: "bbb", since: now.Add(-time.Minute), message: "rolled back to template aaa"},
		{name: "the rollback recorded, its template not seen yet (or kubectl wrote the failed one again): written (again)",
			o:     SetObserved{Hash: "bbb", Recorded: rolledBack, Since: now.Add(-time.Hour), Progress: stuck, StableKept: true},
			phase: PhaseDegraded, hash: "aaa", stable: "aaa", failed: "bbb", since: now.Add(-time.Hour), rollback: true, message: "rolled back to template aaa"},
		{name: "the failed template while Progressing on another: failed before, rolled back",
			o: SetObserved{Hash: "bbb", Recorded: Status{Phase: PhaseProgressing, Revision: 3, Hash: "ccc", StableHash: "aaa", FailedHash: "bbb"},
				Since: now.Add(-time.Minute), Progress: stuck, StableKept: true},
			phase: PhaseDegraded, hash: "aaa", stable: "aaa", failed: "bbb", since: now, rollback: true, message: "template bbb failed before; rolled back to template aaa"},
		{name: "a new template with its commit",
			o:     SetObserved{Hash: "bbb", Commit: "c0ffee", Recorded: healthy, Since: now.Add(-time.Hour), Progress: stuck},
			phase: PhaseProgressing, hash: "bbb", stable: "aaa", since: now, commit: "c0ffee"},
		{name: "a fix from Git: the failure forgotten, Progressing",
			o:     SetObserved{Hash: "ccc", Recorded: rolledBack, Since: now.Add(-time.Hour), Progress: stuck},
			phase: PhaseProgressing, hash: "ccc", stable: "aaa", since: now},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Now, o.Deadline = now, DefaultSetDeadline
			if !strings.Contains(c.name, "auto-rollback off") {
				o.AutoRollback = true
			}
			p := PlanSet(o)
			st := p.Status
			if st.Phase != c.phase || st.Hash != c.hash || st.StableHash != c.stable || st.FailedHash != c.failed || !p.Since.Equal(c.since) ||
				p.Rollback != c.rollback || p.Replace != c.replace || !strings.Contains(st.Message, c.message) || st.Commit != c.commit {
				t.Errorf("PlanSet = %+v since %s, rollback %v, replace %v;\nwant phase %s hash %s stable %s failed %q since %s rollback %v replace %v message %q",
					st, p.Since, p.Rollback, p.Replace, c.phase, c.hash, c.stable, c.failed, c.since, c.rollback, c.replace, c.message)
			}
			if again := PlanSet(SetObserved{Kind: o.Kind, Hash: o.Hash, Commit: o.Commit, Recorded: st, Since: p.Since, Progress: o.Progress,
				Deadline: o.Deadline, AutoRollback: o.AutoRollback, StableKept: o.StableKept, Now: now}); !p.Rollback && (again.Status != st || again.Failed) {
				t.Errorf("planned again on its own status: %+v (failed %v), want %+v unchanged", again.Status, again.Failed, st)
			}
		})
	}
}
