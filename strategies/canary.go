package strategies

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/contract"
)

// CanaryDesired is what Git asks of a canary workload.
type CanaryDesired struct {
	Desired
	// Steps are the parsed plimsoll.dev/steps.
	Steps []Step
	// Autoscaled says that a HorizontalPodAutoscaler owns the stable
	// Deployment's count: Replicas is that count, the workload's total.
	// The plan then never writes the stable's count; the canary's share is
	// made in the Service instead, by taking as many stable pods out of it
	// (the serving label removed) as canary pods join it.
	Autoscaled bool
}

// CanaryObserved is the live state of a canary workload and the controller
// state recorded on it.
type CanaryObserved struct {
	// Stable is the Deployment <name>, Canary is <name>-canary; nil when
	// absent.
	Stable, Canary *appsv1.Deployment
	// Pods are the pods of the canary Deployment.
	Pods []Pod
	// StablePods are the pods of the stable Deployment: an autoscaled
	// plan balances their serving labels, and a revision that runs on the
	// stable alone is judged on them.
	StablePods []Pod
	// ServiceSelectsServing is true when the Service's selector has
	// plimsoll.dev/serving="true".
	ServiceSelectsServing bool
	// HasColors: the workload still has blue-green colors (it switched
	// from blue-green, and retires them once the Service selects serving
	// pods).
	HasColors bool
	// ServiceReady are the pods the Service's EndpointSlices list as
	// ready.
	ServiceReady []string
	// Step is the index (from 0) of the step the rollout is at, and
	// StepSince when it got there.
	Step      int
	StepSince time.Time
	// Paused holds the workload where it is (the pause command).
	Paused bool
	// Promote and Abort are pending commands.
	Promote, Abort bool
	// Analysis are the metrics of the workload's analyses; none when it
	// has no analysis.
	Analysis []MetricSpec
	// Run is the recorded analysis run, with this reconcile's measurements
	// folded in; nil when none was recorded.
	Run *AnalysisRun
	// ReplicaSets are the workload's ReplicaSets: a hand-over of the
	// canary's pods reads them (see planHandOver).
	ReplicaSets []*appsv1.ReplicaSet
	// Now is the time of planning.
	Now time.Time
}

// StableTemplate says what becomes of the stable Deployment's template.
type StableTemplate int

const (
	// StableKeep leaves the stable template as it is.
	StableKeep StableTemplate = iota
	// StableServing adds plimsoll.dev/serving="true" to the live stable
	// template, which lacks it (a workload that was rolling before).
	StableServing
	// StablePromote gives the stable Deployment the canary template, with
	// plimsoll.dev/serving="true", and a rolling update that surges the
	// whole count (maxSurge 100%, maxUnavailable 0) in place of Git's (a
	// Recreate strategy stays): every new pod is asked for at once, and no
	// old one goes before the new ones are available.
	StablePromote
	// StableSettle gives the stable Deployment back Git's strategy (the
	// canary Deployment's) once a promotion has run.
	StableSettle
	// StableHandOver gives the stable Deployment the canary Deployment's
	// template exactly, so that its new ReplicaSet adopts the canary's
	// pods (see planHandOver).
	StableHandOver
)

// CanaryPlan is what PlanCanary decided: its Actions, in the order to
// execute them (see sequenceCanary), and the decisions they come from.
type CanaryPlan struct {
	// Actions are the writes of the plan, in order.
	Actions []Action
	// Status is the status to record on every Deployment of the workload.
	Status Status
	// StableReplicas and CanaryReplicas are the counts to write; a nil
	// count leaves the live one.
	StableReplicas, CanaryReplicas *int32
	// Stable says what to do with the stable template.
	Stable StableTemplate
	// Label and Unlabel name canary pods to set and remove
	// plimsoll.dev/serving="true" on.
	Label, Unlabel []string
	// SelectServing asks to add plimsoll.dev/serving="true" to the
	// Service's selector.
	SelectServing bool
	// Step and StepSince are the step state to record.
	Step      int
	StepSince time.Time
	// Run is the analysis run to record.
	Run *AnalysisRun
	// RequeueAfter, when positive, is when to plan again although nothing
	// changes meanwhile (a timed pause running out).
	RequeueAfter time.Duration
	// Acted says what a pending command did, for the command's Event.
	Acted string
	// CanaryPaused and StablePaused, when set, pause (true) or resume
	// (false) the canary and the stable Deployment: a hand-over pauses
	// both (see planHandOver).
	CanaryPaused, StablePaused *bool
	// OrphanCanary asks to delete the canary Deployment that a hand-over
	// paused, with the orphan propagation policy: its ReplicaSet keeps
	// running, the stable Deployment's.
	OrphanCanary bool
	// HandOver names the canary Deployment's ReplicaSet that a hand-over
	// gives to the stable Deployment before the canary goes (see
	// ActionHandOver).
	HandOver string
	// HoldOut are labels to take away from the stable Deployment's
	// ReplicaSets, Restore those to give back (see HeldOut).
	HoldOut, Restore []HeldOut
	// DeletePods names pods to delete: canary pods that a hand-over left
	// without an owner and nobody adopted.
	DeletePods []string
	// DeleteReplicaSets names ReplicaSets that a hand-over deletes: the
	// canary's of earlier revisions, and the stable's when none of its
	// selector's labels can be held out.
	DeleteReplicaSets []string
}

