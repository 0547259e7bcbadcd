package rollout

import (
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// workloadState is what the controller records on a progressive
// workload's Deployments besides the status.
type workloadState struct {
	Replicas    int32
	Step        int
	StepSince   time.Time
	ScaleDownAt time.Time
	Paused      bool
	// Run is the analysis run of the rollout's current stage, if any.
	Run *strategies.AnalysisRun
}

// readState reads the workload state from a Deployment's annotations. A
// value that does not parse reads as absent: the planner then starts that
// part afresh (a step from its beginning, a scale-down delay anew), which
// is safe.
func readState(a map[string]string) workloadState {
	s := workloadState{Paused: a[contract.AnnotationPaused] == "true"}
	if n, err := strconv.ParseInt(a[contract.AnnotationReplicas], 10, 32); err == nil && n >= 0 {
		s.Replicas = int32(n)
	}
	if n, err := strconv.Atoi(a[contract.AnnotationStep]); err == nil && n >= 1 {
		s.Step = n - 1
	}
	s.StepSince, _ = time.Parse(time.RFC3339, a[contract.AnnotationStepSince])
	s.ScaleDownAt, _ = time.Parse(time.RFC3339, a[contract.AnnotationScaleDownAt])
	s.Run = strategies.DecodeRun(a[contract.AnnotationAnalysisRun])
	return s
}

// annotations returns the workload annotations for status st and state s;
// empty values are left out (and so removed from the Deployments).
func (s workloadState) annotations(st strategies.Status) map[string]string {
	a := st.Annotations()
	a[contract.AnnotationReplicas] = strconv.Itoa(int(s.Replicas))
	if s.Step > 0 {
		a[contract.AnnotationStep] = strconv.Itoa(s.Step + 1)
	}
	if !s.StepSince.IsZero() {
		a[contract.AnnotationStepSince] = s.StepSince.UTC().Format(time.RFC3339)
	}
	if !s.ScaleDownAt.IsZero() {
		a[contract.AnnotationScaleDownAt] = s.ScaleDownAt.UTC().Format(time.RFC3339)
	}
	if s.Paused {
		a[contract.AnnotationPaused] = "true"
	}
	if run := strategies.EncodeRun(s.Run); run != "" {
		a[contract.AnnotationAnalysisRun] = run
	}
	return a
}

// stamp replaces the workload annotations of d with a and sets its role. A
// command on d stays: only the reconcile that acts on it clears it.
func stamp(d *appsv1.Deployment, a map[string]string, role strategies.Role) {
	record(d, strategies.WorkloadKeys, a)
	if role != "" {
		setAnnotation(&d.ObjectMeta, contract.AnnotationRole, string(role))
	}
}

// recordedAtRest reports whether d, a progressive workload's primary,
// records a workload at rest (see strategies.Status.AtRest); a status
// that does not parse is not at rest.
func recordedAtRest(d *appsv1.Deployment) bool {
	st, err := strategies.ReadStatus(annotationsOf(d))
	return err == nil && st.AtRest()
}

// readCommand reads the command on Deployment on (see commandOn) and
// applies it to the recorded status and state of a progressive workload
// (see strategies.ApplyCommand); promote and abort are for the planner.
func readCommand(on *appsv1.Deployment, st *strategies.Status, s *workloadState) strategies.Commanded {
	cmd := strategies.ApplyCommand(annotationsOf(on)[contract.AnnotationCommand],
		strategies.Held{Status: *st, Paused: s.Paused, Run: s.Run}, true)
	*st, s.Paused, s.Run = cmd.Held.Status, cmd.Held.Paused, cmd.Held.Run
	return cmd
}

// commandOn returns the Deployment whose plimsoll.dev/command a
// progressive workload's reconcile acts on: the primary's, else the
// first of the workload's other Deployments that carries one, else the
// primary. Commands go on the primary, but one set on the Deployment a
// user sees running the new revision (the canary, the preview color) is
// meant for the workload all the same: left there, it was ignored, and
// on a preview color it acted much later, once that color served.
func commandOn(primary *appsv1.Deployment, others ...*appsv1.Deployment) *appsv1.Deployment {
	carries := func(d *appsv1.Deployment) bool {
		return strings.TrimSpace(annotationsOf(d)[contract.AnnotationCommand]) != ""
	}
	if carries(primary) {
		return primary
	}
	for _, d := range others {
		if d != primary && carries(d) {
			return d
		}
	}
	return primary
}

// record replaces the annotations keys of d with values, which names
// some of keys: those it leaves out are removed. It is the one writer of
// the status and state annotations.
func record(d *appsv1.Deployment, keys []string, values map[string]string) {
	for _, k := range keys {
		delete(d.Annotations, k)
	}
	for k, v := range values {
		setAnnotation(&d.ObjectMeta, k, v)
	}
}
