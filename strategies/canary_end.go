package strategies

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
)

// The two ends of a canary revision: promoted (the stable Deployment runs
// Git's template) and refused (Git's template is the failed one).

// planCanaryPromoted plans the step once stable runs the Git template:
// stable at N; once it is fully available, every canary pod loses the
// label and the canary scales to zero.
//
// The message while the stable is replaced does not count its updated
// pods: each status written is a write of both Deployments, and the
// Deployment controller answers each with two writes of its own (it
// copies the annotations to the new ReplicaSet, and observes the new
// generation). Counting 0/4, 1/4, 3/4 and 4/4 cost 12 writes per workload,
// all of them in the one controller that every workload's promotion waits
// for; `kubectl get deploy` counts them anyway.
//
// The promotion surges (see StablePromote): under Git's 25%/25% the
// Deployment controller replaced 4 pods in three or four rounds, each a
// wait in its queue behind every other workload's; surged, it is two (up,
// then down). Git's strategy comes back (StableSettle) in the plan that
// takes the canary away.
//
// The workload is Healthy once the canary's pods are gone, as `kubectl
// rollout status` would say: calling it Healthy while they ended saved 20
// s a workload with 50 rolling at once, but left a user who lists the
// pods of a Healthy workload looking at old ones.
func planCanaryPromoted(plan CanaryPlan, desired CanaryDesired, recorded Status, o CanaryObserved, n int32, revision string) CanaryPlan {
	plan.StableReplicas = stableCount(desired, n)
	if desired.Autoscaled {
		serveEveryStable(&plan, o.StablePods)
	}
	status := &plan.Status
	if !servesAny(o.Pods) {
		// The stable Deployment alone runs the revision: a first revision
		// (created on the stable, there was nothing to compare it with),
		// or one whose canary has gone. It fails at its progress deadline
		// as a rolling or blue-green revision does, and with nothing
		// earlier to go back to it stays Degraded where it is.
		if failedNow(o.Stable, o.StablePods, desired.Hash, recorded, o.Now) {
			status.FailedHash, status.Phase = desired.Hash, PhaseDegraded
			status.Message = fmt.Sprintf("revision %d failed on the stable Deployment: %s", plan.Status.Revision, deadlineReason(o.Stable))
			return plan
		}
		plan.RequeueAfter = sooner(plan.RequeueAfter, untilStalled(o.Stable, o.StablePods, desired.Hash, recorded, o.Now))
	}
	if !fullyAvailable(o.Stable, n) || !rolloutComplete(o.Stable) {
		status.Phase = PhaseProgressing
		status.Message = revision + ": promoting the stable Deployment"
		return plan
	}
	if o.Canary != nil {
		plan.CanaryReplicas = new(int32)
	}
	plan.Step, plan.StepSince = 0, time.Time{}
	if o.Canary != nil && !equality.Semantic.DeepEqual(o.Stable.Spec.Strategy, o.Canary.Spec.Strategy) {
		plan.Stable = StableSettle
	}
	// The canary pods that serve leave the Service, and those a hand-over
	// left without an owner, which the stable's ReplicaSet did not adopt
	// (it runs its own now), go: both once the Service keeps N ready
	// endpoints without them (see spareable).
	serving, orphaned := servingNames(o.Pods), orphans(o.Pods)
	if spareable(slices.Concat(serving, orphaned), o.ServiceReady, servingKept(desired, o, n)) != nil {
		plan.Unlabel, plan.DeletePods = serving, orphaned
	}
	if len(serving) > 0 || plan.Stable == StableSettle || !runsNone(o.Canary, o.ReplicaSets, o.Pods) || len(orphaned) > 0 {
		status.Phase, status.Message = PhaseProgressing, revision+": promoted; scaling the canary down"
		return plan
	}
	if historyPending(o.ReplicaSets, o.Stable) {
		// 6. of a hand-over: its history is the stable's again before the
		// revision is Healthy, so that `kubectl rollout undo` has it.
		status.Phase, status.Message = PhaseProgressing, handOverMessage(revision)
		return plan
	}
	status.Phase, status.Message = PhaseHealthy, fmt.Sprintf("%s: %s", revision, availability(o.Stable, n))
	return plan
}

