package strategies

import (
	"fmt"
	"math"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// Color is the color of one of the two Deployments of a blue-green
// workload: ColorBlue or ColorGreen.
type Color string

// The two colors of a blue-green workload.
const (
	ColorBlue  Color = contract.ColorBlue
	ColorGreen Color = contract.ColorGreen
)

// Other returns the color that is not c; the other of no color is blue, the
// color a workload starts with.
func (c Color) Other() Color {
	if c == ColorBlue {
		return ColorGreen
	}
	return ColorBlue
}

// Suffix is the suffix of c's Deployment name: "-green" for green, "-blue"
// for blue (and for no color, as Other says).
func (c Color) Suffix() string {
	if c == ColorGreen {
		return contract.SuffixGreen
	}
	return contract.SuffixBlue
}

// Pod is a pod of a progressive workload (of the canary Deployment, or of
// the color a revision goes to) as the planners need it.
type Pod struct {
	Name string
	// Ready is the pod's Ready condition.
	Ready bool
	// Serving is true when the pod carries plimsoll.dev/serving="true".
	Serving bool
	// Deleting is true once the pod has a deletion timestamp.
	Deleting bool
	// NotReadySince is when the pod was created or last stopped being
	// Ready; zero while it is Ready.
	NotReadySince time.Time
	// Unlabelled is true for a canary pod that served and had its serving
	// label removed by someone else (by hand, to take it out of traffic):
	// it no longer counts, is not labelled again, and another pod takes
	// its place.
	Unlabelled bool
	// Hash is the hash of the template the pod was made from (the stamp
	// its template carried, see Stamp); "" for a pod of an unstamped
	// template.
	Hash string
	// Orphan is true for a pod without a controller: a canary's pod
	// being handed over to the stable Deployment has none for a moment
	// (see planHandOver).
	Orphan bool
}

// Role is what a Deployment is to its workload, recorded in
// plimsoll.dev/role.
type Role string

// Roles of the Deployments of a workload.
const (
	// RolePrimary is the one Deployment of a rolling workload.
	RolePrimary Role = contract.RolePrimary
	// RoleActive is the blue-green color the active Service selects.
	RoleActive Role = contract.RoleActive
	// RolePreview is the blue-green color a new revision goes to.
	RolePreview Role = contract.RolePreview
	// RoleIdle is the blue-green color that neither serves nor takes a
	// revision: scaled to zero, or waiting for its scale-down delay.
	RoleIdle Role = contract.RoleIdle
	// RoleStable is the canary workload's Deployment <name>.
	RoleStable Role = contract.RoleStable
	// RoleCanary is the canary workload's Deployment <name>-canary.
	RoleCanary Role = contract.RoleCanary
)

// replicasOf is the desired replica count: Git's, or 1 when Git leaves it
// unset (the API default). The progressive strategies size both of their
// Deployments from it, so they need a number.
func replicasOf(d Desired) int32 {
	if d.Replicas == nil {
		return 1
	}
	return *d.Replicas
}

// startStatus is the status a progressive plan starts from: the decided
// revision of the Git hash and commit, with the recorded failed hash.
func startStatus(desired Desired, recorded Status, decision RevisionDecision) Status {
	return Status{Revision: decision.Revision, Hash: desired.Hash, FailedHash: recorded.FailedHash, Commit: desired.Commit}
}

// keepWhileLagging keeps the recorded phase and message in status while one
// of deploys (nil ones aside) has a spec the Deployment controller has not
// observed yet, as long as status records the same revision, hash, failed
// hash and commit. Every status write changes a Deployment's annotations,
// which bumps its generation: reporting the lag ("2/4 available" instead
// of "waiting for promote") would be one more write and one more
// generation, and the phase would flip at every write. A failure is never
// held back.
//
// Two things are not held. A revision's opening status ("rolling out
// revision 4", see TakeRevision) goes out in the write of the new template,
// which the Deployment controller lags behind by definition: held, it was
// written, and the plan's own status a moment later, two status writes of
// each Deployment for one. And a Deployment that asks for no pods and runs
// none has nothing to report (a canary made at 0 after a promotion): its
// lag held "promoting" over Healthy, and the step's reset went out alone.
func keepWhileLagging(status *Status, recorded Status, deploys ...*appsv1.Deployment) {
	lagging := false
	for _, d := range deploys {
		if d != nil && !caughtUp(d) && !scaledDown(d) {
			lagging = true
		}
	}
	same := status.Revision == recorded.Revision && status.Hash == recorded.Hash &&
		status.FailedHash == recorded.FailedHash && status.Commit == recorded.Commit
	if lagging && same && recorded.Phase != "" && status.Phase != PhaseDegraded && !opening(recorded) {
		status.Phase, status.Message = recorded.Phase, recorded.Message
	}
}

// caughtUp reports whether the Deployment controller has observed d's latest
// spec, so that its status describes it.
func caughtUp(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration >= d.Generation
}

// fullyAvailable reports whether d runs exactly n pods, all of its current
// template and available, with nothing old left, as the Deployment
// controller last reported after observing d's latest spec. A nil d is not.
func fullyAvailable(d *appsv1.Deployment, n int32) bool {
	if d == nil || liveReplicas(d) != n || !caughtUp(d) {
		return false
	}
	st := d.Status
	return st.Replicas == n && st.UpdatedReplicas == n && st.AvailableReplicas == n
}

// replicaSetRuns returns what the ReplicaSet controller last reported of
// the pods of Deployment d, and whether that report describes d as it is:
// the ReplicaSet of d's template is the only one d controls that asks for
// pods or runs any, it asks for d's count, and the ReplicaSet controller
// observed that. It is the Deployment's status without the Deployment
// controller in between, which reports the same counts after it syncs d,
// seconds later when it is busy. A count plimsoll did not write to the
// ReplicaSet (the Deployment controller's own rolling update, a
// ReplicaSet it has yet to make) reads as not reported.
func replicaSetRuns(rsets []*appsv1.ReplicaSet, d *appsv1.Deployment) (appsv1.ReplicaSetStatus, bool) {
	var own *appsv1.ReplicaSet
	for _, rs := range rsets {
		switch {
		case !metav1.IsControlledBy(rs, d):
		case own == nil && SameTemplate(rs.Spec.Template, d.Spec.Template):
			own = rs
		case rs.Spec.Replicas == nil || *rs.Spec.Replicas > 0 || rs.Status.Replicas > 0:
			return appsv1.ReplicaSetStatus{}, false
		}
	}
	if own == nil || own.Spec.Replicas == nil || *own.Spec.Replicas != liveReplicas(d) ||
		own.Status.ObservedGeneration < own.Generation {
		return appsv1.ReplicaSetStatus{}, false
	}
	return own.Status, true
}

// runsAvailable reports whether d runs exactly n pods, all of its template
// and available: by the Deployment controller's report (see
// fullyAvailable), or, where that controller has not caught up, by the
// ReplicaSet controller's where it describes d (see replicaSetRuns), or,
// where that one has not reported the pods Ready yet, by pods, d's as the
// caches hold them (see podsAvailable).
func runsAvailable(d *appsv1.Deployment, n int32, rsets []*appsv1.ReplicaSet, pods []Pod) bool {
	if fullyAvailable(d, n) {
		return true
	}
	if d == nil || liveReplicas(d) != n {
		return false
	}
	st, ok := replicaSetRuns(rsets, d)
	return ok && (st.Replicas == n && st.AvailableReplicas == n || podsAvailable(d, n, pods))
}

// podsAvailable reports whether pods, those of Deployment d in the
// caches, are n of d's template, Ready, and nothing else but pods being
// deleted. A pod's Ready condition is in the caches before the
// ReplicaSet controller counts it available, in a status write of its
// next sync, and before the Deployment controller's report of that: two
// queues, each seconds behind when a hundred workloads roll. Without
// minReadySeconds a Ready pod is available; with it, the controllers'
// count is waited for.
func podsAvailable(d *appsv1.Deployment, n int32, pods []Pod) bool {
	if d.Spec.MinReadySeconds > 0 {
		return false
	}
	hash := hashOf(d)
	var ready int32
	for _, p := range pods {
		switch {
		case p.Deleting:
		case p.Hash != hash || !p.Ready || p.Orphan:
			return false
		default:
			ready++
		}
	}
	return ready == n
}

// scaledDown reports whether d is absent, or asks for no pods and runs none.
// It does not wait for the Deployment controller to observe d's latest
// spec: every status write bumps the generation of each Deployment it
// stamps, so a color at 0 would read as still up after each write, and the
// plan that follows would record a new scale-down time (one more write, one
// more generation, and so on). A reported 0 under a spec of 0 is stale
// only if the spec went above 0 and back between two reports of the
// Deployment controller (an abort within a second of a scale-up); the
// next report, which follows at once, corrects it.
func scaledDown(d *appsv1.Deployment) bool {
	return d == nil || (liveReplicas(d) == 0 && d.Status.Replicas == 0)
}

// runsNone reports whether d asks for no pods and runs none (see
// scaledDown): by the Deployment controller's report, or, where that
// controller has not caught up, by the ReplicaSet controller's: every
// ReplicaSet d controls asks for none and observed that, and reported
// none, or none of pods (d's, as the caches hold them) is left but ones
// being deleted. plimsoll scales the ReplicaSet of d's template in the
// write that scales d (see the rollout package's mirror), so the pods go
// without the Deployment controller, and its report of them followed 7 s
// later over 50 canaries, a wait of every hand-over's step 3. The
// ReplicaSet controller's report is late too: the status it writes in
// the sync that deletes the pods still counts them, and the one that
// counts none comes with its next sync, 6 s later in a hand-over of 50
// canaries, where the pods' deletion reached the caches within 0.1 s. A
// ReplicaSet that observed a count of 0 makes no pod, so pods gone from
// the caches do not come back. A Deployment that controls no ReplicaSet
// (a hand-over's stable once its own are held out) runs none once none
// of pods runs either.
func runsNone(d *appsv1.Deployment, rsets []*appsv1.ReplicaSet, pods []Pod) bool {
	if scaledDown(d) {
		return true
	}
	if liveReplicas(d) != 0 {
		return false
	}
	found, reported := false, true
	for _, rs := range rsets {
		if !metav1.IsControlledBy(rs, d) {
			continue
		}
		if rs.Spec.Replicas == nil || *rs.Spec.Replicas != 0 || rs.Status.ObservedGeneration < rs.Generation {
			return false
		}
		found, reported = true, reported && rs.Status.Replicas == 0
	}
	return found && reported || !slices.ContainsFunc(pods, func(p Pod) bool { return !p.Deleting })
}

// hashOf is the LiveHash of d's template, "" for a nil d.
func hashOf(d *appsv1.Deployment) string {
	if d == nil {
		return ""
	}
	return podtemplate.LiveHash(d.Spec.Template)
}

// failedNow reports whether d, carrying the template hash, ran out of its
// progress deadline on that template at now: the Deployment controller
// says so after observing d's latest spec, or one of d's pods stalled (see
// stalled). A workload recorded Degraded is not failed again by a
// condition that outlived the failure (see Retry), only by a pod that
// stays not Ready for a whole deadline after the controller's last word
// on d's progress (see stallAt).
func failedNow(d *appsv1.Deployment, pods []Pod, hash string, recorded Status, now time.Time) bool {
	if d == nil || hashOf(d) != hash {
		return false
	}
	pods = ofTemplate(pods, hash)
	if recorded.Phase == PhaseDegraded {
		at, ok := stallFor(d, pods, recorded)
		return ok && !now.Before(at)
	}
	return (caughtUp(d) && deadlineExceeded(d)) || stalled(d, pods, now)
}

// stallFor is when the first of pods stalls as failedNow judges it for a
// workload recorded as recorded: from its NotReadySince (see firstStall),
// or for a Degraded one from the Deployment controller's last word on d's
// progress at the earliest (see progressNoted).
func stallFor(d *appsv1.Deployment, pods []Pod, recorded Status) (at time.Time, ok bool) {
	var after time.Time
	if recorded.Phase == PhaseDegraded {
		after = progressNoted(d)
	}
	return stallAt(d, pods, after)
}

// stalled reports whether one of pods, not being deleted, has not been
// Ready for d's progress deadline at now. The Deployment controller reports
// ProgressDeadlineExceeded only for a rollout of a new template; a
// Deployment that keeps its template and is scaled up (the idle blue-green
// color, the canary from 1 pod to 2) never times out in its eyes, so the
// planners watch the pods as well. With progressDeadlineSeconds 10, a pod
// not Ready since 12:00:00 stalls at 12:00:10. A Deployment without a
// deadline (2147483647 seconds, or none set) never stalls.
func stalled(d *appsv1.Deployment, pods []Pod, now time.Time) bool {
	at, ok := firstStall(d, pods)
	return ok && !now.Before(at)
}

// firstStall is when the first of pods, not being deleted and not Ready,
// reaches d's progress deadline (see stalled); ok is false when no pod
// can stall.
func firstStall(d *appsv1.Deployment, pods []Pod) (at time.Time, ok bool) {
	return stallAt(d, pods, time.Time{})
}

// stallAt is firstStall with the deadline of each pod counted from after
// at the earliest: a pod not Ready since 12:00:00, with a deadline of 10s
// counted from 12:00:30, stalls at 12:00:40.
func stallAt(d *appsv1.Deployment, pods []Pod, after time.Time) (at time.Time, ok bool) {
	seconds := d.Spec.ProgressDeadlineSeconds
	if seconds == nil || *seconds == math.MaxInt32 {
		return time.Time{}, false
	}
	deadline := time.Duration(*seconds) * time.Second
	for _, p := range pods {
		if p.Ready || p.Deleting || p.NotReadySince.IsZero() {
			continue
		}
		since := p.NotReadySince
		if since.Before(after) {
			since = after
		}
		if t := since.Add(deadline); !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// progressNoted is when the Deployment controller last wrote d's
// Progressing condition (its lastUpdateTime), zero without one. After a
// failure, ProgressDeadlineExceeded stays on d until d makes progress,
// whatever template it carries: a retry that puts the failed template
// back on a ReplicaSet that still runs its pods makes no progress in the
// controller's eyes, and the condition would never change. The planners
// then count the deadline of each pod of the retried template from this
// moment on instead.
func progressNoted(d *appsv1.Deployment) time.Time {
	if c := ProgressCondition(d); c != nil {
		return c.LastUpdateTime.Time
	}
	return time.Time{}
}

// untilStalled is how long until one of pods stalls (see failedNow), zero
// when none is on its way to it or d does not carry the template hash. A
// pod that stays not Ready changes nothing a watch would report, so the
// planners ask to plan again at the deadline itself: with
// progressDeadlineSeconds 10 and a pod not Ready since 12:00:00, at
// 12:00:04 that is 6s.
func untilStalled(d *appsv1.Deployment, pods []Pod, hash string, recorded Status, now time.Time) time.Duration {
	if d == nil || hashOf(d) != hash {
		return 0
	}
	pods = ofTemplate(pods, hash)
	if at, ok := stallFor(d, pods, recorded); ok && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

// ofTemplate returns the pods of pods made from the template of hash, and
// those whose template is unknown (Hash ""): a revision's deadline is its
// own. The pods of the revision before it may still run beside its own (a
// failure held with auto-rollback off keeps them), and have not been
// Ready for longer than any deadline: counted, they failed a fix 2 ms
// after it went out. With revision 2 failed on green and held, and
// revision 3 written to green, green's pods of revision 2 do not count
// against revision 3.
func ofTemplate(pods []Pod, hash string) []Pod {
	var out []Pod
	for _, p := range pods {
		if p.Hash == "" || p.Hash == hash {
			out = append(out, p)
		}
	}
	return out
}

// sooner is the shorter of two requeue delays, where zero means none.
func sooner(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// availability is "2/4 available".
func availability(d *appsv1.Deployment, n int32) string {
	if d == nil {
		return fmt.Sprintf("0/%d available", n)
	}
	return fmt.Sprintf("%d/%d available", d.Status.AvailableReplicas, n)
}

// waitingFor is the line of a Deployment on its way to n available pods:
// the goal, not the count so far. A change of the status annotations is
// a write of ours and, since the Deployment controller copies a
// Deployment's annotations to its ReplicaSet, an update of its own; a line
// that changed with every pod that became available would cost both 4
// times for a color of 4 pods (100 workloads: 800 requests, 20 s of a
// Deployment controller at 20 a second). The counts so far are the
// Deployment's own status (kubectl get deploy, plimsoll status).
func waitingFor(n int32) string {
	return fmt.Sprintf("waiting for %d available", n)
}

// heldFailure reports whether a failed revision is to be left as it is
// rather than undone: auto-rollback is off, no abort is pending, and d, the
// Deployment that carries the failed template, still asks for pods. With
// N = 4 and green failing its progress deadline, auto-rollback off keeps
// green's 4 pods up for a look until an abort, a retry or a Git change;
// auto-rollback on scales green to 0 in the same plan that records the
// failure. An abort always undoes.
func heldFailure(autoRollback, abort bool, d *appsv1.Deployment, failed string) bool {
	return !autoRollback && !abort && d != nil && hashOf(d) == failed && liveReplicas(d) > 0
}
