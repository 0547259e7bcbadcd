package strategies

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// The canary's steps, planned once the stable serves, the Service selects
// the serving pods and the canary runs Git's template.

// planCanarySteps plans the step the canary is at, k, after a promote
// command moved it on: a promote during a pause step moves to the next
// step; during a weight step it promotes fully.
func planCanarySteps(plan CanaryPlan, desired CanaryDesired, recorded Status, o CanaryObserved, n int32, revision string) CanaryPlan {
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
		return planCanaryFull(plan, desired, o, n, revision)
	}
	return planCanaryStep(plan, desired, recorded, o, n, k, revision)
}

// planCanaryFull plans the end of the steps: the stable Deployment takes
// the canary's template at N, by a hand-over of the canary's pods where
// the workload hands over (see handsOver), once every stable pod serves
// again for an autoscaled one. The pause command holds it before.
func planCanaryFull(plan CanaryPlan, desired CanaryDesired, o CanaryObserved, n int32, revision string) CanaryPlan {
	status := &plan.Status
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

// planCanaryStep plans step k: the canary's pods for its weight, labelled
// serving as they become Ready, the stable down to its share, and the
// step's pause and analysis once its traffic is in place.
func planCanaryStep(plan CanaryPlan, desired CanaryDesired, recorded Status, o CanaryObserved, n int32, k int, revision string) CanaryPlan {
	status, steps := &plan.Status, desired.Steps
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

// waitsForPromote reports whether step i of steps is a pause without a
// duration.
func waitsForPromote(steps []Step, i int) bool {
	return i < len(steps) && steps[i].Pause && steps[i].Duration == 0
}
