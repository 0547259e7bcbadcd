package workload

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/contract"
)

// TestServing answers which Deployment serves a workload from the roles,
// through every strategy and every switch between two of them: the
// namesake once its strategy has made it primary or stable, else the
// active color, else none.
func TestServing(t *testing.T) {
	tests := []struct {
		name    string
		deploys []*appsv1.Deployment
		want    string
	}{
		{"rolling", []*appsv1.Deployment{dep("web", "primary", "3", "Healthy", "")}, "web"},
		{"canary", []*appsv1.Deployment{dep("web", "stable", "4", "Paused", ""), dep("web-canary", "canary", "4", "Paused", "")}, "web"},
		{"blue-green", []*appsv1.Deployment{dep("web-blue", "idle", "4", "Healthy", "blue"), dep("web-green", "active", "4", "Healthy", "green")}, "web-green"},
		{"blue-green, first color not live", []*appsv1.Deployment{dep("web-blue", "preview", "1", "Progressing", "blue")}, ""},
		{"rolling to blue-green, before the first swap", []*appsv1.Deployment{dep("web", "idle", "3", "Healthy", ""),
			dep("web-blue", "preview", "4", "Progressing", "blue")}, ""},
		{"rolling to blue-green, swapped", []*appsv1.Deployment{dep("web", "idle", "3", "Healthy", ""),
			dep("web-blue", "active", "4", "Healthy", "blue")}, "web-blue"},
		{"blue-green to rolling, colors not retired", []*appsv1.Deployment{dep("web-blue", "active", "4", "Healthy", "blue"),
			dep("web", "primary", "5", "Progressing", "")}, "web"},
		{"blue-green to canary, colors not retired", []*appsv1.Deployment{dep("web-green", "active", "4", "Healthy", "green"),
			dep("web", "stable", "4", "Healthy", "")}, "web"},
		{"a Deployment plimsoll has not rolled", []*appsv1.Deployment{dep("web", "", "", "", "")}, ""},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Serving("web", among(tt.deploys))
			if err != nil {
				t.Fatal(err)
			}
			if name := nameOf(got); name != tt.want {
				t.Errorf("Serving = %q, want %q", name, tt.want)
			}
		})
	}
	broken := errors.New("the API server is away")
	if _, err := Serving("web", func(string) (*appsv1.Deployment, error) { return nil, broken }); !errors.Is(err, broken) {
		t.Errorf("a failed read gave %v, want it passed on", err)
	}
}

// TestServingRole names the role of the Deployment that serves each
// strategy.
func TestServingRole(t *testing.T) {
	for strategy, want := range map[string]string{contract.StrategyRolling: "primary", contract.StrategyCanary: "stable",
		contract.StrategyBlueGreen: "active", "": "primary"} {
		if got := ServingRole(strategy); got != want {
			t.Errorf("ServingRole(%q) = %q, want %q", strategy, got, want)
		}
	}
}

// nameOf is d's name, "" for nil.
func nameOf(d *appsv1.Deployment) string {
	if d == nil {
		return ""
	}
	return d.Name
}
