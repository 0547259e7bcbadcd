package strategies

import (
	"testing"
)

// TestRepairsArePlanned: a selector write that puts back what was changed
// outside the controller is marked a repair by the planner: a canary's
// Service that no longer selects serving pods at rest or past its first
// step (not while the workload still retires its colors, not at the first
// step of a rollout), a blue-green active Service that lost the color of
// the Deployment that serves, a preview Service that lost its color.
func TestRepairsArePlanned(t *testing.T) {
	healthy := Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4}
	for _, tt := range []struct {
		name     string
		recorded Status
		o        CanaryObserved
		want     bool
	}{
		{"at rest, the serving key removed", healthy, CanaryObserved{}, true},
		{"past the first step", progressing4, CanaryObserved{Step: 1}, true},
		{"at the first step of a rollout", progressing4, CanaryObserved{}, false},
		{"the Service selects serving pods", healthy, CanaryObserved{ServiceSelectsServing: true}, false},
		{"switching from blue-green, its colors left", healthy, CanaryObserved{HasColors: true}, false},
	} {
		if got := selectorAstray(tt.recorded, tt.o); got != tt.want {
			t.Errorf("canary, %s: repair %v, want %v", tt.name, got, tt.want)
		}
	}

	green := colorDeploy(ColorGreen, webTemplate("registry.example.com/web:v4"), sized(4))
	green.Annotations = map[string]string{}
	o := BlueGreenObserved{Green: green, Serving: ColorGreen, Preview: true, Now: t0}
	desired := blueGreenDesired(4, true)
	desired.Hash = hashOf(green)
	plan := PlanBlueGreen(desired, Status{Phase: PhaseHealthy, Revision: 4, Hash: desired.Hash, Commit: commitV4}, o)
	repairs := map[ServiceRole]bool{}
	selects := map[ServiceRole]bool{}
	for _, a := range plan.Actions {
		if a.Kind == ActionSelect {
			selects[a.Service], repairs[a.Service] = true, a.Repair
		}
	}
	if !selects[ServiceActive] || !repairs[ServiceActive] || !selects[ServicePreview] || !repairs[ServicePreview] {
		t.Errorf("blue-green, both Services' colors removed: selects %v, repairs %v; want both written as repairs", selects, repairs)
	}
	o.Active, o.PreviewColor = ColorGreen, ColorGreen
	for _, a := range PlanBlueGreen(desired, Status{Phase: PhaseHealthy, Revision: 4, Hash: desired.Hash, Commit: commitV4}, o).Actions {
		if a.Repair {
			t.Errorf("blue-green, both Services select green: %+v marked a repair", a)
		}
	}
}
