package strategies

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// Desired is what Git asks of a workload, read by the controller from the
// Deployment of the synced commit and its annotations.
type Desired struct {
	// Hash is the TemplateHash of the Git pod template.
	Hash string
	// Replicas is spec.replicas in Git; nil leaves the count to whatever
	// scales the live Deployment (an autoscaler), and the live count is
	// the desired one.
	Replicas *int32
	// AutoRollback is plimsoll.dev/auto-rollback: true unless "false".
	AutoRollback bool
	// Commit is the Git commit the desired state came from.
	Commit string
}

// RollingObserved is the live state of a rolling workload, as the
// controller's informers see it.
type RollingObserved struct {
	// Deployment is the live Deployment <name>, nil before it exists.
	Deployment *appsv1.Deployment
	// ReplicaSets are the ReplicaSets of the Deployment; those it does not
	// control are ignored.
	ReplicaSets []*appsv1.ReplicaSet
	// Analysis are the metrics of the workload's analyses; none when it
	// has no analysis.
	Analysis []MetricSpec
	// Run is the recorded analysis run, with this reconcile's measurements
	// folded in; nil when none was recorded.
	Run *AnalysisRun
	// Pods are the pods of the live template; only a Degraded workload
	// waiting for progress reads them (see PlanRolling, step 4).
	Pods []Pod
	// Now is the time of planning.
	Now time.Time
}

// TemplateSource says which pod template the live Deployment carries once
// a plan is written: TemplateGit, TemplateLive or TemplateRollback.
type TemplateSource int

const (
	// TemplateGit: write the Git Deployment with its own template
	// (stamped, see Stamp). This creates the Deployment when it does not
	// exist.
	TemplateGit TemplateSource = iota + 1
	// TemplateLive: write the Git Deployment (replicas, metadata) but keep
	// the live template, because the Git one is refused or has just failed.
	// With no live Deployment, create none.
	TemplateLive
	// TemplateRollback: write the Git Deployment with Rollback.Template in
	// place of the Git template.
	TemplateRollback
)

// String returns the source's name, for messages and test output.
func (s TemplateSource) String() string {
	switch s {
	case TemplateGit:
		return "git"
	case TemplateLive:
		return "live"
	case TemplateRollback:
		return "rollback"
	}
	return "unknown"
}

// RollingPlan is what PlanRolling decided: what to write into the live
// Deployment and what to record.
type RollingPlan struct {
	// Status is the status to record in the annotations. When it equals
	// the recorded one, there is nothing to record.
	Status Status
	// Template says which template the written Deployment carries.
	Template TemplateSource
	// Rollback is set when, and only when, Template is TemplateRollback.
	Rollback *Rollback
	// Progress is where the live rollout stands; zero without a live
	// Deployment.
	Progress Progress
	// Run is the analysis run to record.
	Run *AnalysisRun
	// RequeueAfter, when positive, is when to plan again although nothing
	// changes meanwhile (the verification's next measurement).
	RequeueAfter time.Duration
}