// planCanaryRefused plans the step while the Git template is the failed
// one: no canary pod serves, the canary is at zero, stable at N. A revision
// failed or aborted in this plan records its own revision and hash; one
// refused by DecideRevision keeps the recorded ones.
//
// With auto-rollback off, a failure whose canary still asks for pods is
// held as it is (see heldFailure): labels, replicas and step stay, as in
// the plan that recorded the failure, until an abort undoes it. why says
// what failed the revision in this plan, "" when it failed before.
func planCanaryRefused(plan CanaryPlan, desired CanaryDesired, recorded Status, o CanaryObserved, n int32, why string) CanaryPlan {
	failed := plan.Status.FailedHash
	if failed == recorded.FailedHash && recorded.Hash != "" {
		plan.Status.Hash = recorded.Hash
	}
	plan.Status.Phase = PhaseDegraded
	if heldFailure(desired.AutoRollback, o.Abort, o.Canary, failed) {
		plan.Status.Message = keepDegraded(recorded, "",
			fmt.Sprintf("template %s failed on the canary; auto-rollback is off; abort to undo it", failed))
		return plan
	}
	if o.Abort && why == "" && heldFailure(desired.AutoRollback, false, o.Canary, failed) {
		plan.Acted = fmt.Sprintf("aborted revision %d", plan.Status.Revision)
		why = plan.Acted
	}
	plan.Step, plan.StepSince = 0, time.Time{}
	zero := int32(0)
	plan.CanaryReplicas, plan.StableReplicas = &zero, stableCount(desired, n)
	if desired.Autoscaled {
		serveEveryStable(&plan, o.StablePods)
	}
	// Pods left without an owner (a hand-over undone by hand) serve until
	// the stable Deployment serves in full again, then go.
	stableUp := fullyAvailable(o.Stable, n)
	var canaryServing, orphansServing []string
	for _, p := range o.Pods {
		switch {
		case p.Serving && !p.Orphan:
			canaryServing = append(canaryServing, p.Name)
		case p.Serving && stableUp:
			orphansServing = append(orphansServing, p.Name)
		}
	}
	// The failed canary's pods leave the Service at once, unless they are
	// every ready endpoint it has (a stable that never became available,
	// a first revision that failed): a rollback never takes a Service to
	// 0. They serve then, the canary kept at its count, until a stable
	// pod is ready. With N = 4 at 25% and the stable's 3 pods not Ready,
	// the canary's one pod serves on while the stable comes back to 4.
	kept := !sparedAll(canaryServing, o.ServiceReady)
	if kept {
		plan.CanaryReplicas = nil
	} else {
		plan.Unlabel = canaryServing
	}
	if o.Canary != nil && o.Canary.Spec.Paused && !IdleCanary(o.Canary) {
		// A canary Deployment paused by a hand-over works again.
		plan.CanaryPaused = new(bool)
	}
	if orphaned := orphans(o.Pods); stableUp && spareable(slices.Concat(orphansServing, orphaned), o.ServiceReady, servingKept(desired, o, n)) != nil {
		plan.Unlabel, plan.DeletePods = append(plan.Unlabel, orphansServing...), orphaned
	}
	message := fmt.Sprintf("template %s failed; stable serves; not started again until Git changes it or a retry", failed)
	switch {
	case kept:
		message = keptMessage(failed)
	case o.Stable != nil && hashOf(o.Stable) == failed:
		message = fmt.Sprintf("template %s failed and runs on the stable Deployment", failed)
	}
	if before, ok := strings.CutSuffix(recorded.Message, keptMessage(failed)); ok && !kept {
		// The canary's pods no longer hold the Service up: the line that
		// said so is not kept.
		recorded.Message = before + message
	}
	plan.Status.Message = keepDegraded(recorded, why, message)
	return plan
}

// keptMessage is the status line of a failed revision whose canary pods
// still serve as the Service's only ready endpoints (see
// planCanaryRefused).
func keptMessage(failed string) string {
	return fmt.Sprintf("template %s failed; its canary pods serve until a stable pod is ready, the Service having no other ready endpoint", failed)
}

// servingKept is how many ready endpoints the canary's Service is to keep
// without the canary's pods: the workload's count n, less the stable pods
// taken out of it by hand (Ready, not being deleted, without the serving
// label the stable's template gives them), and never fewer than one.
// Those are the user's to put back: with N = 4 and one stable pod out by
// hand, the stable gives the Service 3 ready endpoints at most, and the
// canary's pods kept serving until it gave 4 held the promotion back for
// good. An autoscaled stable has no pod out by hand: its labels are the
// controller's (see serveStable), and one taken out is labelled again.
func servingKept(desired CanaryDesired, o CanaryObserved, n int32) int32 {
	if desired.Autoscaled || !o.ServiceSelectsServing {
		return n
	}
	var out int32
	for _, p := range o.StablePods {
		if p.Ready && !p.Deleting && !p.Serving {
			out++
		}
	}
	return max(n-out, 1)
}

// sparedAll reports whether the Service keeps a ready endpoint without
// pods, or none of them is one of its ready endpoints anyway.
func sparedAll(pods, ready []string) bool {
	return !slices.ContainsFunc(pods, func(p string) bool { return slices.Contains(ready, p) }) || spareable(pods, ready, 1) != nil
}
