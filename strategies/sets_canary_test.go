package strategies

import (
	"strings"
	"testing"
	"time"
)

// TestPlanSetCanary plans each step and command of a StatefulSet of 4
// rolled by canary on its partition, by table: steps "25%, pause, 50%,
// pause 1m, 100%", template aaa stable, bbb new.
func TestPlanSetCanary(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	steps, err := ParseSteps("25%, pause, 50%, pause 1m, 100%")
	if err != nil {
		t.Fatal(err)
	}
	healthy := Status{Phase: PhaseHealthy, Revision: 1, Hash: "aaa", StableHash: "aaa"}
	rolling := Status{Phase: PhaseProgressing, Revision: 2, Hash: "bbb", StableHash: "aaa"}
	failedHeld := Status{Phase: PhaseDegraded, Revision: 2, Hash: "bbb", StableHash: "aaa", FailedHash: "bbb"}
	rolledBack := Status{Phase: PhaseDegraded, Revision: 2, Hash: "aaa", StableHash: "aaa", FailedHash: "bbb", Message: "rolled back to template aaa"}
	// progress is what the StatefulSet controller reports with updated
	// pods of the template, ready of 4 Ready.
	progress := func(updated, ready int32) SetProgress {
		return SetProgress{Observed: true, Desired: 4, Updated: updated, Ready: ready, Whole: updated == 4 && ready == 4}
	}
	canary := func(partition int32, step int) *SetCanary {
		return &SetCanary{Steps: steps, Replicas: 4, Partition: partition, Step: step}
	}
	with := func(c *SetCanary, f func(*SetCanary)) *SetCanary { f(c); return c }
	minute := now.Add(-time.Minute)
	for _, c := range []struct {
		name      string
		o         SetObserved
		phase     Phase
		hash      string
		failed    string
		step      int
		partition int32 // -1: none written
		since     time.Time
		rollback  bool
		message   string
		acted     string
		requeue   time.Duration
	}{
		{name: "a new template, held at partition 4 by the sync: step 1 lowers it to 3",
			o:     SetObserved{Hash: "bbb", Recorded: healthy, Since: now.Add(-time.Hour), Progress: progress(0, 4), Canary: canary(4, 0)},
			phase: PhaseProgressing, hash: "bbb", step: 1, partition: 3, since: now, message: "canary step 1/5: going to 25% (1/4 pods", requeue: DefaultSetDeadline + time.Second},
		{name: "step 1 at partition 3, ordinal 3 not Ready yet",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(1, 3), Canary: canary(3, 1)},
			phase: PhaseProgressing, hash: "bbb", step: 1, partition: -1, since: minute, message: "going to 25%"},
		{name: "step 1 reached: the pause step waits for promote",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(1, 4), Canary: canary(3, 1)},
			phase: PhasePaused, hash: "bbb", step: 2, partition: -1, since: now, message: "canary step 2/5: 25% (1/4 pods updated); waiting for promote"},
		{name: "counts of an older generation do not reach the step",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: SetProgress{Desired: 4, Updated: 1, Ready: 4}, Canary: canary(3, 1)},
			phase: PhaseProgressing, hash: "bbb", step: 1, partition: -1, since: minute, message: "going to 25% (1/4 pods)"},
		{name: "promote at the pause: step 3 lowers the partition to 2",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(1, 4), Canary: with(canary(3, 2), func(c *SetCanary) { c.Promote = true })},
			phase: PhaseProgressing, hash: "bbb", step: 3, partition: 2, since: now, message: "going to 50% (2/4 pods", acted: "moved on from step 2/5"},
		{name: "step 3 reached: the timed pause runs",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(2, 4), Canary: canary(2, 3)},
			phase: PhaseProgressing, hash: "bbb", step: 4, partition: -1, since: now, message: "50% (2/4 pods updated); paused until 12:01:00", requeue: time.Minute},
		{name: "the timed pause over: partition 0",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: now.Add(-61 * time.Second), Progress: progress(2, 4), Canary: canary(2, 4)},
			phase: PhaseProgressing, hash: "bbb", step: 5, partition: 0, since: now, message: "revision 2: promoted; updating every pod"},
		{name: "every pod updated and Ready: Healthy, the stable template, no step",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(4, 4), Canary: canary(0, 5)},
			phase: PhaseHealthy, hash: "bbb", step: 0, partition: -1, since: minute, message: "4/4 updated and Ready"},
		{name: "a promote at a weight step promotes fully",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(0, 4), Canary: with(canary(3, 1), func(c *SetCanary) { c.Promote = true })},
			phase: PhaseProgressing, hash: "bbb", step: 6, partition: 0, since: now, acted: "promoted fully"}, // past the steps
		{name: "paused: the step's partition is still written, nothing moves on",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(1, 4), Canary: with(canary(3, 3), func(c *SetCanary) { c.Paused = true })},
			phase: PhasePaused, hash: "bbb", step: 3, partition: 2, since: minute, message: "canary step 3/5: 50% (2/4 pods updated); paused"},
		{name: "paused after the steps: the partition stays",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(2, 4), Canary: with(canary(2, 5), func(c *SetCanary) { c.Paused = true })},
			phase: PhasePaused, hash: "bbb", step: 5, partition: -1, since: minute, message: "paused before updating every pod"},
		{name: "a promote while paused does not move on",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(1, 4), Canary: with(canary(3, 2), func(c *SetCanary) { c.Paused, c.Promote = true, true })},
			phase: PhasePaused, hash: "bbb", step: 2, partition: -1, since: minute},
		{name: "step 1 past its deadline: failed, rolled back with partition 0",
			o:     SetObserved{Kind: "StatefulSet", Hash: "bbb", Recorded: rolling, Since: now.Add(-11 * time.Minute), Progress: progress(1, 3), Canary: canary(3, 1)},
			phase: PhaseDegraded, hash: "aaa", failed: "bbb", step: 0, partition: 0, since: now, rollback: true,
			message: "revision 2 (template bbb) failed: step 1/5 not reached within its deadline of 10m0s (1/4 updated, 3/4 Ready); rolled back to template aaa"},
		{name: "abort at the pause: rolled back with partition 0",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(1, 4), Canary: with(canary(3, 2), func(c *SetCanary) { c.Abort = true })},
			phase: PhaseDegraded, hash: "aaa", failed: "bbb", step: 0, partition: 0, since: now, rollback: true,
			message: "failed: aborted by a command; rolled back to template aaa", acted: "aborted revision 2"},
		{name: "past its deadline, auto-rollback off: held at its partition",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: now.Add(-11 * time.Minute), Progress: progress(1, 3), Canary: canary(3, 1), AutoRollback: false},
			phase: PhaseDegraded, hash: "bbb", failed: "bbb", step: 1, partition: -1, since: now.Add(-11 * time.Minute), message: "auto-rollback is off"},
		{name: "held after its failure: it stays so",
			o:     SetObserved{Hash: "bbb", Recorded: failedHeld, Since: minute, Progress: progress(1, 3), Canary: canary(3, 1), AutoRollback: false},
			phase: PhaseDegraded, hash: "bbb", failed: "bbb", step: 1, partition: -1, since: minute},
		{name: "held after its failure, aborted: rolled back",
			o:     SetObserved{Hash: "bbb", Recorded: failedHeld, Since: minute, Progress: progress(1, 3), Canary: with(canary(3, 1), func(c *SetCanary) { c.Abort = true }), AutoRollback: false},
			phase: PhaseDegraded, hash: "aaa", failed: "bbb", step: 0, partition: 0, since: now, rollback: true, acted: "aborted revision 2"},
		{name: "rolled back: the failed ordinals that are not Ready are replaced",
			o:     SetObserved{Hash: "aaa", Recorded: rolledBack, Since: minute, Progress: progress(3, 3), Canary: canary(0, 0)},
			phase: PhaseDegraded, hash: "aaa", failed: "bbb", step: 0, partition: -1, since: minute},
		{name: "a first revision (adopted with Git's template) goes out whole",
			o:     SetObserved{Hash: "bbb", Progress: progress(0, 4), Canary: canary(4, 0)},
			phase: PhaseProgressing, hash: "bbb", step: 0, partition: 0, since: now},
		{name: "Healthy with a partition written by hand: 0 again",
			o:     SetObserved{Hash: "aaa", Recorded: healthy, Since: minute, Progress: SetProgress{Observed: true, Desired: 4, Updated: 2, Ready: 4}, Canary: canary(2, 0)},
			phase: PhaseProgressing, hash: "aaa", step: 0, partition: 0, since: minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Now, o.Deadline, o.StableKept = now, DefaultSetDeadline, true
			if !strings.Contains(c.name, "auto-rollback off") && !strings.Contains(c.name, "held after") {
				o.AutoRollback = true
			}
			p := PlanSet(o)
			st, partition := p.Status, int32(-1)
			if p.Partition != nil {
				partition = *p.Partition
			}
			if st.Phase != c.phase || st.Hash != c.hash || st.FailedHash != c.failed || p.Step != c.step || partition != c.partition ||
				!p.Since.Equal(c.since) || p.Rollback != c.rollback || !strings.Contains(st.Message, c.message) || p.Acted != c.acted ||
				c.requeue != 0 && p.RequeueAfter != c.requeue {
				t.Errorf("PlanSet = %+v step %d partition %d since %s rollback %v acted %q requeue %s;\nwant phase %s hash %s failed %q step %d partition %d since %s rollback %v message %q acted %q requeue %s",
					st, p.Step, partition, p.Since, p.Rollback, p.Acted, p.RequeueAfter,
					c.phase, c.hash, c.failed, c.step, c.partition, c.since, c.rollback, c.message, c.acted, c.requeue)
			}
			if p.Rollback || partition >= 0 || c.acted != "" {
				return // the next plan sees another StatefulSet
			}
			again := o
			again.Recorded, again.Since, again.Canary = st, p.Since, with(new(*o.Canary), func(n *SetCanary) { n.Step, n.Promote, n.Abort = p.Step, false, false })
			if a := PlanSet(again); a.Status != st || a.Step != p.Step || a.Partition != nil || a.Failed {
				t.Errorf("planned again on its own status: %+v step %d partition %v, want %+v step %d unchanged", a.Status, a.Step, a.Partition, st, p.Step)
			}
		})
	}
}

