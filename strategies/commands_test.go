package strategies

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"plimsoll.dev/plimsoll/contract"
)

// commandWant is what one command does at one stage of a rollout: the
// phase the plan records and the command's Event, word for word.
type commandWant struct {
	phase Phase
	event string
}

// commandRow is one command at one stage, issued on a workload that is
// not paused (want) and on one the pause command holds (paused).
type commandRow struct {
	command      string
	want, paused commandWant
}

// Events the matrices share.
const (
	aborted       = "aborted revision 4"
	notPaused     = "nothing to resume: the rollout is not paused"
	notResumable  = "nothing to resume: the rollout waits for promote or abort"
	notFailed     = "nothing to retry: revision 4 has not failed"
	retried       = "cleared the failed template; the Git template goes out again"
	tooLate       = "too late to abort: revision 4 is promoted; commit the previous revision to Git to go back"
	promotedNoop  = "nothing to promote: revision 4 is promoted"
	failedPromote = "nothing to promote: revision 4 failed; a retry starts it again"
	failedAbort   = "nothing to abort: revision 4 failed; a retry starts it again"
	lifted        = "lifted the pause; "
)

// planned is what a plan makes of a command: its status, what it says
// it did, and its actions.
type planned struct {
	status  Status
	acted   string
	actions []Action
}

// planWith applies command name to a workload recorded as recorded,
// paused or not, and plans it with plan; it returns the plan and the
// command's Event.
func planWith(name string, recorded Status, paused bool, plan func(Status, Commanded) planned) (planned, string) {
	cmd := ApplyCommand(name, Held{Status: recorded, Paused: paused}, true)
	p := plan(cmd.Held.Status, cmd)
	return p, cmd.Describe(p.acted)
}

// checkCommands plans every row at one stage and compares it with the
// row's want. A command that says it had nothing to do must also plan
// exactly what no command plans.
func checkCommands(t *testing.T, recorded Status, rows []commandRow, plan func(Status, Commanded) planned) {
	t.Helper()
	for _, r := range rows {
		for _, paused := range []bool{false, true} {
			want := r.want
			if paused {
				want = r.paused
			}
			got, event := planWith(r.command, recorded, paused, plan)
			if got.status.Phase != want.phase || event != want.event {
				t.Errorf("%s (paused %v): phase %s, Event %q; want %s, %q (message %q)", r.command, paused, got.status.Phase, event, want.phase, want.event, got.status.Message)
			}
			if strings.HasPrefix(event, "nothing to") || strings.HasPrefix(event, "already") {
				none, _ := planWith("", recorded, paused, plan)
				if none.status != got.status || !reflect.DeepEqual(none.actions, got.actions) {
					t.Errorf("%s (paused %v) did nothing, but planned %+v, %+v; want what no command plans: %+v, %+v",
						r.command, paused, got.status, got.actions, none.status, none.actions)
				}
			}
		}
	}
}

