package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// TestRefreshDropsInputsGitDropped: a rollout input that Git no longer
// sets (an analysis taken out) leaves the live Deployment, so that it
// judges no later revision; the status, a command, and an input that may
// be set on the live object alone (prune) stay.
func TestRefreshDropsInputsGitDropped(t *testing.T) {
	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{
		contract.AnnotationStrategy: contract.StrategyCanary, contract.AnnotationService: "web", contract.AnnotationSteps: "50%, 100%",
		contract.AnnotationAnalysis: "error-rate", contract.AnnotationAnalysisArgs: "threshold=0.01",
		contract.AnnotationPhase: "Healthy", contract.AnnotationCommand: "pause", contract.AnnotationPrune: contract.PruneDisabled,
	}}}
	git := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{
		contract.AnnotationStrategy: contract.StrategyCanary, contract.AnnotationService: "web", contract.AnnotationSteps: "25%, 100%",
	}}}
	got := refresh(live, git).Annotations
	for _, k := range []string{contract.AnnotationAnalysis, contract.AnnotationAnalysisArgs} {
		if v, ok := got[k]; ok {
			t.Errorf("%s = %q kept, want it gone with Git's", k, v)
		}
	}
	want := map[string]string{contract.AnnotationSteps: "25%, 100%", contract.AnnotationPhase: "Healthy",
		contract.AnnotationCommand: "pause", contract.AnnotationPrune: contract.PruneDisabled}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if live.Annotations[contract.AnnotationAnalysis] != "error-rate" {
		t.Error("refresh changed the live Deployment it was given")
	}
}
