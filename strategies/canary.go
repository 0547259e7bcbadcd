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
	// why says what failed the revision in this plan, for the message.
	var why string
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
			return plan
		}
		why = fmt.Sprintf("revision %d failed on the canary: %s", decision.Revision, reason)
		decision.Action = RevisionRefused
	}
	if decision.Action == RevisionRefused {
		return planCanaryRefused(plan, desired, recorded, o, n, why)
	}

	switch {
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

	steps := desired.Steps
	k := min(max(o.Step, 0), len(steps))
	if o.Promote && !o.Paused {
		if k < len(steps) && (steps[k].Pause || o.Run.Of(stageOf(k), desired.Hash) && o.Run.Verdict == VerdictInconclusive) {
			plan.Acted = fmt.Sprintf("moved on from step %d/%d", k+1, len(steps))
			k++
			plan.Step, plan.StepSince = k, o.Now
		} else {
			plan.Acted = "promoted fully"
			k = len(steps)
			plan.Step, plan.StepSince = k, o.Now
		}
	}
	if k >= len(steps) || (!steps[k].Pause && steps[k].Weight >= 100) {
		if o.Paused {
			// The pause command holds the workload where it is: the
			// stable template is not replaced until resume.
			status.Phase, status.Message = PhasePaused, fmt.Sprintf("%s: paused before promoting the stable Deployment", revision)
			return plan
		}
		if desired.Autoscaled && serveEveryStable(&plan, o.StablePods) > 0 {
			// The stable pods taken out of the Service come back first:
			// the Deployment controller replaces pods by availability, not
			// by the serving label, and would otherwise take serving pods
			// while idle ones wait. With 6 stable pods, 3 of them out,
			// and maxUnavailable 1: serving could fall from 6 to 4.
			status.Phase, status.Message = PhaseProgressing, fmt.Sprintf("%s: every stable pod serving again before the promotion", revision)
			return plan
		}
		if n > 0 && handsOver(desired, o) {
			return planHandOver(plan, o, n, revision)
		}
		// Full promotion: stable takes the new template at N.
		plan.Stable, plan.StableReplicas = StablePromote, stableCount(desired, n)
		status.Phase, status.Message = PhaseProgressing, fmt.Sprintf("%s: promoting the stable Deployment", revision)
		return plan
	}

	if plan.StepSince.IsZero() {
		// The first step has no recorded start: it starts now (and a
		// timed pause counts from here).
		plan.StepSince = o.Now
	}
	since := plan.StepSince
	weight := weightAt(steps, k)
	c, share := CanaryReplicas(weight, n), StableReplicas(weight, n)
	keep, hash := lowering(desired, o, c, share), hashOf(o.Canary)
	serving := label(&plan, o.Pods, keep, hash)
	// The stable gives up a pod for each canary pod that serves, down to
	// its own share: at 25% of 1, the canary's pod serves beside the
	// stable's (1-1 = 0 would send it all the traffic).
	stable := max(n-serving, share)
	// A pod taken out of traffic by hand keeps running but does not count:
	// the canary gets one more pod for each, to be labelled in its place.
	// One this plan takes out stays until it is out (see leaving).
	size := keep + unlabelled(o.Pods) + leaving(plan.Unlabel, o.Pods, hash)
	plan.CanaryReplicas, plan.StableReplicas = &size, stableCount(desired, stable)
	stableReady := stableAt(o.Stable, stable, o.ReplicaSets)
	if desired.Autoscaled {
		stableReady = serveStable(&plan, o.StablePods, stable) == stable
	}
	where := fmt.Sprintf("canary step %d/%d", k+1, len(steps))
	// The line names the step's counts, not those so far: it changes
	// when the step is reached, not with each pod labelled (see
	// waitingFor). The step is reached once the stable is down to its
	// share too: at 50% of 4, 2 canary pods serve beside 3 stable ones
	// (40%) until the stable's third pod is gone. A line for that moment
	// alone would be one more status of each Deployment per step, and the
	// Deployment controller copies each to a ReplicaSet.
	reached := serving == c && stableReady
	if reached && waitsForPromote(steps, k+1) {
		// A wait for promote writes nothing until someone comes, so it
		// starts once the Deployment controller has reported both
		// Deployments at the step's counts: what kubectl shows while the
		// rollout waits is what its status says, and no write of that
		// controller's follows the pause. At 25% of 4 the stable's status
		// says 3 pods once its fourth is gone, not when the scale-down was
		// observed; the canary's says 1 available once its pod is.
		reached = reported(o.Stable, 0) && reported(o.Canary, c)
	}
	traffic := fmt.Sprintf("%d%% (%d/%d pods serving)", weight, c, n)
	if !reached {
		traffic = fmt.Sprintf("going to %d%% (%d/%d pods)", weight, c, n)
	}
	status.Phase = PhaseProgressing
	judged, analysis := judgeStep(&plan, desired, o, k, serving == c && stableReady && !o.Paused)
	switch step := steps[k]; {
	case o.Paused:
		status.Phase, status.Message = PhasePaused, fmt.Sprintf("%s: %s; paused", where, traffic)
	case !reached:
		status.Message = fmt.Sprintf("%s: %s", where, traffic)
	case plan.Run != nil && plan.Run.Verdict == VerdictInconclusive && plan.Run.Of(stageOf(k), desired.Hash):
		status.Phase, status.Message = PhasePaused, fmt.Sprintf("%s: %s; %s; promote or abort", where, traffic, analysis)
	case step.Pause && step.Duration == 0:
		status.Phase, status.Message = PhasePaused, fmt.Sprintf("%s: %s; waiting for promote%s", where, traffic, also(analysis))
	case step.Pause && o.Now.Before(since.Add(step.Duration)):
		plan.RequeueAfter = sooner(plan.RequeueAfter, since.Add(step.Duration).Sub(o.Now))
		status.Message = fmt.Sprintf("%s: %s; paused until %s%s", where, traffic, since.Add(step.Duration).UTC().Format(time.TimeOnly), also(analysis))
	case !judged:
		status.Message = fmt.Sprintf("%s: %s; %s", where, traffic, analysis)
	case len(o.Analysis) > 0:
		// The step is done, and so is its run: that is recorded, and
		// reported, before the next step's run replaces it.
		plan.Step, plan.StepSince = k+1, o.Now
		status.Message = fmt.Sprintf("%s: %s", where, traffic)
		plan.RequeueAfter = time.Millisecond
	default:
		// The step is done: the next one is planned from here, in this
		// plan, so that one write records both. Planning the advance
		// alone and the next step after it cost a write of each
		// Deployment per step, and each such write costs the Deployment
		// controller two of its own: 100 workloads of 5 steps, 1,600
		// requests in the one controller every promotion waits for.
		next := o
		next.Step, next.StepSince, next.Run, next.Promote = k+1, o.Now, plan.Run, false
		advanced := planCanary(desired, recorded, next)
		advanced.Acted = plan.Acted
		return advanced
	}
	return plan
}

