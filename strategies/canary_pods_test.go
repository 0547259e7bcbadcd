package strategies

import (
	"fmt"
	"testing"
	"time"
)

// TestPlanCanaryWeights works the canary arithmetic at every size: at weight
// w of N replicas, ceil(w*N/100) canary pods (at least 1 for w > 0); each
// gets the serving label once Ready, and the stable gives up a pod for
// each, down to its own share rounded up, ceil((100-w)*N/100): below 100%
// the stable always serves (at 25% of 1, one pod of each). 100% is the
// full promotion instead.
func TestPlanCanaryWeights(t *testing.T) {
	tests := []struct {
		n, weight, canary, stable int32
	}{
		// canary ceil(0.01), ceil(0.25), ceil(0.5), ceil(0.99); stable ceil(0.99), ceil(0.75), ceil(0.5), ceil(0.01)
		{1, 0, 0, 1}, {1, 1, 1, 1}, {1, 25, 1, 1}, {1, 50, 1, 1}, {1, 99, 1, 1},
		// canary ceil(0.02), ceil(0.5), 1, ceil(1.98); stable ceil(1.98), ceil(1.5), 1, ceil(0.02)
		{2, 0, 0, 2}, {2, 1, 1, 2}, {2, 25, 1, 2}, {2, 50, 1, 1}, {2, 99, 2, 1},
		// canary ceil(0.03), ceil(0.75), ceil(1.5), ceil(2.97); stable ceil(2.97), ceil(2.25), ceil(1.5), ceil(0.03)
		{3, 0, 0, 3}, {3, 1, 1, 3}, {3, 25, 1, 3}, {3, 50, 2, 2}, {3, 99, 3, 1},
		// canary ceil(0.04), 1, 2, ceil(3.96); stable ceil(3.96), 3, 2, ceil(0.04)
		{4, 0, 0, 4}, {4, 1, 1, 4}, {4, 25, 1, 3}, {4, 50, 2, 2}, {4, 99, 4, 1},
		// canary ceil(0.1), ceil(2.5), 5, ceil(9.9); stable ceil(9.9), ceil(7.5), 5, ceil(0.1)
		{10, 0, 0, 10}, {10, 1, 1, 10}, {10, 25, 3, 8}, {10, 50, 5, 5}, {10, 99, 10, 1},
		{100, 0, 0, 100}, {100, 1, 1, 99}, {100, 25, 25, 75}, {100, 50, 50, 50}, {100, 99, 99, 1},
		{1, 100, 1, 0}, {2, 100, 2, 0}, {3, 100, 3, 0}, {4, 100, 4, 0}, {10, 100, 10, 0}, {100, 100, 100, 0},
	}
	for _, tt := range tests {
		for _, podsReady := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d%% of %d, pods Ready %v", tt.weight, tt.n, podsReady), func(t *testing.T) {
				desired := canaryDesired(tt.n, fmt.Sprintf("%d%%, pause", tt.weight))
				var pods []Pod
				var labelled []string
				for i := range tt.canary {
					name := fmt.Sprintf("c%03d", i)
					if !podsReady {
						pods = append(pods, starting(name))
						continue
					}
					pods, labelled = append(pods, ready(name)), append(labelled, name)
				}
				o := CanaryObserved{
					Stable: stableDeploy(v3, sized(tt.n)), Canary: canaryDeploy(v4, sized(tt.canary)), Pods: pods,
					ServiceSelectsServing: true, StepSince: t0, Now: at(time.Second),
				}
				plan := PlanCanary(desired, progressing4, o)

				stable := tt.n
				if podsReady {
					stable = tt.stable
				}
				want := canaryWant{phase: PhaseProgressing, stable: ptrTo(stable), canary: ptrTo(tt.canary), label: labelled}
				switch {
				case tt.weight == 100:
					want = canaryWant{phase: PhaseProgressing, words: []string{"promoting"}, stable: ptrTo(tt.n), template: StablePromote}
				case tt.canary == 0 || podsReady && stable == tt.n:
					// Nothing to bring up, or the stable's share is all
					// of it (1% of 10: ceil(9.9) = 10), the stable
					// already at N: done once the canary serves, and on
					// to the pause in the same plan.
					want.phase, want.step, want.since = PhasePaused, 1, sinceNow
					want.words = []string{fmt.Sprintf("canary step 2/2: %d%% (%d/%d pods serving); waiting for promote", tt.weight, tt.canary, tt.n)}
				default:
					// Not there yet, the stable being still at N: the
					// step's counts, the same line until it is.
					want.words = []string{fmt.Sprintf("canary step 1/2: going to %d%% (%d/%d pods)", tt.weight, tt.canary, tt.n)}
				}
				checkCanary(t, plan, desired, o, want)
			})
		}
	}
}
