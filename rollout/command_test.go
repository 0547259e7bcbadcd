package rollout

import (
	"maps"
	"testing"

	"plimsoll.dev/plimsoll/contract"
)

// TestPromoteLiftsPause rolls canary "api" (steps "25%, pause, 100%") to
// v2 until it waits for promote at step 2, pauses it with the pause
// command, then promotes: the promote lifts the pause and moves on, in
// the write that clears the command; a resume after that has nothing to
// resume and changes nothing.
func TestPromoteLiftsPause(t *testing.T) {
	annotations := maps.Clone(canaryAnnotations)
	annotations[contract.AnnotationSteps] = "25%, pause, 100%"
	k := newCluster(t, "api")
	k.toV2(annotations)
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