// TestPlanDaemonSetCanary plans a DaemonSet on 3 nodes rolled by canary,
// steps "33%, pause, 100%", by table: the nodes to update at each step,
// the rolling update given back at the end, and the rollback.
func TestPlanDaemonSetCanary(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	steps, err := ParseSteps("33%, pause, 100%")
	if err != nil {
		t.Fatal(err)
	}
	healthy := Status{Phase: PhaseHealthy, Revision: 1, Hash: "aaa", StableHash: "aaa"}
	rolling := Status{Phase: PhaseProgressing, Revision: 2, Hash: "bbb", StableHash: "aaa"}
	progress := func(updated, ready int32) SetProgress {
		done := updated == 3 && ready == 3
		return SetProgress{Observed: true, Desired: 3, Updated: updated, Ready: ready, Done: done, Whole: done}
	}
	canary := func(onDelete bool, step int, f ...func(*SetCanary)) *SetCanary {
		c := &SetCanary{Steps: steps, Nodes: true, Replicas: 3, OnDelete: onDelete, Step: step}
		for _, f := range f {
			f(c)
		}
		return c
	}
	minute := now.Add(-time.Minute)
	for _, c := range []struct {
		name     string
		o        SetObserved
		phase    Phase
		hash     string
		step     int
		updateTo int32
		release  bool
		rollback bool
		message  string
	}{
		{name: "a new template, held at OnDelete: one node of 3",
			o:     SetObserved{Hash: "bbb", Recorded: healthy, Since: now.Add(-time.Hour), Progress: progress(0, 3), Canary: canary(true, 0)},
			phase: PhaseProgressing, hash: "bbb", step: 1, updateTo: 1, message: "canary step 1/3: going to 33% (1/3 nodes)"},
		{name: "one node updated and every pod available: waiting for promote",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(1, 3), Canary: canary(true, 1)},
			phase: PhasePaused, hash: "bbb", step: 2, updateTo: 1, message: "canary step 2/3: 33% (1/3 nodes updated); waiting for promote"},
		{name: "promoted: the rolling update given back",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(1, 3), Canary: canary(true, 2, func(c *SetCanary) { c.Promote = true })},
			phase: PhaseProgressing, hash: "bbb", step: 3, release: true, message: "promoted; updating every pod"},
		{name: "every node updated under the rolling update: Healthy",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(3, 3), Canary: canary(false, 3)},
			phase: PhaseHealthy, hash: "bbb", step: 0, message: "3/3 updated and Ready"},
		{name: "every node updated, still held: the rolling update given back first",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(3, 3), Canary: canary(true, 3)},
			phase: PhaseProgressing, hash: "bbb", step: 3, release: true},
		{name: "step 1 past its deadline: rolled back on the node it reached, the rolling update given back",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: now.Add(-11 * time.Minute), Progress: progress(1, 2), Canary: canary(true, 1)},
			phase: PhaseDegraded, hash: "aaa", step: 0, release: true, rollback: true, message: "step 1/3 not reached within its deadline"},
		{name: "aborted at the pause: rolled back, the rolling update given back",
			o:     SetObserved{Hash: "bbb", Recorded: rolling, Since: minute, Progress: progress(1, 3), Canary: canary(true, 2, func(c *SetCanary) { c.Abort = true })},
			phase: PhaseDegraded, hash: "aaa", step: 0, release: true, rollback: true, message: "aborted by a command"},
		{name: "Healthy, held at OnDelete by hand: given back",
			o:     SetObserved{Hash: "aaa", Recorded: healthy, Since: minute, Progress: progress(3, 3), Canary: canary(true, 0)},
			phase: PhaseHealthy, hash: "aaa", step: 0, release: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Kind, o.Now, o.Deadline, o.StableKept, o.AutoRollback = "DaemonSet", now, DefaultSetDeadline, true, true
			p := PlanSet(o)
			if p.Status.Phase != c.phase || p.Status.Hash != c.hash || p.Step != c.step || p.UpdateTo != c.updateTo || p.Release != c.release ||
				p.Rollback != c.rollback || p.Partition != nil || !strings.Contains(p.Status.Message, c.message) {
				t.Errorf("PlanSet = %+v step %d updateTo %d release %v rollback %v partition %v;\nwant phase %s hash %s step %d updateTo %d release %v rollback %v message %q",
					p.Status, p.Step, p.UpdateTo, p.Release, p.Rollback, p.Partition, c.phase, c.hash, c.step, c.updateTo, c.release, c.rollback, c.message)
			}
		})
	}
}
