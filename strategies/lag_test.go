package strategies

import (
	"testing"
)

// TestKeepWhileLagging: a status write bumps the Deployment's generation;
// until the Deployment controller observes it, the recorded phase and
// message stand, unless the plan records a failure or another revision.
func TestKeepWhileLagging(t *testing.T) {
	recorded := withMessage(Status{Phase: PhasePaused, Revision: 4, Hash: h4, Commit: commitV4}, "revision 4 ready on green; waiting for promote")
	lagging, observed := deployment(v4, withGeneration(3, 2)), deployment(v4, withGeneration(3, 3))
	planned := withMessage(Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, Commit: commitV4}, "revision 4 on green: 4/4 available")
	tests := []struct {
		name     string
		planned  Status
		lagging  bool
		want     Phase
		wantWord string
	}{
		{"lagging: the recorded status stands", planned, true, PhasePaused, "waiting for promote"},
		{"caught up: the plan's status", planned, false, PhaseProgressing, "4/4 available"},
		{"lagging, but a failure", Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4, Message: "failed"}, true, PhaseDegraded, "failed"},
		{"lagging, but another revision", Status{Phase: PhaseProgressing, Revision: 5, Hash: "h5", Commit: commitV5, Message: "revision 5"}, true, PhaseProgressing, "revision 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := observed
			if tt.lagging {
				d = lagging
			}
			got := tt.planned
			keepWhileLagging(&got, recorded, nil, d)
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