// PlanCanary plans one step of a canary workload from what Git wants
// (desired), what is recorded (recorded) and what runs (observed). While
// the Deployment controller has not observed a Deployment's latest spec,
// the recorded phase and message stand (see keepWhileLagging), unless the
// plan moves the step on.
//
// Worked through with N = 4 and steps "25%, pause, 50%, pause, 100%":
//
//	step 1, 25%: the canary scales to ceil(25*4/100) = 1 pod; once it is
//	    Ready it gets the serving label, then stable scales to 4-1 = 3.
//	    The step is done when 1 canary pod serves and stable has 3
//	    available: 4 serving in all
//	step 2, pause: held until a promote command
//	step 3, 50%: the canary scales to 2; once the second pod is Ready and
//	    labelled, stable scales to 2
//	step 4, pause: held until promote
//	step 5, 100%: stable takes the canary template at 4 replicas; once it
//	    is fully available the canary pods lose the label and the canary
//	    scales to 0
//
// A promote during a pause step moves to the next step; during a weight
// step it promotes fully (as reaching 100% or the end of the steps does).
// An abort, or the canary missing its progress deadline with auto-rollback
// on, unlabels every canary pod at once, scales stable back to N and the
// canary to zero, and records the failed hash. With auto-rollback off, a
// missed deadline records the failed hash and holds everything as it is
// until an abort.
//
// The pause command holds the step where it is: a finished step, an ended
// timed pause or a promote does not move it on, and the stable template is
// not replaced; the canary pods of the current weight are still labelled
// as they become Ready.
//
// A workload with analyses has every step before full promotion judged by
// its own analysis run ("step 1", "step 2", ...), started once the step's
// traffic is in place: the step ends only when its run is successful (and,
// for a timed pause, its time is up). A failed run fails the revision as a
// missed progress deadline does; an inconclusive one pauses the workload
// until a promote moves on to the next step or an abort. With steps "25%,
// pause 30s, 100%" and an analysis of 3 measurements 10s apart, step 1
// lasts at least 30s after its canary pod serves, step 2 at least 30s.
func PlanCanary(desired CanaryDesired, recorded Status, o CanaryObserved) CanaryPlan {
	plan := planCanary(desired, recorded, o)
	if IdleCanary(o.Canary) && plan.CanaryReplicas != nil && *plan.CanaryReplicas > 0 && plan.CanaryPaused == nil {
		// An idle canary asked for pods runs again, in the same write: one
		// made paused with a revision's template (a workload switched to
		// canary with a new image) as much as one given the next revision.
		plan.CanaryPaused = new(bool)
	}
	if plan.Status.FailedHash != desired.Hash {
		plan.RequeueAfter = sooner(plan.RequeueAfter, untilStalled(o.Canary, o.Pods, desired.Hash, recorded, o.Now))
	}
	if plan.Step == o.Step && plan.StepSince.Equal(o.StepSince) {
		// A step reached or begun is written anyway: its message goes
		// with it. Held, it went out in a write of its own once the
		// Deployment controller caught up, a second write of both
		// Deployments for each step (two per step over 50 canaries,
		// seconds apart).
		keepWhileLagging(&plan.Status, recorded, o.Stable, o.Canary)
	}
	plan.Actions = sequenceCanary(plan, o, replicasOf(desired.Desired))
	if selectorAstray(recorded, o) {
		markRepair(plan.Actions, ServiceCanary)
	}
	return plan
}

