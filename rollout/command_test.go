package rollout

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// TestPromoteLiftsPause rolls canary "api" (steps "25%, pause, 100%") to
// v2 until it waits for promote at step 2, pauses it with the pause
// command, then promotes: the promote lifts the pause and moves on, in
// the write that clears the command; a resume after that has nothing to
// resume and changes nothing.
func TestPromoteLiftsPause(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(canaryWithSteps("25%, pause, 100%"))
	k.untilQuiet()
	if a := k.deployment("api").Annotations; a[contract.AnnotationPhase] != contract.PhasePaused || a[contract.AnnotationStep] != "2" {
		t.Fatalf("before the commands: phase %s at step %s, want Paused at step 2 (waiting for promote)", a[contract.AnnotationPhase], a[contract.AnnotationStep])
	}

	sendCommand(t, k, "api", contract.CommandPause)
	k.untilQuiet()
	if a := k.deployment("api").Annotations; a[contract.AnnotationPaused] != "true" || a[contract.AnnotationCommand] != "" {
		t.Fatalf("after pause: paused %q, command %q; want paused, the command cleared", a[contract.AnnotationPaused], a[contract.AnnotationCommand])
	}

	sendCommand(t, k, "api", contract.CommandPromote)
	k.round()
	a := k.deployment("api").Annotations
	if _, held := a[contract.AnnotationPaused]; held || a[contract.AnnotationStep] == "2" || a[contract.AnnotationCommand] != "" {
		t.Errorf("after promote: paused %q, step %s, command %q; want the pause lifted, past step 2, the command cleared",
			a[contract.AnnotationPaused], a[contract.AnnotationStep], a[contract.AnnotationCommand])
	}
	k.untilQuiet()
	if a := k.deployment("api").Annotations; a[contract.AnnotationPhase] != contract.PhaseHealthy {
		t.Errorf("after promote: %s %q, want Healthy", a[contract.AnnotationPhase], a[contract.AnnotationMessage])
	}

	before := k.deployment("api")
	sendCommand(t, k, "api", contract.CommandResume)
	k.untilQuiet()
	after := k.deployment("api")
	delete(before.Annotations, contract.AnnotationCommand)
	if !maps.Equal(before.Annotations, after.Annotations) || before.Generation != after.Generation {
		t.Errorf("resume with nothing paused changed the workload: annotations %v to %v", before.Annotations, after.Annotations)
	}
}

// TestCommandOnAnotherDeployment: a command goes on the workload's
// primary, but one set by hand on the Deployment that runs the new
// revision (the canary, the preview color), where a user looking at it
// puts it, is the workload's all the same: it acts at once and is
// cleared from where it was, not left to act later (a preview color's
// once it serves).
func TestCommandOnAnotherDeployment(t *testing.T) {
	manual := maps.Clone(blueGreenAnnotations)
	manual[contract.AnnotationAutoPromote] = "false"
	tests := []struct {
		name        string
		annotations map[string]string
		on, primary string
		// acted reports whether the promote acted, from the primary.
		acted func(k *cluster) bool
	}{
		{"canary", canaryWithSteps("25%, pause, 100%"), "api-canary", "api", func(k *cluster) bool {
			return k.deployment("api").Annotations[contract.AnnotationStep] != "2"
		}},
		{"blue-green preview", manual, "api-green", "api-blue", func(k *cluster) bool {
			svc, err := k.client.CoreV1().Services("shop").Get(k.ctx, "api", metav1.GetOptions{})
			return err == nil && svc.Spec.Selector[contract.LabelColor] == "green"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newCluster(t, "api")
			k.toV2(tt.annotations)
			k.untilQuiet()
			if phase := k.deployment(tt.primary).Annotations[contract.AnnotationPhase]; phase != contract.PhasePaused {
				t.Fatalf("before the command: %s, want Paused, waiting for promote", phase)
			}
			sendCommand(t, k, tt.on, contract.CommandPromote)
			k.round()
			if !tt.acted(k) {
				t.Errorf("a promote on %s did not act", tt.on)
			}
			for _, name := range []string{tt.on, tt.primary} {
				if d := k.lookUp(name); d != nil && d.Annotations[contract.AnnotationCommand] != "" {
					t.Errorf("%s still carries command %q after it acted", name, d.Annotations[contract.AnnotationCommand])
				}
			}
			k.untilQuiet()
			if phase := k.deployment(tt.primary).Annotations[contract.AnnotationPhase]; phase == contract.PhaseDegraded {
				t.Errorf("after the promote: %s", phase)
			}
		})
	}
}