// PlanRolling plans one step of a rolling workload from what Git wants
// (desired), what was recorded in the status annotations (recorded, see
// ReadStatus) and what runs (observed). It reads nothing else, so a
// controller killed at any point and restarted plans the same step again.
//
// The controller executes the plan in one write of the Deployment: the Git
// Deployment, with the template that plan.Template names and with
// plan.Status.Annotations() as its status annotations, skipped when nothing
// differs from the live object. If template and status must ever be written
// apart, write the status first: a recorded failed hash with the failing
// template still live plans the rollback again, while a restored template
// without the failed hash recorded would be rolled forward again.
//
// In order, the first that applies:
//
//  1. The Git template is the failed one (DecideRevision refuses it): it is
//     not started; the live template stays; Degraded. If the failed
//     template is still live (the rollback was not written yet) and
//     auto-rollback is on, the rollback is planned again.
//  2. There is no live Deployment: create it from Git; Progressing.
//  3. The Git template is not live yet (a new revision, a retry after a
//     rollback, or drift): write it. If the Deployment still reports
//     ProgressDeadlineExceeded from before, Degraded until it makes
//     progress, so that the old condition, which outlives template
//     changes, is not taken for a failure of the new template. Else
//     Paused when the Deployment is paused, Progressing when not.
//  4. The recorded phase is Degraded and the Deployment has not made
//     progress since (deadline still exceeded, or the latest change not yet
//     observed): stay Degraded and wait. The exceeded deadline may be the
//     one of the failure a retry answered, and the Deployment controller
//     never lifts it when the retried template goes back onto a
//     ReplicaSet whose pods still run: a pod of the live template that
//     stays not Ready for a whole deadline after the controller last
//     wrote the condition fails the revision again, as in step 7.
//  5. The Deployment is paused: Paused.
//  6. The Deployment controller has not observed the latest generation:
//     the recorded phase and message stay; the status it reports is about
//     an older spec, and our own status writes bump the generation too.
//  7. ProgressDeadlineExceeded: the revision failed. Its hash is recorded
//     as failed; Degraded. With auto-rollback, the stable template (or,
//     without one, the previous; see rollbackTarget) is restored (see
//     Rollback); with none to restore, or auto-rollback off,
//     the failed template stays live.
//  8. The live replica count is not the desired one: Progressing until the
//     Git count is written.
//  9. Every pod updated, ready and available, none old, and the Deployment
//     controller reports the rollout complete: Healthy, and the hash is
//     recorded as the stable one, which a later rollback restores.
//  10. Otherwise: Progressing, "rolling out revision 4 (commit def5678)",
//     with a warning when fewer pods are available than the strategy
//     keeps (see Progress.message); the pod counts are left to the
//     Deployment's status, so that they cost no write.
//
// A workload with analyses has each revision that has a previous template
// to roll back to verified once it is complete (step 9): the verification
// run starts then, and the workload is Healthy only once it passed. A
// failed run fails the revision as step 7 does (rolled back with
// auto-rollback); an inconclusive one pauses it until a promote accepts
// it or an abort fails it.
func PlanRolling(desired Desired, recorded Status, observed RollingObserved) RollingPlan {
	decision := DecideRevision(recorded, desired.Hash)
	if decision.Action == RevisionRefused {
		plan := planRefused(desired, recorded, observed)
		plan.Run = observed.Run
		return plan
	}
	plan := RollingPlan{
		Status: Status{
			Revision:   decision.Revision,
			Hash:       desired.Hash,
			FailedHash: recorded.FailedHash,
			StableHash: recorded.StableHash,
			Commit:     desired.Commit,
		},
		Template: TemplateGit,
		Run:      observed.Run,
	}
	revision := describeRevision(decision.Revision, desired.Commit)
	// One line from the first write to the last pod, so that the
	// Progressing status does not change while pods come up.
	rollingOut := "rolling out " + revision
	live := observed.Deployment
	if live == nil {
		plan.Status.Phase, plan.Status.Message = PhaseProgressing, rollingOut
		return plan
	}

	plan.Progress = measure(live, desired)
	p := plan.Progress
	isLive := podtemplate.LiveHash(live.Spec.Template) == desired.Hash
	timedOut := deadlineExceeded(live)
	caughtUp := live.Status.ObservedGeneration >= live.Generation
	waiting := revision + ": waiting for the Deployment to make progress after its progress deadline was exceeded"

	switch {
	case !isLive && timedOut:
		plan.Status.Phase, plan.Status.Message = PhaseDegraded, waiting
	case !isLive && live.Spec.Paused:
		plan.Status.Phase, plan.Status.Message = PhasePaused, "paused before rolling out "+revision
	case !isLive:
		plan.Status.Phase, plan.Status.Message = PhaseProgressing, rollingOut
	case recorded.Phase == PhaseDegraded && (timedOut || !caughtUp):
		if at, ok := stallFor(live, observed.Pods, recorded); ok && caughtUp {
			if !observed.Now.Before(at) {
				return planFailure(plan, desired, recorded, observed, deadlineReason(live))
			}
			plan.RequeueAfter = at.Sub(observed.Now) // a stuck pod changes nothing a watch sees
		}
		plan.Status.Phase, plan.Status.Message = PhaseDegraded, waiting
	case live.Spec.Paused:
		plan.Status.Phase = PhasePaused
		plan.Status.Message = fmt.Sprintf("paused at %d/%d updated", p.Updated, p.Replicas)
	case !caughtUp:
		// The Deployment controller has not observed the latest write, so
		// its counts describe an older spec. Every status write is such a
		// write (on a Deployment, a change of annotations bumps the
		// generation too), so keep what is recorded instead of reporting
		// the lag: a report would be one more write, one more generation,
		// and the lag again.
		plan.Status.Phase, plan.Status.Message = recorded.Phase, recorded.Message
		if plan.Status.Phase == "" {
			plan.Status.Phase, plan.Status.Message = PhaseProgressing, rollingOut
		}
	case timedOut:
		return planFailure(plan, desired, recorded, observed, deadlineReason(live))
	case analysisFailure(observed.Analysis, observed.Run, desired.Hash) != "":
		return planFailure(plan, desired, recorded, observed, observed.Run.Stage+": "+analysisFailure(observed.Analysis, observed.Run, desired.Hash))
	case liveReplicas(live) != p.Replicas:
		plan.Status.Phase = PhaseProgressing
		plan.Status.Message = fmt.Sprintf("scaling from %d to %d replicas", liveReplicas(live), p.Replicas)
	case p.complete() && rolloutComplete(live):
		available := fmt.Sprintf("%d/%d available", p.Available, p.Replicas)
		plan.Status.Phase, plan.Status.Message = PhaseHealthy, available
		if len(observed.Analysis) == 0 || rollbackTarget(live, observed.ReplicaSets, recorded.StableHash, desired.Hash, recorded.FailedHash) == nil {
			break // nothing to verify against, or nothing to roll back to
		}
		j := judge(&plan.Run, observed.Analysis, StageVerification, desired.Hash, observed.Now, true)
		plan.RequeueAfter = j.requeue
		switch {
		case j.inconclusive:
			plan.Status.Phase, plan.Status.Message = PhasePaused, fmt.Sprintf("%s; %s; promote or abort", available, j.summary)
		case !j.judged:
			plan.Status.Phase, plan.Status.Message = PhaseProgressing, fmt.Sprintf("%s; verifying: %s", available, j.summary)
		}
	default:
		plan.Status.Phase, plan.Status.Message = PhaseProgressing, p.message(rollingOut)
	}
	if plan.Status.Phase == PhaseHealthy {
		plan.Status.StableHash = desired.Hash
	}
	return plan
}

