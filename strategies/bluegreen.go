package strategies

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"plimsoll.dev/plimsoll/contract"
)

// BlueGreenDesired is what Git asks of a blue-green workload.
type BlueGreenDesired struct {
	Desired
	// AutoPromote is plimsoll.dev/auto-promote: true unless "false". When
	// false, a ready revision waits for a promote command.
	AutoPromote bool
	// ScaleDownDelay is plimsoll.dev/scale-down-delay: how long the old
	// color stays at full size after the swap.
	ScaleDownDelay time.Duration
}

// BlueGreenObserved is the live state of a blue-green workload and the
// controller state recorded on it.
type BlueGreenObserved struct {
	// Blue and Green are the Deployments <name>-blue and <name>-green, nil
	// when absent.
	Blue, Green *appsv1.Deployment
	// Legacy is the Deployment <name>, nil when there is none: the one
	// the workload ran before it switched to blue-green, unless it was
	// written for blue-green itself (see legacyOf). Until the first swap,
	// the active Service (whose selector has no color yet) sends traffic
	// to it.
	Legacy *appsv1.Deployment
	// Active is the color in the active Service's selector; "" when the
	// selector has no color yet. Serving is the color whose role is
	// active (see workload.ActiveColor), "" for none.
	Active, Serving Color
	// Preview: the workload has a preview Service; PreviewColor is the
	// color its selector holds, "" for none.
	Preview      bool
	PreviewColor Color
	// ScaleDownAt is when the color that lost traffic scales to zero;
	// zero when no scale-down is pending.
	ScaleDownAt time.Time
	// Pods are the pods of each color.
	Pods map[Color][]Pod
	// ReplicaSets are the workload's ReplicaSets: a color scaled to 0
	// runs none once those it controls observed the count and its pods
	// are gone (see runsNone).
	ReplicaSets []*appsv1.ReplicaSet
	// ActiveEndpoints are the pods the active Service's EndpointSlices
	// hold as ready (see ReadyPods).
	ActiveEndpoints []string
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
	// Autoscaled is whether a HorizontalPodAutoscaler scales the
	// workload; ScaleTarget is the suffix of the Deployment it targets:
	// "" for <name> (before the first swap), or a color's.
	Autoscaled  bool
	ScaleTarget string
	// Now is the time of planning.
	Now time.Time
}

// Deployment returns the Deployment of color c.
func (o BlueGreenObserved) Deployment(c Color) *appsv1.Deployment {
	if c == ColorGreen {
		return o.Green
	}
	return o.Blue
}

// BlueGreenPlan is what PlanBlueGreen decided: its Actions, in the order
// to execute them (see sequenceBlueGreen), and the decisions they come
// from.
type BlueGreenPlan struct {
	// Actions are the writes of the plan, in order.
	Actions []Action
	// Status is the status to record on every Deployment of the workload.
	Status Status
	// Replicas is the replica count to write into each color's
	// Deployment; a color without an entry is left as it is.
	Replicas map[Color]int32
	// LegacyReplicas, when set, is the count to write into Legacy.
	LegacyReplicas *int32
	// Active is the color the active Service must select; Preview the one
	// the preview Service must select. "" leaves the Service as it is.
	Active, Preview Color
	// Roles is the plimsoll.dev/role of each color's Deployment.
	Roles map[Color]Role
	// ScaleDownAt is the scale-down time to record; zero records none.
	ScaleDownAt time.Time
	// RequeueAfter, when positive, is when to plan again although nothing
	// changes meanwhile (the scale-down delay running out).
	RequeueAfter time.Duration
	// Acted says what a pending command did, for the command's Event; ""
	// when no command was pending or it did nothing.
	Acted string
	// Pending is true for a promote that came before the new color was
	// ready: the caller leaves the command in place, and the swap happens
	// once the color is ready.
	Pending bool
	// Run is the analysis run to record.
	Run *AnalysisRun
}

