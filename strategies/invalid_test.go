package strategies

import (
	"testing"

	"plimsoll.dev/plimsoll/contract"
)

// TestPlanInvalid: an input error is recorded on every Deployment named,
// Degraded with the error, with Git's inputs but not its strategy, status
// or state; the writes go alone, without the ReplicaSets.
func TestPlanInvalid(t *testing.T) {
	git := map[string]string{contract.AnnotationSteps: "25%, paws", contract.AnnotationStrategy: contract.StrategyCanary,
		contract.AnnotationPhase: "Healthy", contract.AnnotationStep: "2", "example.com/owner": "team"}
	actions := PlanInvalid([]string{"", contract.SuffixCanary}, git, "annotation plimsoll.dev/steps: step 2: paws")
	if len(actions) != 2 || actions[0].Deployment != "" || actions[1].Deployment != contract.SuffixCanary {
		t.Fatalf("actions %+v, want a write of <name> and of the canary", actions)
	}
	want := map[string]string{contract.AnnotationSteps: "25%, paws", contract.AnnotationPhase: contract.PhaseDegraded,
		contract.AnnotationMessage: "annotation plimsoll.dev/steps: step 2: paws"}
	for _, a := range actions {
		if a.Kind != ActionWrite || a.Status || !a.Alone || len(a.Annotations) != len(want) {
			t.Errorf("action %+v, want a write alone of %v", a, want)
			continue
		}
		for k, v := range want {
			if a.Annotations[k] != v {
				t.Errorf("annotation %s = %q, want %q", k, a.Annotations[k], v)
			}
		}
	}
	if m := PlanMessage(contract.SuffixBlue, "write refused, retrying: x"); len(m) != 1 || !m[0].Alone ||
		m[0].Deployment != contract.SuffixBlue || len(m[0].Annotations) != 1 || m[0].Annotations[contract.AnnotationMessage] == "" {
		t.Errorf("message %+v, want one write alone of the message on blue", m)
	}
}
