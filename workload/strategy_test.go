package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/contract"
)

// TestStrategyOf tells the strategy a workload's Deployments run, and the
// one a switch leaves, from their roles.
func TestStrategyOf(t *testing.T) {
	canaryIdle := dep("web", "idle", "3", "Healthy", "")
	canaryIdle.Annotations[contract.AnnotationStrategy] = contract.StrategyCanary
	canaryNamed := dep("web", "", "3", "Healthy", "")
	canaryNamed.Annotations[contract.AnnotationStrategy] = contract.StrategyCanary
	tests := []struct {
		name    string
		deploys []*appsv1.Deployment
		// strategy is StrategyOf's answer; previous PreviousStrategy's
		// with that strategy as the target.
		strategy, previous string
	}{
		{"rolling", []*appsv1.Deployment{dep("web", "primary", "3", "Healthy", "")}, contract.StrategyRolling, ""},
		{"nothing rolled yet", []*appsv1.Deployment{dep("web", "", "1", "", "")}, contract.StrategyRolling, ""},
		{"canary", []*appsv1.Deployment{dep("web", "stable", "4", "Healthy", ""), dep("web-canary", "canary", "4", "Healthy", "")},
			contract.StrategyCanary, ""},
		{"canary written, not rolled", []*appsv1.Deployment{canaryNamed}, contract.StrategyCanary, ""},
		{"blue-green", []*appsv1.Deployment{dep("web-green", "active", "4", "Healthy", "green")}, contract.StrategyBlueGreen, ""},
		{"blue-green over canary's idle legacy", []*appsv1.Deployment{canaryIdle, dep("web-blue", "preview", "4", "Progressing", "blue")},
			contract.StrategyBlueGreen, ""},
		{"canary taking over from blue-green", []*appsv1.Deployment{dep("web", "stable", "5", "Progressing", ""),
			dep("web-blue", "active", "4", "Healthy", "blue")}, contract.StrategyCanary, contract.StrategyBlueGreen},
		{"rolling over colors", []*appsv1.Deployment{dep("web", "primary", "5", "Progressing", ""),
			dep("web-green", "active", "4", "Healthy", "green")}, contract.StrategyRolling, contract.StrategyBlueGreen},
		{"blue-green over canary's canary", []*appsv1.Deployment{dep("web-canary", "canary", "4", "Healthy", ""),
			dep("web-blue", "preview", "5", "Progressing", "blue")}, contract.StrategyBlueGreen, contract.StrategyCanary},
		{"rolling over a canary", []*appsv1.Deployment{dep("web", "primary", "5", "Progressing", ""),
			dep("web-canary", "canary", "4", "Healthy", "")}, contract.StrategyRolling, contract.StrategyCanary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StrategyOf("web", among(tt.deploys))
			if err != nil || got != tt.strategy {
				t.Errorf("StrategyOf = %q (%v), want %q", got, err, tt.strategy)
			}
			prev, err := PreviousStrategy("web", among(tt.deploys), tt.strategy)
			if err != nil || prev != tt.previous {
				t.Errorf("PreviousStrategy(%s) = %q (%v), want %q", tt.strategy, prev, err, tt.previous)
			}
		})
	}
	if got := NamedStrategy(map[string]string{}); got != contract.StrategyRolling {
		t.Errorf("NamedStrategy of no annotation = %q, want rolling", got)
	}
	if got := NamedStrategy(map[string]string{contract.AnnotationStrategy: "canary"}); got != contract.StrategyCanary {
		t.Errorf("NamedStrategy = %q, want canary", got)
	}
}