// PlanBlueGreen plans one step of a blue-green workload from what Git wants
// (desired), what is recorded (recorded) and what runs (observed). It reads
// nothing else, so a controller restarted at any point plans the same step
// again. While the Deployment controller has not observed a Deployment's
// latest spec, the recorded phase and message stand (see
// keepWhileLagging).
//
// The color carrying the Git template is the target T; the color the
// active Service selects is A (the active color), and O is the other one.
// With N = 4 replicas and A = blue, a new revision goes:
//
//	green gets the new template (written by the caller), scaled to 4
//	green 4/4 available, auto-promote (or promote): Active = green; blue
//	    stays at 4 until now + scale-down-delay
//	the delay runs out: blue to 0; Healthy once blue runs no pod
//
// The active Service never has fewer than 4 ready endpoints: it selects
// blue until green has 4 available pods, then green, and blue is scaled
// down only after the swap. The caller writes the swap before any scale-down
// that follows from it.
//
// A revision refused by its failed hash (after a failure, an abort, or
// while Git still asks for it) is undone: when the active color runs it,
// the other color goes back to N and, once available, takes the traffic
// back; the failed color scales to zero. With auto-rollback off, a color
// that failed its progress deadline before taking traffic is held at N
// (Degraded) until an abort, a retry or a Git change.
//
// A workload with analyses, once something serves, has each revision
// judged twice: before the swap (pre-promotion, started once the target
// is fully available; the swap waits for it to pass) and after it
// (post-promotion, started with the swap; the old color stays at N until
// it passes, whatever its scale-down time). A failed run fails the
// revision: before the swap the target scales to zero and traffic stays;
// after it, traffic swaps back to the old color at once. An inconclusive
// one pauses until a promote (which accepts it) or an abort.
func PlanBlueGreen(desired BlueGreenDesired, recorded Status, o BlueGreenObserved) BlueGreenPlan {
	o.Legacy = legacyOf(o.Legacy)
	plan := planBlueGreen(desired, recorded, o)
	// A promote that comes before the new color is ready waits for it.
	target := TargetColor(desired.Hash, o)
	plan.Pending = o.Promote && plan.Acted == "" && target != o.Active && plan.Status.FailedHash != desired.Hash
	if target != o.Active && plan.Status.FailedHash != desired.Hash {
		plan.RequeueAfter = sooner(plan.RequeueAfter, untilStalled(o.Deployment(target), o.Pods[target], desired.Hash, recorded, o.Now))
	}
	keepWhileLagging(&plan.Status, recorded, o.Blue, o.Green, o.Legacy)
	actions, waiting := sequenceBlueGreen(plan, o, replicasOf(desired.Desired))
	markBlueGreenRepairs(actions, o)
	plan.Actions = actions
	if waiting {
		plan.RequeueAfter = sooner(plan.RequeueAfter, waitForEndpoints)
	}
	return plan
}

// planBlueGreen is PlanBlueGreen but for what applies to every plan.
func planBlueGreen(desired BlueGreenDesired, recorded Status, o BlueGreenObserved) BlueGreenPlan {
	n := replicasOf(desired.Desired)
	decision := DecideRevision(recorded, desired.Hash)
	plan := BlueGreenPlan{
		Status:      startStatus(desired.Desired, recorded, decision),
		Replicas:    map[Color]int32{},
		Roles:       map[Color]Role{},
		ScaleDownAt: o.ScaleDownAt,
		Run:         o.Run,
	}
	target, active := TargetColor(desired.Hash, o), o.Active
	inFlight := target != active || (!o.ScaleDownAt.IsZero() && !scaledDown(o.Deployment(active.Other())))
	if o.Abort && decision.Action != RevisionRefused && inFlight {
		plan.Status.FailedHash = desired.Hash
		plan.Acted = fmt.Sprintf("aborted revision %d", decision.Revision)
		decision.Action = RevisionRefused
	}
	// A failed post-promotion run swaps back while the old color is kept
	// for it, whether or not a scale-down time was recorded: without one
	// (lost to a write that failed after the swap) the revision would
	// read as settled, and the failure would sit in the message while
	// traffic stayed on the failed color.
	keptForRun := active != "" && o.Run.Of(StagePostPromotion, desired.Hash) && !scaledDown(o.Deployment(active.Other()))
	if reason := analysisFailure(o.Analysis, o.Run, desired.Hash); reason != "" && decision.Action != RevisionRefused && (inFlight || keptForRun) {
		plan.Status.FailedHash = desired.Hash
		plan = planBlueGreenRefused(plan, desired, recorded, o, n)
		then := strings.TrimPrefix(plan.Status.Message, fmt.Sprintf("revision %d failed; ", decision.Revision))
		plan.Status.Message = fmt.Sprintf("revision %d failed %s: %s; %s", decision.Revision, o.Run.Stage, reason, then)
		return plan
	}
	if decision.Action == RevisionRefused {
		return planBlueGreenRefused(plan, desired, recorded, o, n)
	}
	revision := describeRevision(decision.Revision, desired.Commit)
	plan.Preview = target
	if active != "" {
		plan.Active = active
	}
	// Analyses judge a revision once something serves to compare it with.
	analysed := len(o.Analysis) > 0 && (active != "" || o.Legacy != nil)
	if target == active {
		settled := planBlueGreenSettle(plan, desired, o, n, revision, analysed)
		if settled.Acted == "" {
			// An abort in flight swapped back (Acted says so); anything
			// else comes too late, within the scale-down delay too.
			settled.Acted = lateCommand(o.Promote, o.Abort, decision.Revision, "is promoted")
		}
		return settled
	}
	return planBlueGreenOut(plan, desired, recorded, o, decision, target, analysed)
}

