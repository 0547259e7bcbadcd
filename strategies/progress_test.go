package strategies

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestRollingBounds(t *testing.T) {
	rolling := func(surge, unavailable intstr.IntOrString) appsv1.DeploymentStrategy {
		return appsv1.DeploymentStrategy{
			Type:          appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
		}
	}
	pct := intstr.FromString
	n := intstr.FromInt32
	tests := []struct {
		name             string
		replicas         int32
		strategy         appsv1.DeploymentStrategy
		wantMaxPods      int32
		wantMinAvailable int32
	}{
		{"4 replicas, defaults 25%/25%: surge 1, unavailable 1", 4, appsv1.DeploymentStrategy{}, 5, 3},
		{"4 replicas, 25%/25% written out", 4, rolling(pct("25%"), pct("25%")), 5, 3},
		{"10 replicas, 30%/30%: 3 and 3", 10, rolling(pct("30%"), pct("30%")), 13, 7},
		{"3 replicas, 25%/25%: ceil 0.75 = 1, floor 0.75 = 0", 3, rolling(pct("25%"), pct("25%")), 4, 3},
		{"1 replica, 0/25%: both zero, unavailable becomes 1", 1, rolling(n(0), pct("25%")), 1, 0},
		{"5 replicas, absolute 2/0", 5, rolling(n(2), n(0)), 7, 5},
		{"2 replicas, unavailable 100%", 2, rolling(n(0), pct("100%")), 2, 0},
		{"unavailable above replicas never goes below 0", 2, rolling(n(1), n(5)), 3, 0},
		{"recreate", 4, appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, 4, 0},
		{"0 replicas", 0, appsv1.DeploymentStrategy{}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxPods, minAvailable := rollingBounds(tt.replicas, tt.strategy)
			if maxPods != tt.wantMaxPods || minAvailable != tt.wantMinAvailable {
				t.Errorf("rollingBounds = at most %d pods, at least %d available; want %d, %d",
					maxPods, minAvailable, tt.wantMaxPods, tt.wantMinAvailable)
			}
		})
	}
}