// planFailure plans the step after the live revision, the Git one, failed
// (ran out of its progress deadline, or failed its verification): record its hash as failed, and restore the
// previous template when auto-rollback is on and there is one.
func planFailure(plan RollingPlan, desired Desired, recorded Status, observed RollingObserved, reason string) RollingPlan {
	live := observed.Deployment
	plan.Status.Phase = PhaseDegraded
	plan.Status.FailedHash = desired.Hash
	plan.Template = TemplateLive
	switch target := rollbackTarget(live, observed.ReplicaSets, recorded.StableHash, desired.Hash, recorded.FailedHash); {
	case !desired.AutoRollback:
		plan.Status.Message = fmt.Sprintf("revision %d failed: %s; auto-rollback is off", plan.Status.Revision, reason)
	case target == nil:
		plan.Status.Message = fmt.Sprintf("revision %d failed: %s; no previous template to roll back to", plan.Status.Revision, reason)
	default:
		rb := newRollback(target, desired.Hash)
		failed := describeRevision(plan.Status.Revision, desired.Commit)
		plan.Template, plan.Rollback, plan.Status.Message = TemplateRollback, &rb, rb.message(failed, reason)
	}
	return plan
}

// planRefused plans the step while Git asks for the template that failed:
// the recorded revision and hash stay, the live template stays, and the
// workload is Degraded until Git changes or a retry. The recorded message
// stays when the workload was already Degraded, so that planning again
// changes nothing. If the failed template is still live, the failure was
// recorded but not acted on: the rollback is planned (again) when
// auto-rollback is on.
func planRefused(desired Desired, recorded Status, observed RollingObserved) RollingPlan {
	plan := RollingPlan{Status: recorded, Template: TemplateLive}
	plan.Status.Phase = PhaseDegraded
	plan.Status.Commit = desired.Commit
	failed := recorded.FailedHash
	keep := func(message string) string {
		if recorded.Phase == PhaseDegraded && recorded.Message != "" {
			return recorded.Message
		}
		return message
	}
	refused := fmt.Sprintf("template %s failed; not started again until Git changes it or a retry", failed)

	live := observed.Deployment
	if live == nil {
		plan.Status.Message = keep(refused)
		return plan
	}
	plan.Progress = measure(live, desired)
	if podtemplate.LiveHash(live.Spec.Template) != failed {
		plan.Status.Message = keep(refused)
		return plan
	}

	reason := "its template is marked failed"
	if deadlineExceeded(live) {
		reason = deadlineReason(live)
	}
	switch target := rollbackTarget(live, observed.ReplicaSets, recorded.StableHash, failed); {
	case !desired.AutoRollback:
		plan.Status.Message = keep(fmt.Sprintf("revision %d failed: %s; auto-rollback is off", recorded.Revision, reason))
	case target == nil:
		plan.Status.Message = keep(fmt.Sprintf("revision %d failed: %s; no previous template to roll back to", recorded.Revision, reason))
	default:
		rb := newRollback(target, failed)
		what := describeRevision(recorded.Revision, recorded.Commit)
		plan.Template, plan.Rollback, plan.Status.Message = TemplateRollback, &rb, rb.message(what, reason)
	}
	return plan
}