// stableAt reports whether the stable Deployment asks for want pods and
// has them: at least want available, or, for a stable that is failing on
// its own (see stableFailing), every pod beyond want gone and no rollout
// of its own under way. A step only ever scales the stable down, which
// makes no pod available; waiting for a failing stable's pods would block
// the canary, which is judged on its own pods, behind the very failure it
// may fix. With want = 3 and a stable of 4 pods none of which is Ready:
// once it runs 3, all updated, the step goes on.
//
// Where the Deployment controller has not caught up, the ReplicaSet
// controller's report is read (see replicaSetRuns): plimsoll wrote the
// count of the stable's ReplicaSet itself, so the step need not wait for
// the Deployment controller to observe the Deployment's; over 50
// canaries that wait was 0.3 to 8 s a step. The Deployment's status is
// read first since it costs no template comparison.
func stableAt(d *appsv1.Deployment, want int32, rsets []*appsv1.ReplicaSet) bool {
	if liveReplicas(d) != want {
		return false
	}
	if st := d.Status; caughtUp(d) &&
		(st.AvailableReplicas >= want || stableFailing(d) && st.Replicas <= want && st.UpdatedReplicas == st.Replicas) {
		return true
	}
	st, ok := replicaSetRuns(rsets, d)
	return ok && st.Replicas == want && st.AvailableReplicas >= want
}

// reported reports whether the Deployment controller has reported d as it
// is: it observed d's latest spec and counts that many pods, all of d's
// template, at least available of them available. A nil d is not.
func reported(d *appsv1.Deployment, available int32) bool {
	if d == nil || !caughtUp(d) {
		return false
	}
	st, want := d.Status, liveReplicas(d)
	return st.Replicas == want && st.UpdatedReplicas == want && st.AvailableReplicas >= available
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

// waitsForPromote reports whether step i of steps is a pause without a
// duration.
func waitsForPromote(steps []Step, i int) bool {
	return i < len(steps) && steps[i].Pause && steps[i].Duration == 0
}

// stableFailing reports whether the stable Deployment fails on its own: it
// ran out of its progress deadline (a revision that failed and could not
// be rolled back), or not one of its pods is Ready (an image that cannot
// be pulled, a crash loop). A stable with some pods Ready and others
// starting is not failing: a step waits for them.
func stableFailing(d *appsv1.Deployment) bool {
	return deadlineExceeded(d) || (liveReplicas(d) > 0 && d.Status.ReadyReplicas == 0)
}