// planCanary is PlanCanary but for what applies to every plan.
func planCanary(desired CanaryDesired, recorded Status, o CanaryObserved) CanaryPlan {
	n := replicasOf(desired.Desired)
	decision := DecideRevision(recorded, desired.Hash)
	plan := CanaryPlan{
		Status:    startStatus(desired.Desired, recorded, decision),
		Step:      o.Step,
		StepSince: o.StepSince,
		Run:       o.Run,
	}
	status := &plan.Status
	revision := describeRevision(decision.Revision, desired.Commit)
	if o.Stable != nil && !o.Stable.Spec.Paused && ownReplicaSet(o.ReplicaSets, o.Stable) != nil {
		// A hand-over's held-out ReplicaSets come back (step 6), again
		// after a restart between the stable's resume and them.
		plan.Restore, plan.DeleteReplicaSets = heldOut(o.ReplicaSets, o.Stable)
	}
	// A hand-over under way goes through whatever else changed (a new
	// revision, an abort, a pause): the canary's pods serve, the stable
	// runs none of its own.
	if stage := handOverStage(o, n, revision); stage != nil {
		plan.Acted = lateCommand(o.Promote, o.Abort, decision.Revision, "is being promoted")
		if plan.Acted == "" && o.Paused {
			plan.Acted = fmt.Sprintf("revision %d is being promoted: its hand-over finishes first", decision.Revision)
		}
		return stage(plan)
	}
	inFlight := o.Stable != nil && hashOf(o.Stable) != desired.Hash
	why, held := failCanary(&plan, &decision, desired, recorded, o, inFlight)
	switch {
	case held:
		return plan
	case decision.Action == RevisionRefused:
		return planCanaryRefused(plan, desired, recorded, o, n, why)
	case o.Stable == nil:
		status.Phase, status.Message = PhaseProgressing, "creating the stable Deployment of "+revision
		return plan
	case o.Stable.Spec.Template.Labels[contract.LabelServing] != "true":
		// A workload that was rolling, or ran before plimsoll: its pods
		// must carry the serving label before the Service selects by it.
		// The label is a template change, which replaces every stable pod
		// within the stable's maxUnavailable; the same write grows the
		// stable by that many pods, so that as many as serve now stay
		// available (see servingSurge).
		size := max(liveReplicas(o.Stable), n)
		size += servingSurge(size, o.Stable.Spec.Strategy)
		plan.Stable, plan.StableReplicas = StableServing, stableCount(desired, size)
		status.Phase, status.Message = PhaseProgressing, "labelling the stable pods serving"
		return plan
	case !o.ServiceSelectsServing:
		// Until the Service selects serving pods only, a Ready canary pod
		// would get traffic unlabelled: no canary before that.
		// A stable failing on its own, of which the Service holds no
		// ready endpoint, loses nothing to the selector: it does not hold
		// the canary back. Its status alone cannot tell: a Deployment
		// adopted a moment after kubectl created it can read 0 ready
		// while its 4 pods serve, the Deployment controller not having
		// counted them yet.
		if (fullyAvailable(o.Stable, liveReplicas(o.Stable)) && rolloutComplete(o.Stable)) ||
			(stableFailing(o.Stable) && caughtUp(o.Stable) && len(o.ServiceReady) == 0) {
			plan.SelectServing = true
		}
		status.Phase, status.Message = PhaseProgressing, "selecting the serving pods in the Service"
		return plan
	case !inFlight:
		if decision.Action != RevisionRefused {
			plan.Acted = lateCommand(o.Promote, o.Abort, decision.Revision, "is promoted")
		}
		return planCanaryPromoted(plan, desired, recorded, o, n, revision)
	case hashOf(o.Canary) != desired.Hash:
		status.Phase, status.Message = PhaseProgressing, revision+": writing the template to the canary"
		return plan
	case recorded.Phase == PhaseDegraded && deadlineExceeded(o.Canary):
		status.Phase = PhaseDegraded
		status.Message = revision + ": waiting for the canary to make progress after its progress deadline was exceeded"
		return plan
	}
	return planCanarySteps(plan, desired, recorded, o, n, revision)
}

// failCanary fails the revision in flight when an abort or the canary's
// own failure says so: it records the failed hash and turns decision into
// a refusal, returning why for the message. With auto-rollback off a
// failure holds everything as it is (held), Degraded, until an abort.
func failCanary(plan *CanaryPlan, decision *RevisionDecision, desired CanaryDesired, recorded Status, o CanaryObserved, inFlight bool) (why string, held bool) {
	status := &plan.Status
	if o.Abort && decision.Action != RevisionRefused && inFlight {
		status.FailedHash = desired.Hash
		plan.Acted = fmt.Sprintf("aborted revision %d", decision.Revision)
		why = plan.Acted
		decision.Action = RevisionRefused
	}
	if reason := canaryFailure(desired, recorded, o); decision.Action != RevisionRefused && inFlight && reason != "" {
		status.FailedHash = desired.Hash
		if !desired.AutoRollback {
			status.Phase = PhaseDegraded
			status.Message = fmt.Sprintf("revision %d failed on the canary: %s; auto-rollback is off", decision.Revision, reason)
			return "", true
		}
		why = fmt.Sprintf("revision %d failed on the canary: %s", decision.Revision, reason)
		decision.Action = RevisionRefused
	}
	return why, false
}

// handOverStage returns the planner of the hand-over stage o is at (see
// planHandOver), nil when no hand-over is under way.
func handOverStage(o CanaryObserved, n int32, revision string) func(CanaryPlan) CanaryPlan {
	switch {
	case handingOver(o):
		return func(p CanaryPlan) CanaryPlan { return planHandOver(p, o, n, revision) }
	case handedOver(o):
		return func(p CanaryPlan) CanaryPlan { return planHandedOver(p, o, revision) }
	case adopting(o):
		return func(p CanaryPlan) CanaryPlan { return planAdoption(p, o, revision) }
	}
	return nil
}

// stableFailing reports whether the stable Deployment fails on its own: it
// ran out of its progress deadline (a revision that failed and could not
// be rolled back), or not one of its pods is Ready (an image that cannot
// be pulled, a crash loop). A stable with some pods Ready and others
// starting is not failing: a step waits for them.
func stableFailing(d *appsv1.Deployment) bool {
	return deadlineExceeded(d) || (liveReplicas(d) > 0 && d.Status.ReadyReplicas == 0)
}