// planBlueGreenOut plans a revision going out on the target color: both
// colors at N, the target in the preview role, judged by its
// pre-promotion analysis once it runs, and swapped into the active
// Service when it is ready and promoted (by command or by autoPromote).
func planBlueGreenOut(plan BlueGreenPlan, desired BlueGreenDesired, recorded Status, o BlueGreenObserved, decision RevisionDecision, target Color, analysed bool) BlueGreenPlan {
	n, active := replicasOf(desired.Desired), o.Active
	revision := describeRevision(decision.Revision, desired.Commit)
	dt := o.Deployment(target)
	plan.Replicas[target] = n
	if active != "" {
		plan.Replicas[active] = n
		plan.Roles[active] = RoleActive
	}
	plan.Roles[target] = RolePreview
	plan.ScaleDownAt = time.Time{} // a pending scale-down of the target color is moot now
	status := &plan.Status
	pre := judgement{judged: true}
	if analysed && hashOf(dt) == desired.Hash {
		ready := runsAvailable(dt, n, o.ReplicaSets, o.Pods[target]) && !o.Paused && !failedNow(dt, o.Pods[target], desired.Hash, recorded, o.Now)
		pre = judge(&plan.Run, o.Analysis, StagePrePromotion, desired.Hash, o.Now, ready)
		plan.RequeueAfter = sooner(plan.RequeueAfter, pre.requeue)
		if o.Promote && pre.inconclusive {
			pre.judged = true // a promote decides an inconclusive run
		}
	}
	switch {
	case hashOf(dt) != desired.Hash:
		status.Phase, status.Message = PhaseProgressing, fmt.Sprintf("%s: writing the template to %s", revision, target)
	case failedNow(dt, o.Pods[target], desired.Hash, recorded, o.Now):
		status.FailedHash, status.Phase = desired.Hash, PhaseDegraded
		reason := deadlineReason(dt)
		switch {
		case !desired.AutoRollback:
			status.Message = fmt.Sprintf("revision %d failed on %s: %s; auto-rollback is off", decision.Revision, target, reason)
		default:
			plan.Replicas[target] = 0
			status.Message = fmt.Sprintf("revision %d failed on %s: %s; %s", decision.Revision, target, reason, trafficStays(active))
		}
	case recorded.Phase == PhaseDegraded && dt != nil && deadlineExceeded(dt):
		status.Phase, status.Message = PhaseDegraded, revision+": waiting for "+string(target)+" to make progress after its progress deadline was exceeded"
	case !runsAvailable(dt, n, o.ReplicaSets, o.Pods[target]):
		status.Phase, status.Message = PhaseProgressing, fmt.Sprintf("%s on %s: %s", revision, target, waitingFor(n))
		if o.Paused {
			status.Phase = PhasePaused
		}
	case o.Paused:
		status.Phase, status.Message = PhasePaused, fmt.Sprintf("%s ready on %s; paused", revision, target)
	case !pre.judged && pre.inconclusive:
		status.Phase, status.Message = PhasePaused, fmt.Sprintf("%s ready on %s; %s; promote or abort", revision, target, pre.summary)
	case !pre.judged:
		status.Phase, status.Message = PhaseProgressing, fmt.Sprintf("%s ready on %s; %s", revision, target, pre.summary)
	case !desired.AutoPromote && !o.Promote && (active != "" || o.Legacy != nil):
		// Held for promote; a first revision, with nothing serving yet, is not.
		status.Phase, status.Message = PhasePaused, fmt.Sprintf("%s ready on %s; waiting for promote", revision, target)
	default:
		// Swap: the active Service selects the target in one patch; the
		// old color keeps its pods for the scale-down delay.
		plan.Active, plan.Roles[target] = target, RoleActive
		if o.Promote {
			plan.Acted = "promoted " + string(target)
		}
		status.Phase = PhaseProgressing
		status.Message = fmt.Sprintf("%s serves from %s", revision, target)
		if old := target.Other(); o.Deployment(old) != nil || o.Legacy != nil {
			plan.Roles[old] = RoleIdle
			plan.ScaleDownAt = o.Now.Add(desired.ScaleDownDelay)
			plan.RequeueAfter = desired.ScaleDownDelay
			status.Message += "; " + scaleDownNote(old, o, plan.ScaleDownAt)
		}
		if analysed {
			// The swap starts the post-promotion run, recorded with it.
			post := judge(&plan.Run, o.Analysis, StagePostPromotion, desired.Hash, o.Now, true)
			plan.RequeueAfter = sooner(plan.RequeueAfter, post.requeue)
		}
	}
	return plan
}

