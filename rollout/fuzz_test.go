package rollout

import (
	"testing"
	"time"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// FuzzWorkloadAnnotations feeds every plimsoll.dev/ annotation the rollout
// controller parses with arbitrary values: nothing panics, a status that
// reads without error and the state read beside it are written back as
// annotations that read as the same status and state, and a workload that
// passes the input check has the steps or delay its strategy needs.
func FuzzWorkloadAnnotations(f *testing.F) {
	f.Add("canary", "25%, pause 10s, 100%", "30s", "true", "4", "2", "2026-03-14T12:00:00Z", "Progressing", "3")
	f.Add("blue-green", "", "-1s", "maybe", "-4", "0", "yesterday", "Healthy", "x")
	f.Add("rolling", "pause", "", "false", "99999999999", "1", "", "Degraded", "-1")
	f.Fuzz(func(t *testing.T, strategy, steps, delay, rollback, replicas, step, since, phase, revision string) {
		a := map[string]string{
			contract.AnnotationStrategy: strategy, contract.AnnotationService: "api", contract.AnnotationActiveService: "web",
			contract.AnnotationSteps: steps, contract.AnnotationScaleDownDelay: delay, contract.AnnotationAutoRollback: rollback,
			contract.AnnotationReplicas: replicas, contract.AnnotationStep: step, contract.AnnotationStepSince: since,
			contract.AnnotationScaleDownAt: since, contract.AnnotationPhase: phase, contract.AnnotationRevision: revision,
		}
		if err := checkAnnotations(a); err == nil {
			switch strategy {
			case contract.StrategyCanary:
				if _, err := canarySteps(a); err != nil {
					t.Errorf("steps %q passed the check but do not parse: %v", steps, err)
				}
			case contract.StrategyBlueGreen:
				if _, err := scaleDownDelay(a); err != nil {
					t.Errorf("delay %q passed the check but does not parse: %v", delay, err)
				}
			}
		}
		_ = autoRollback(a)
		state := readState(a)
		st, err := strategies.ReadStatus(a)
		if err != nil {
			return
		}
		written := state.annotations(st)
		// Times are written to the second, in UTC.
		again := readState(written)
		sameTime := func(x, y time.Time) bool { return x.Truncate(time.Second).Equal(y) }
		if again.Replicas != state.Replicas || again.Step != state.Step || again.Paused != state.Paused ||
			!sameTime(state.StepSince, again.StepSince) || !sameTime(state.ScaleDownAt, again.ScaleDownAt) {
			t.Errorf("state %+v written and read back as %+v", state, again)
		}
		if again, err := strategies.ReadStatus(written); err != nil || again != st {
			t.Errorf("status %+v written and read back as %+v, %v", st, again, err)
		}
	})
}