// TestCanaryCommands issues each command at each stage of a canary
// rollout of revision 4 (steps "25%, pause, 50%, pause, 100%"; the
// hand-over's stages are TestPlanHandOver's): on its way to 25%, waiting
// for promote at step 2, at rest, and failed. Pause holds where it is;
// promote goes on (lifting a pause: the user asks it to go on), from a
// weight step to the full promotion, from a pause to the next step;
// abort undoes the revision until it is promoted; retry starts a failed
// revision again. Every other command changes nothing, and says why.
func TestCanaryCommands(t *testing.T) {
	manual := canaryDesired(4, "25%, pause, 50%, pause, 100%")
	failed4 := Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4, Message: "revision 4 failed"}
	healthy4 := Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4}
	progressing, paused, degraded := PhaseProgressing, PhasePaused, PhaseDegraded
	stages := []struct {
		stage canaryCase
		rows  []commandRow
	}{
		{canaryCase{name: "going to 25%", recorded: progressing4, stable: stableDeploy(v3, sized(4)),
			canary: canaryDeploy(v4, withSpecReplicas(1), withPods(1, 1, 0, 0)), pods: []Pod{starting("c0")}}, []commandRow{
			{contract.CommandPause, commandWant{paused, "paused"}, commandWant{paused, "already paused"}},
			{contract.CommandResume, commandWant{progressing, notPaused}, commandWant{progressing, "resumed"}},
			{contract.CommandPromote, commandWant{progressing, "promoted fully"}, commandWant{progressing, lifted + "promoted fully"}},
			{contract.CommandAbort, commandWant{degraded, aborted}, commandWant{degraded, aborted}},
			{contract.CommandRetry, commandWant{progressing, notFailed}, commandWant{paused, notFailed}},
		}},
		{canaryCase{name: "waiting for promote", recorded: waiting(progressing4, "canary step 2/5: 25% (1/4 pods serving); waiting for promote"), stable: stableDeploy(v3, sized(3)),
			canary: canaryDeploy(v4, sized(1)), pods: []Pod{serving("c0")}, step: 1, now: time.Hour}, []commandRow{
			{contract.CommandPause, commandWant{paused, "paused"}, commandWant{paused, "already paused"}},
			{contract.CommandResume, commandWant{paused, notResumable}, commandWant{paused, "resumed"}},
			{contract.CommandPromote, commandWant{progressing, "moved on from step 2/5"}, commandWant{progressing, lifted + "moved on from step 2/5"}},
			{contract.CommandAbort, commandWant{degraded, aborted}, commandWant{degraded, aborted}},
			{contract.CommandRetry, commandWant{paused, notFailed}, commandWant{paused, notFailed}},
		}},
		{canaryCase{name: "at rest", recorded: healthy4, stable: stableDeploy(v4, sized(4)), canary: canaryDeploy(v4, sized(0))}, []commandRow{
			{contract.CommandPause, commandWant{PhaseHealthy, "paused"}, commandWant{PhaseHealthy, "already paused"}},
			{contract.CommandResume, commandWant{PhaseHealthy, notPaused}, commandWant{PhaseHealthy, "resumed"}},
			{contract.CommandPromote, commandWant{PhaseHealthy, promotedNoop}, commandWant{PhaseHealthy, lifted + promotedNoop}},
			{contract.CommandAbort, commandWant{PhaseHealthy, tooLate}, commandWant{PhaseHealthy, tooLate}},
			{contract.CommandRetry, commandWant{PhaseHealthy, notFailed}, commandWant{PhaseHealthy, notFailed}},
		}},
		{canaryCase{name: "failed", recorded: failed4, stable: stableDeploy(v3, sized(4)), canary: canaryDeploy(v4, sized(0))}, []commandRow{
			{contract.CommandPause, commandWant{degraded, "paused"}, commandWant{degraded, "already paused"}},
			{contract.CommandResume, commandWant{degraded, notPaused}, commandWant{degraded, "resumed"}},
			{contract.CommandPromote, commandWant{degraded, failedPromote}, commandWant{degraded, lifted + failedPromote}},
			{contract.CommandAbort, commandWant{degraded, failedAbort}, commandWant{degraded, failedAbort}},
			{contract.CommandRetry, commandWant{progressing, retried}, commandWant{paused, retried}},
		}},
	}
	for _, s := range stages {
		t.Run(s.stage.name, func(t *testing.T) {
			s.stage.desired = &manual
			desired, recorded, o := s.stage.inputs()
			checkCommands(t, recorded, s.rows, func(st Status, cmd Commanded) planned {
				o.Paused, o.Promote, o.Abort = cmd.Held.Paused, cmd.Promote, cmd.Abort
				p := PlanCanary(desired, st, o)
				return planned{p.Status, p.Acted, p.Actions}
			})
		})
	}
}