// legacyOf is d, the Deployment <name> of a blue-green workload, as the
// Deployment the workload ran before it switched: nil when d was written
// for blue-green (plimsoll.dev/strategy on it says so), not for a rolling
// or canary workload.
func legacyOf(d *appsv1.Deployment) *appsv1.Deployment {
	if d != nil && d.Annotations[contract.AnnotationStrategy] == contract.StrategyBlueGreen {
		return nil
	}
	return d
}

// BlueGreenCarrier is the Deployment whose annotations carry a blue-green
// workload's state and commands: the color active names (the one the
// active Service selects), else the color with the newer revision (blue
// on a tie), else legacy, the Deployment the workload ran before it
// switched to blue-green; nil when there is none.
func BlueGreenCarrier(active Color, blue, green, legacy *appsv1.Deployment) *appsv1.Deployment {
	o := BlueGreenObserved{Blue: blue, Green: green}
	if d := o.Deployment(active); active != "" && d != nil {
		return d
	}
	switch {
	case blue != nil && green != nil:
		b, _ := ReadStatus(blue.Annotations)
		g, _ := ReadStatus(green.Annotations)
		if g.Revision > b.Revision {
			return green
		}
		return blue
	case blue != nil:
		return blue
	case green != nil:
		return green
	}
	return legacy
}

// TargetColor is the color that carries, or is to carry, the Git template
// of hash: the active color when it already does (the revision is live),
// else a color that already carries it when no color is active yet, else
// the other color than the active one (blue when none is active).
func TargetColor(hash string, o BlueGreenObserved) Color {
	if o.Active != "" {
		if hashOf(o.Deployment(o.Active)) == hash {
			return o.Active
		}
		return o.Active.Other()
	}
	if hashOf(o.Green) == hash && hashOf(o.Blue) != hash {
		return ColorGreen
	}
	return ColorBlue
}

