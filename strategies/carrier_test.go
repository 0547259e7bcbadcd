package strategies

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/contract"
)

// atRevision is d recording revision n.
func atRevision(d *appsv1.Deployment, n string) *appsv1.Deployment {
	d.Annotations[contract.AnnotationRevision] = n
	return d
}

// TestBlueGreenCarrier: the active color carries a blue-green workload's
// state, else the color of the newer revision, else the Deployment it ran
// before; a <name> written for blue-green is no such Deployment.
func TestBlueGreenCarrier(t *testing.T) {
	blue := atRevision(colored(ColorBlue, "h1", RoleActive), "3")
	green := atRevision(colored(ColorGreen, "h2", RolePreview), "4")
	legacy := stamped("h0", RolePrimary)
	for _, tc := range []struct {
		name               string
		active             Color
		blue, green, owned *appsv1.Deployment
		want               *appsv1.Deployment
	}{
		{"the active color, though older", ColorBlue, blue, green, legacy, blue},
		{"no color active: the newer revision", "", blue, green, legacy, green},
		{"the active color gone: the other", ColorGreen, blue, nil, legacy, blue},
		{"no color yet: the Deployment it ran before", "", nil, nil, legacy, legacy},
		{"nothing", "", nil, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BlueGreenCarrier(tc.active, tc.blue, tc.green, tc.owned); got != tc.want {
				t.Errorf("carrier %v, want %v", nameOf(got), nameOf(tc.want))
			}
		})
	}
	own := stamped("h0", RoleIdle)
	own.Annotations[contract.AnnotationStrategy] = contract.StrategyBlueGreen
	if got := legacyOf(own); got != nil {
		t.Errorf("a <name> written for blue-green is taken as the one the workload ran before")
	}
	if got := legacyOf(legacy); got != legacy {
		t.Errorf("a rolling workload's <name> is not taken as the one the workload ran before")
	}
}

func nameOf(d *appsv1.Deployment) string {
	if d == nil {
		return "none"
	}
	return d.Name
}