// TestBlueGreenCommands issues each command at each stage of a blue-green
// rollout of revision 4 to green, auto-promote off: green coming up,
// green ready and waiting for promote, within the scale-down delay after
// the swap, at rest, and failed. A promote that comes before green is
// ready waits for it (the command stays); within the scale-down delay an
// abort swaps back, and a promote comes too late.
func TestBlueGreenCommands(t *testing.T) {
	manual := blueGreenDesired(4, false)
	failed4 := Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4, Message: "revision 4 failed"}
	healthy4 := Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4}
	blue, green := colorDeploy(ColorBlue, v3, sized(4)), colorDeploy(ColorGreen, v4, sized(4))
	progressing, paused, degraded := PhaseProgressing, PhasePaused, PhaseDegraded
	stages := []struct {
		stage blueGreenCase
		rows  []commandRow
		// pending is the command that waits, its plan Pending.
		pending string
	}{
		{blueGreenCase{name: "green coming up", recorded: progressing4, blue: blue, green: colorDeploy(ColorGreen, v4, sized(0)), active: ColorBlue}, []commandRow{
			{contract.CommandPause, commandWant{paused, "paused"}, commandWant{paused, "already paused"}},
			{contract.CommandResume, commandWant{progressing, notPaused}, commandWant{progressing, "resumed"}},
			{contract.CommandAbort, commandWant{degraded, aborted}, commandWant{degraded, aborted}},
			{contract.CommandRetry, commandWant{progressing, notFailed}, commandWant{paused, notFailed}},
		}, contract.CommandPromote},
		{blueGreenCase{name: "waiting for promote", recorded: waiting(progressing4, "revision 4 (commit def5678) ready on green; waiting for promote"),
			blue: blue, green: green, active: ColorBlue}, []commandRow{
			{contract.CommandPause, commandWant{paused, "paused"}, commandWant{paused, "already paused"}},
			{contract.CommandResume, commandWant{paused, notResumable}, commandWant{paused, "resumed"}},
			{contract.CommandPromote, commandWant{progressing, "promoted green"}, commandWant{progressing, lifted + "promoted green"}},
			{contract.CommandAbort, commandWant{degraded, aborted}, commandWant{degraded, aborted}},
			{contract.CommandRetry, commandWant{paused, notFailed}, commandWant{paused, notFailed}},
		}, ""},
		{blueGreenCase{name: "within the scale-down delay", recorded: progressing4, blue: blue, green: green, active: ColorGreen,
			scaleDownAt: at(delay30s), now: 10 * time.Second}, []commandRow{
			{contract.CommandPause, commandWant{paused, "paused"}, commandWant{paused, "already paused"}},
			{contract.CommandResume, commandWant{progressing, notPaused}, commandWant{progressing, "resumed"}},
			{contract.CommandPromote, commandWant{progressing, promotedNoop}, commandWant{progressing, lifted + promotedNoop}},
			{contract.CommandAbort, commandWant{degraded, aborted}, commandWant{degraded, aborted}},
			{contract.CommandRetry, commandWant{progressing, notFailed}, commandWant{paused, notFailed}},
		}, ""},
		{blueGreenCase{name: "at rest", recorded: healthy4, blue: colorDeploy(ColorBlue, v3, sized(0)), green: green, active: ColorGreen}, []commandRow{
			{contract.CommandPause, commandWant{PhaseHealthy, "paused"}, commandWant{PhaseHealthy, "already paused"}},
			{contract.CommandResume, commandWant{PhaseHealthy, notPaused}, commandWant{PhaseHealthy, "resumed"}},
			{contract.CommandPromote, commandWant{PhaseHealthy, promotedNoop}, commandWant{PhaseHealthy, lifted + promotedNoop}},
			{contract.CommandAbort, commandWant{PhaseHealthy, tooLate}, commandWant{PhaseHealthy, tooLate}},
			{contract.CommandRetry, commandWant{PhaseHealthy, notFailed}, commandWant{PhaseHealthy, notFailed}},
		}, ""},
		{blueGreenCase{name: "failed", recorded: failed4, blue: blue, green: colorDeploy(ColorGreen, v4, sized(0)), active: ColorBlue}, []commandRow{
			{contract.CommandPause, commandWant{degraded, "paused"}, commandWant{degraded, "already paused"}},
			{contract.CommandResume, commandWant{degraded, notPaused}, commandWant{degraded, "resumed"}},
			{contract.CommandPromote, commandWant{degraded, failedPromote}, commandWant{degraded, lifted + failedPromote}},
			{contract.CommandAbort, commandWant{degraded, failedAbort}, commandWant{degraded, failedAbort}},
			{contract.CommandRetry, commandWant{progressing, retried}, commandWant{paused, retried}},
		}, ""},
	}
	for _, s := range stages {
		t.Run(s.stage.name, func(t *testing.T) {
			s.stage.desired = &manual
			desired, recorded, o := s.stage.inputs()
			plan := func(st Status, cmd Commanded) BlueGreenPlan {
				o.Paused, o.Promote, o.Abort = cmd.Held.Paused, cmd.Promote, cmd.Abort
				return PlanBlueGreen(desired, st, o)
			}
			checkCommands(t, recorded, s.rows, func(st Status, cmd Commanded) planned {
				p := plan(st, cmd)
				return planned{p.Status, p.Acted, p.Actions}
			})
			for _, name := range commandNames {
				cmd := ApplyCommand(name, Held{Status: recorded}, true)
				if got := plan(cmd.Held.Status, cmd).Pending; got != (name == s.pending) {
					t.Errorf("%s: pending %v, want %v", name, got, name == s.pending)
				}
			}
		})
	}
}

// waiting is s recorded Paused with message m: a rollout that waits for
// promote.
func waiting(s Status, m string) Status {
	s.Phase, s.Message = PhasePaused, m
	return s
}

// commandNames are the commands a user may issue.
var commandNames = []string{contract.CommandPause, contract.CommandResume, contract.CommandPromote, contract.CommandAbort, contract.CommandRetry}