// planBlueGreenSettle plans the step when the active color runs the Git
// template: it stays at N, and the other color scales to zero once its
// scale-down time has come.
//
// While the old color is up, the revision's post-promotion run (when the
// swap started one) holds it up until the run passes.
func planBlueGreenSettle(plan BlueGreenPlan, desired BlueGreenDesired, o BlueGreenObserved, n int32, revision string, analysed bool) BlueGreenPlan {
	active, old := o.Active, o.Active.Other()
	plan.Replicas[active], plan.Roles[active] = n, RoleActive
	if o.Deployment(old) != nil {
		plan.Roles[old] = RoleIdle
	}
	status := &plan.Status
	oldUp := !runsNone(o.Deployment(old), o.ReplicaSets, o.Pods[old]) || !scaledDown(o.Legacy)
	post := judgement{judged: true}
	if oldUp && analysed && plan.Run.Of(StagePostPromotion, desired.Hash) {
		post = judge(&plan.Run, o.Analysis, StagePostPromotion, desired.Hash, o.Now, false)
		plan.RequeueAfter = sooner(plan.RequeueAfter, post.requeue)
		if o.Promote && post.inconclusive {
			post.judged, plan.Acted = true, "accepted the inconclusive analysis"
		}
	}
	switch {
	case oldUp && o.Paused:
		status.Phase, status.Message = PhasePaused, fmt.Sprintf("%s serves from %s; paused before scaling %s down", revision, active, oldName(old, o))
	case oldUp && !post.judged && post.inconclusive:
		status.Phase = PhasePaused
		status.Message = fmt.Sprintf("%s serves from %s; %s; promote or abort (%s kept)", revision, active, post.summary, oldName(old, o))
	case oldUp && !post.judged:
		status.Phase = PhaseProgressing
		status.Message = fmt.Sprintf("%s serves from %s; %s; %s kept until it passes", revision, active, post.summary, oldName(old, o))
	case oldUp && plan.ScaleDownAt.IsZero():
		// The old color is up with no scale-down recorded (a restart
		// between the swap and its record, or a switch from rolling).
		plan.ScaleDownAt = o.Now.Add(desired.ScaleDownDelay)
		fallthrough
	case oldUp && o.Now.Before(plan.ScaleDownAt):
		plan.RequeueAfter = plan.ScaleDownAt.Sub(o.Now)
		status.Phase = PhaseProgressing
		status.Message = fmt.Sprintf("%s serves from %s; %s", revision, active, scaleDownNote(old, o, plan.ScaleDownAt))
	case oldUp:
		plan.Replicas[old] = 0
		if o.Legacy != nil {
			plan.LegacyReplicas = new(int32)
		}
		status.Phase, status.Message = PhaseProgressing, fmt.Sprintf("%s serves from %s; scaling %s down", revision, active, oldName(old, o))
	case o.Deployment(active) != nil && liveReplicas(o.Deployment(active)) != n:
		// Scaled outside Git (kubectl scale): Git's count goes back.
		plan.ScaleDownAt = time.Time{}
		status.Phase = PhaseProgressing
		status.Message = fmt.Sprintf("%s on %s: scaling from %d back to %d replicas", revision, active, liveReplicas(o.Deployment(active)), n)
	case !fullyAvailable(o.Deployment(active), n) && (o.Deployment(old) != nil || o.Legacy != nil) &&
		runsAvailable(o.Deployment(active), n, o.ReplicaSets, o.Pods[active]):
		// The old pods are gone and the active color runs its count; only
		// the Deployment controller's report of it is to come, which
		// Healthy waits for. The scale-down's line stays: "waiting for 4
		// available" would be one more write of both colors, and not true.
		plan.ScaleDownAt = time.Time{}
		status.Phase, status.Message = PhaseProgressing, fmt.Sprintf("%s serves from %s; scaling %s down", revision, active, oldName(old, o))
	case !fullyAvailable(o.Deployment(active), n):
		plan.ScaleDownAt = time.Time{}
		status.Phase, status.Message = PhaseProgressing, fmt.Sprintf("%s on %s: %s", revision, active, waitingFor(n))
	default:
		plan.ScaleDownAt = time.Time{}
		status.Phase, status.Message = PhaseHealthy, fmt.Sprintf("%s on %s: %s", revision, active, availability(o.Deployment(active), n))
	}
	return plan
}

// trafficStays says where traffic stays after a failure: "traffic stays on
// blue", or on the previous Deployment before the first swap.
func trafficStays(active Color) string {
	if active == "" {
		return "no color serves yet"
	}
	return "traffic stays on " + string(active)
}

// scaleDownNote is "blue scales down at 12:00:30".
func scaleDownNote(old Color, o BlueGreenObserved, at time.Time) string {
	return fmt.Sprintf("%s scales down at %s", oldName(old, o), at.UTC().Format(time.TimeOnly))
}

// oldName names what lost traffic: the old color, or the Deployment the
// workload ran before it switched to blue-green.
func oldName(old Color, o BlueGreenObserved) string {
	if o.Deployment(old) == nil && o.Legacy != nil {
		return o.Legacy.Name
	}
	return string(old)
}
