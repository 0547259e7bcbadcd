package strategies

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestKeepWhileLagging: a status write bumps the Deployment's generation;
// until the Deployment controller observes it, the recorded phase and
// message stand, unless the plan records a failure or another revision,
// the recorded status is a revision's opening one (written in the same
// write as the template the controller lags behind), or the one lagging
// asks for no pods and runs none.
func TestKeepWhileLagging(t *testing.T) {
	waiting := withMessage(Status{Phase: PhasePaused, Revision: 4, Hash: h4, Commit: commitV4}, "revision 4 ready on green; waiting for promote")
	opened, _ := TakeRevision(Status{Phase: PhaseHealthy, Revision: 3, Hash: h3, Commit: commitV3}, h4, commitV4)
	lagging, observed := deployment(v4, withGeneration(3, 2)), deployment(v4, withGeneration(3, 3))
	idleLagging := deployment(v4, withGeneration(3, 2), sized(0))
	startingLagging := deployment(v4, withGeneration(3, 2), withSpecReplicas(0), withPods(1, 1, 1, 1))
	planned := withMessage(Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, Commit: commitV4}, "revision 4 on green: 4/4 available")
	tests := []struct {
		name     string
		recorded Status
		planned  Status
		d        *appsv1.Deployment
		want     Phase
		wantWord string
	}{
		{"lagging: the recorded status stands", waiting, planned, lagging, PhasePaused, "waiting for promote"},
		{"caught up: the plan's status", waiting, planned, observed, PhaseProgressing, "4/4 available"},
		{"lagging, but a failure", waiting, Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4, Message: "failed"}, lagging, PhaseDegraded, "failed"},
		{"lagging, but another revision", waiting, Status{Phase: PhaseProgressing, Revision: 5, Hash: "h5", Commit: commitV5, Message: "revision 5"}, lagging, PhaseProgressing, "revision 5"},
		{"lagging behind the revision's opening status: the plan's status", opened, planned, lagging, PhaseProgressing, "4/4 available"},
		{"lagging at 0 with no pods: the plan's status", waiting, planned, idleLagging, PhaseProgressing, "4/4 available"},
		{"lagging at 0 with a pod left: the recorded status stands", waiting, planned, startingLagging, PhasePaused, "waiting for promote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.planned
			keepWhileLagging(&got, tt.recorded, nil, tt.d)
			if got.Phase != tt.want {
				t.Errorf("phase %s, want %s", got.Phase, tt.want)
			}
			checkMessage(t, got.Message, []string{tt.wantWord})
		})
	}
}

// TestPlanBlueGreenPendingPromote: a promote that comes while green is
// still coming up stays pending (the caller keeps the command) and swaps
// once green is ready; with nothing going out, a promote has nothing to
// wait for.
func TestPlanBlueGreenPendingPromote(t *testing.T) {
	desired := blueGreenDesired(4, false)
	blue := colorDeploy(ColorBlue, v3, sized(4))
	tests := []struct {
		name    string
		green   int32 // available pods of green
		pending bool
		active  Color
	}{
		{"green 2/4: pending, no swap", 2, true, ColorBlue},
		{"green 4/4: swapped, not pending", 4, false, ColorGreen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := BlueGreenObserved{
				Blue: blue, Green: colorDeploy(ColorGreen, v4, withSpecReplicas(4), withPods(4, 4, tt.green, tt.green)),
				Active: ColorBlue, Promote: true, Now: t0,
			}
			plan := PlanBlueGreen(desired, progressing4, o)
			if plan.Pending != tt.pending || plan.Active != tt.active {
				t.Errorf("pending %v, active %q; want %v, %q (%+v)", plan.Pending, plan.Active, tt.pending, tt.active, plan.Status)
			}
		})
	}
	settled := BlueGreenObserved{Blue: colorDeploy(ColorBlue, v4, sized(4)), Active: ColorBlue, Promote: true, Now: t0}
	if plan := PlanBlueGreen(desired, progressing4, settled); plan.Pending {
		t.Errorf("promote with nothing going out is pending: %+v", plan)
	}
}
