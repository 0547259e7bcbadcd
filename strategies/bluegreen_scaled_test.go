package strategies

import (
	"fmt"
	"slices"
	"testing"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// TestPlanBlueGreenScaledByHand: the active color scaled by hand from
// Git's 2 to 5 goes back to 2 in the next plan, its pods being endpoints:
// 5 serve, 3 go, 2 stay, Git's count. The phase says so until it has.
func TestPlanBlueGreenScaledByHand(t *testing.T) {
	desired := blueGreenDesired(2, true)
	recorded := Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4, Message: "revision 4 (commit def5678) on blue: 2/2 available"}
	blue := colorDeploy(ColorBlue, podtemplate.Stamp(v4), withSpecReplicas(5), withPods(5, 5, 5, 5))
	green := colorDeploy(ColorGreen, podtemplate.Stamp(v3), withSpecReplicas(0), withPods(0, 0, 0, 0))
	var endpoints []string
	for i := range 5 {
		endpoints = append(endpoints, fmt.Sprintf("web-blue-7d9c556656-p%d", i))
	}
	plan := PlanBlueGreen(desired, recorded, BlueGreenObserved{Blue: blue, Green: green, Active: ColorBlue, ActiveEndpoints: endpoints, Now: t0})
	if plan.Status.Phase != PhaseProgressing || plan.Status.Message != "revision 4 (commit def5678) on blue: scaling from 5 back to 2 replicas" {
		t.Errorf("status %s %q, want Progressing, scaling back to 2", plan.Status.Phase, plan.Status.Message)
	}
	var scaled *int32
	for _, a := range plan.Actions {
		if a.Kind == ActionWrite && a.Deployment == contract.SuffixBlue {
			scaled = a.Replicas
		}
	}
	if scaled == nil || *scaled != 2 {
		t.Errorf("blue written with replicas %v, want 2; actions %+v", scaled, plan.Actions)
	}
}

// TestPlanBlueGreenRetargetsAutoscaler: the HPA scales the color that
// serves. On an HPA still on <name> (from before the switch to
// blue-green) or on the other color, the plan points it at the active
// color, after any swap; one on it already, or no HPA, is left alone.
func TestPlanBlueGreenRetargetsAutoscaler(t *testing.T) {
	desired := blueGreenDesired(2, true)
	recorded := Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4, Message: "revision 4 (commit def5678) on blue: 2/2 available"}
	blue := colorDeploy(ColorBlue, podtemplate.Stamp(v4), withSpecReplicas(2), withPods(2, 2, 2, 2))
	green := colorDeploy(ColorGreen, podtemplate.Stamp(v3), withSpecReplicas(0), withPods(0, 0, 0, 0))
	endpoints := []string{"web-blue-7d9c556656-p0", "web-blue-7d9c556656-p1"}
	tests := []struct {
		name        string
		autoscaled  bool
		scaleTarget string
		want        []string // the Deployments retargeted to
	}{
		{"on <name>", true, "", []string{contract.SuffixBlue}},
		{"on the other color", true, contract.SuffixGreen, []string{contract.SuffixBlue}},
		{"on the active color", true, contract.SuffixBlue, nil},
		{"no autoscaler", false, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanBlueGreen(desired, recorded, BlueGreenObserved{Blue: blue, Green: green, Active: ColorBlue, ActiveEndpoints: endpoints,
				Autoscaled: tt.autoscaled, ScaleTarget: tt.scaleTarget, Now: t0})
			var got []string
			for _, a := range plan.Actions {
				if a.Kind == ActionRetarget {
					got = append(got, a.Deployment)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("retargeted to %q, want %q; actions %+v", got, tt.want, plan.Actions)
			}
		})
	}
}
