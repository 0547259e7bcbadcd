package strategies

import (
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plimsoll.dev/plimsoll/contract"
)

// The canary's ReplicaSet becomes the stable's.
//
// A promotion used to give the stable Deployment the canary's template:
// the Deployment controller then made a second set of N pods, waited for
// them, and deleted the canary's, which had served the whole time. With 4
// replicas and a canary at 50%, 6 pods were made and 6 deleted per
// revision where 4 and 4 do. Now the canary's ReplicaSet, with its pods,
// is handed to the stable Deployment, by the Deployment controller's own
// rules:
//
//   - a Deployment adopts an orphan ReplicaSet that its selector selects,
//     and takes as its new ReplicaSet the one whose template is its own
//     but for the pod-template-hash label (the oldest, if several are);
//   - a paused Deployment makes no new ReplicaSet, but it still scales:
//     its one active ReplicaSet, or with none active its newest, goes to
//     its count;
//   - a Deployment being deleted adopts nothing.
//
// The second rule is the danger: a stable Deployment that adopted the
// canary's ReplicaSet while its count or template were not yet the
// canary's would scale it, to 0 if need be, and one given the canary's
// template before it adopts would scale a ReplicaSet of an earlier
// revision up to N. The order below leaves it nothing to scale at either
// moment. With N = 4, the canary at 2 and the stable at 2:
//
//  1. the canary grows to 4, paused in the same write (it still scales);
//     its pods serve once Ready (its template carries
//     plimsoll.dev/serving), 6 serving in all, and the next step waits
//     until 4 canary pods serve and are available;
//  2. the stable is paused and scaled to 0 (its 2 pods go; 4 still
//     serve);
//  3. once it runs none (see runsNone), its ReplicaSets (all at 0) are
//     taken out of its selector, each by taking away one label the
//     selector asks for (see HeldOut), and losing the stable as its
//     owner in the same patch (the release the Deployment controller
//     would make); the canary's ReplicaSets of earlier revisions (at 0)
//     are deleted;
//  4. once the stable controls no ReplicaSet, it takes the canary
//     Deployment's very template and 4 replicas, still paused: it has
//     no ReplicaSet to scale, and makes none;
//  5. once the Deployment controller has read step 4 (the stable's
//     status.observedGeneration is its generation), the canary's
//     ReplicaSet, which keeps its 4 pods, is given to the stable: one
//     patch takes the canary's owner reference away and adds the
//     stable's (the release the garbage collector, and the adoption the
//     Deployment controller, would make, without waiting for their
//     queues); the stable takes it as its new ReplicaSet, at 4 of 4:
//     nothing scales. Then the canary Deployment, paused on the stable's
//     template, is deleted with the orphan propagation policy, so that
//     nothing of its goes with it. The wait is the second rule's danger
//     again: that controller watches Deployments and ReplicaSets apart,
//     with no order between the two, and one that saw the ReplicaSet
//     the stable's while it still held the stable of step 3 (another
//     template, 0 replicas) would take it for an old ReplicaSet of a
//     paused Deployment and scale it to 0;
//  6. once the canary is gone, the stable controlling a ReplicaSet of its
//     template, its held-out ReplicaSets get their label back and the
//     stable as their owner (at 0, its history), and it is resumed; a new
//     canary Deployment at 0 is made for the next revision, with the
//     other track (its selector must not select the stable's pods, which
//     carry this one's), paused so that it makes no ReplicaSet until then
//     (see IdleCanary).
//
// No pod is made or deleted but the stable's old ones, and the Service's
// ready endpoints are the canary's 4 pods from step 2 on. A daemon killed
// at any point goes on from what it finds: each step is told by the
// objects (a paused canary, a paused stable and what it controls, a
// canary being deleted). The ReplicaSet keeps the canary's name,
// <name>-canary-<hash>; the stable's ReplicaSets are its own by owner, not
// by name.
//
// Not handed over, promoted as before (the stable takes the template and
// surges, see StablePromote): a workload whose count an HPA owns, and a
// canary Deployment made before its template carried the serving label.

// HeldOut is one label a hand-over takes away from a ReplicaSet of the
// stable Deployment, and gives back (see above): the selector's first key
// but plimsoll.dev/workload, by which the workload's ReplicaSets are found.
type HeldOut struct {
	ReplicaSet, Key, Value string
}

// handsOver reports whether the promotion of workload o hands the canary's
// ReplicaSet over to the stable Deployment (see above): no HPA owns the
// count, and the canary Deployment runs Git's revision from a template
// that carries a track and the serving label.
func handsOver(desired CanaryDesired, o CanaryObserved) bool {
	c := o.Canary
	return !desired.Autoscaled && c != nil && c.DeletionTimestamp == nil && hashOf(c) == desired.Hash &&
		c.Spec.Template.Labels[contract.LabelTrack] != "" && c.Spec.Template.Labels[contract.LabelServing] == "true"
}

// planHandOver plans a promotion that hands the canary's ReplicaSet over,
// steps 1 to 4 above, while the stable Deployment still runs the previous
// template.
func planHandOver(plan CanaryPlan, o CanaryObserved, n int32, revision string) CanaryPlan {
	plan.Status.Phase, plan.Status.Message = PhaseProgressing, handOverMessage(revision)
	zero, yes := int32(0), true
	// 1. The canary grows to N; a pod taken out of traffic by hand does
	// not count, and one more is made in its place. A paused Deployment
	// still scales its one active ReplicaSet, so a canary that runs
	// nothing but its template is paused in the same write that grows
	// it: one write of the canary and one sync of the Deployment
	// controller fewer per promotion. One with pods of an earlier
	// template left (its own rollout under way) would stop that rollout
	// paused, and is paused only once it runs N of its template. Step 2
	// waits for N canary pods serving; once it has begun (the stable
	// paused), a canary pod that restarts holds nothing up, as before.
	serving := label(&plan, o.Pods, n, hashOf(o.Canary))
	size := n + unlabelled(o.Pods)
	done := serving == n && runsAvailable(o.Canary, size, o.ReplicaSets, o.Pods)
	if !o.Canary.Spec.Paused || (!done && !o.Stable.Spec.Paused) {
		plan.CanaryReplicas = &size
		if !o.Canary.Spec.Paused && (done || oneTemplate(o.Canary)) {
			plan.CanaryPaused = &yes
		}
		return plan
	}
	if !o.Stable.Spec.Paused || liveReplicas(o.Stable) != 0 {
		plan.StablePaused, plan.StableReplicas = &yes, &zero // 2.
		return plan
	}
	held, deleted, left := holdOut(o.ReplicaSets, o.Stable)
	older, olderLeft := olderReplicaSets(o.ReplicaSets, o.Canary)
	switch {
	case !runsNone(o.Stable, o.ReplicaSets, o.StablePods):
		// The stable's own pods have not all gone yet.
	case left || olderLeft:
		// 3. A held-out ReplicaSet loses its owner in the patch that
		// holds it out, and the garbage collector takes a deleted one:
		// either change queues the workload.
		plan.HoldOut, plan.DeleteReplicaSets = held, slices.Concat(deleted, older)
	default:
		plan.Stable, plan.StableReplicas = StableHandOver, &n // 4.
	}
	return plan
}

// planHandedOver plans step 5 above, once the stable Deployment runs the
// canary's template: the canary's ReplicaSet is handed to the stable and
// the canary goes, leaving it (intendCanary makes a new canary at 0 for the
// next revision once this one is gone), but not before the Deployment
// controller has read step 4: a ReplicaSet of the stable's it saw before
// would be an old one of a paused Deployment, scaled to 0.
func planHandedOver(plan CanaryPlan, o CanaryObserved, revision string) CanaryPlan {
	plan.Status.Phase, plan.Status.Message = PhaseProgressing, handOverMessage(revision)
	if !caughtUp(o.Stable) {
		return plan
	}
	plan.OrphanCanary = true
	if rs := ownReplicaSet(o.ReplicaSets, o.Canary); rs != nil {
		plan.HandOver = rs.Name
	}
	return plan
}

// planAdoption plans the end of step 5 and step 6 above: the stable
// Deployment, paused by a hand-over, takes the canary's ReplicaSet, then
// is resumed with its history given back. A stable paused with nothing to
// adopt (its ReplicaSet went by hand) is resumed, and makes its own.
func planAdoption(plan CanaryPlan, o CanaryObserved, revision string) CanaryPlan {
	plan.Status.Phase, plan.Status.Message = PhaseProgressing, handOverMessage(revision)
	adopted := ownReplicaSet(o.ReplicaSets, o.Stable) != nil
	if o.Canary != nil && o.Canary.DeletionTimestamp != nil || !adopted && adoptable(o.ReplicaSets, o.Stable) {
		// 5. The canary goes before the stable is resumed, so that a
		// daemon killed in between finds a paused stable that owns the
		// canary's ReplicaSet beside a canary being deleted.
		return plan
	}
	plan.StablePaused = new(bool)
	if adopted {
		// Given back after the resume: a paused stable that adopted one of
		// them before its new ReplicaSet would scale it up (see above).
		plan.Restore, plan.DeleteReplicaSets = heldOut(o.ReplicaSets, o.Stable)
	}
	return plan
}

// oneTemplate reports whether d's pods, as the Deployment controller last
// reported after observing d's latest spec, are all of d's template.
func oneTemplate(d *appsv1.Deployment) bool {
	return caughtUp(d) && d.Status.Replicas == d.Status.UpdatedReplicas
}

// handOverMessage is the status message of every step of a hand-over of
// revision: one line for all of them, since each status that changes is
// a write of both Deployments, and a copy of it to each one's newest
// ReplicaSet by the Deployment controller.
func handOverMessage(revision string) string {
	return revision + ": promoting: the canary's pods become the stable's"
}

// adopting reports whether the stable Deployment of o is paused past a
// hand-over's step 4: it runs the template the canary Deployment, gone or
// going, was paused on.
func adopting(o CanaryObserved) bool {
	return o.Stable != nil && o.Stable.Spec.Paused && !handingOver(o) && !handedOver(o)
}

// handingOver reports whether a hand-over of workload o is past step 1:
// the canary Deployment is paused at its full count, with a template to
// hand over, and the stable Deployment does not run it yet.
func handingOver(o CanaryObserved) bool {
	c := o.Canary
	return c != nil && c.Spec.Paused && !IdleCanary(c) && c.DeletionTimestamp == nil && o.Stable != nil &&
		c.Spec.Template.Labels[contract.LabelTrack] != "" && c.Spec.Template.Labels[contract.LabelServing] == "true" &&
		!equality.Semantic.DeepEqual(c.Spec.Template, o.Stable.Spec.Template)
}

// IdleCanary reports whether canary Deployment d is one made to wait for
// the next revision: paused at 0. A canary Deployment is made at 0 for a
// workload's first revision and after each hand-over, and paused so that
// the Deployment controller makes no ReplicaSet for it (a ReplicaSet,
// its status and two copies of the workload's status per revision, all
// for a template no pod runs); the next revision's template goes to it
// with the pause lifted, in the write of its first step. A hand-over
// pauses a canary at its full count, never at 0 (a workload of 0 is
// promoted, not handed over).
func IdleCanary(d *appsv1.Deployment) bool {
	return d != nil && d.Spec.Paused && liveReplicas(d) == 0
}

// handedOver reports whether the canary Deployment of o is the one a
// hand-over paused and gave the template of to the stable: paused, with
// the stable's template. Its ReplicaSet goes to the stable (step 5).
func handedOver(o CanaryObserved) bool {
	return o.Canary != nil && o.Stable != nil && o.Canary.Spec.Paused && o.Canary.DeletionTimestamp == nil &&
		equality.Semantic.DeepEqual(o.Canary.Spec.Template, o.Stable.Spec.Template)
}

// holdOut returns what step 3 does with the ReplicaSets of rsets that the
// stable Deployment d controls: the label each gives up, and, for a
// selector of nothing but plimsoll.dev/workload and expressions, the
// names to delete instead; and whether d still controls any, held out
// already or being deleted (a held-out one loses its owner in the same
// patch; one held out before that patch did, the Deployment controller
// lets go when it next syncs d).
func holdOut(rsets []*appsv1.ReplicaSet, d *appsv1.Deployment) (held []HeldOut, deleted []string, left bool) {
	key := heldKey(d.Spec.Selector)
	for _, rs := range rsets {
		if !metav1.IsControlledBy(rs, d) {
			continue
		}
		left = true
		_, value := heldLabel(rs)
		switch {
		case rs.DeletionTimestamp != nil || value != "":
		case key == "":
			deleted = append(deleted, rs.Name)
		default:
			held = append(held, HeldOut{ReplicaSet: rs.Name, Key: key, Value: rs.Labels[key]})
		}
	}
	return held, deleted, left
}

// heldKey is the label of selector a hand-over takes away: its first
// key, sorted, but plimsoll.dev/workload (the workload's ReplicaSets are
// found by it); "" when there is none.
func heldKey(selector *metav1.LabelSelector) string {
	if selector == nil {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(selector.MatchLabels)) {
		if k != contract.LabelWorkload {
			return k
		}
	}
	return ""
}

// heldLabel returns the label ReplicaSet rs gave up to a hand-over, from
// its plimsoll.dev/held-out annotation; "", "" when it holds none.
func heldLabel(rs *appsv1.ReplicaSet) (key, value string) {
	key, value, ok := strings.Cut(rs.Annotations[contract.AnnotationHeldOut], "=")
	if !ok {
		return "", ""
	}
	return key, value
}

// IsHeldOut reports whether ReplicaSet rs gave up a label to a hand-over
// (see HeldOut) and no owner holds it: the stable Deployment's again
// once the label is given back.
func IsHeldOut(rs *appsv1.ReplicaSet) bool {
	key, _ := heldLabel(rs)
	return key != "" && metav1.GetControllerOf(rs) == nil
}

// heldOut lists the labels that ReplicaSets of rsets gave up to a
// hand-over and that no owner holds them out of any more: given back
// (step 6) once the stable Deployment d runs the canary's ReplicaSet.
// One whose template is d's is deleted instead (drop): d would take the
// older of the two as its new ReplicaSet, and replace the pods it runs.
// That is a revision rolled back to, at 0.
func heldOut(rsets []*appsv1.ReplicaSet, d *appsv1.Deployment) (back []HeldOut, drop []string) {
	for _, rs := range rsets {
		key, value := heldLabel(rs)
		switch {
		case !IsHeldOut(rs) || rs.DeletionTimestamp != nil:
		case SameTemplate(rs.Spec.Template, d.Spec.Template):
			drop = append(drop, rs.Name)
		default:
			back = append(back, HeldOut{ReplicaSet: rs.Name, Key: key, Value: value})
		}
	}
	return back, drop
}

// historyPending reports whether a ReplicaSet of rsets that a hand-over
// held out of Deployment d (see HeldOut) is not d's again yet: still held
// out, or given back and not yet adopted by the Deployment controller (no
// owner, and d's selector selects it). One being deleted is not.
func historyPending(rsets []*appsv1.ReplicaSet, d *appsv1.Deployment) bool {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return false
	}
	for _, rs := range rsets {
		orphan := metav1.GetControllerOf(rs) == nil
		if rs.DeletionTimestamp == nil && (IsHeldOut(rs) || orphan && sel.Matches(labels.Set(rs.Labels))) {
			return true
		}
	}
	return false
}

// adoptable reports whether a ReplicaSet of rsets without an owner runs
// Deployment d's template: the canary's, which d adopts once the Deployment
// controller syncs it.
func adoptable(rsets []*appsv1.ReplicaSet, d *appsv1.Deployment) bool {
	for _, rs := range rsets {
		if metav1.GetControllerOf(rs) == nil && rs.DeletionTimestamp == nil && SameTemplate(rs.Spec.Template, d.Spec.Template) {
			return true
		}
	}
	return false
}

// ownReplicaSet returns the ReplicaSet of rsets that Deployment d controls
// and whose template is d's (but for the pod-template-hash label the
// Deployment controller adds), nil when there is none.
func ownReplicaSet(rsets []*appsv1.ReplicaSet, d *appsv1.Deployment) *appsv1.ReplicaSet {
	for _, rs := range rsets {
		if metav1.IsControlledBy(rs, d) && SameTemplate(rs.Spec.Template, d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// SameTemplate reports whether a ReplicaSet's template a is a Deployment's
// template b, as the Deployment controller compares them: but for the
// pod-template-hash label. It copies nothing: a and b are shallow
// copies, so that the rest compares with their labels left out, and the
// planners ask it of every ReplicaSet at every reconcile.
func SameTemplate(a, b corev1.PodTemplateSpec) bool {
	if !equalBut(a.Labels, b.Labels, LabelPodTemplateHash) {
		return false
	}
	a.Labels, b.Labels = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}

// equalBut reports whether maps a and b hold the same keys and values
// but for key.
func equalBut(a, b map[string]string, key string) bool {
	for k, v := range a {
		if w, ok := b[k]; k != key && (!ok || w != v) {
			return false
		}
	}
	for k := range b {
		if _, ok := a[k]; k != key && !ok {
			return false
		}
	}
	return true
}

// olderReplicaSets returns the names of the ReplicaSets of rsets that
// Deployment d controls besides the one of its template, not being
// deleted yet, and whether any is left at all (being deleted or not).
func olderReplicaSets(rsets []*appsv1.ReplicaSet, d *appsv1.Deployment) (names []string, left bool) {
	for _, rs := range rsets {
		if !metav1.IsControlledBy(rs, d) || SameTemplate(rs.Spec.Template, d.Spec.Template) {
			continue
		}
		left = true
		if rs.DeletionTimestamp == nil {
			names = append(names, rs.Name)
		}
	}
	return names, left
}

// orphans names the pods of pods that nothing controls.
func orphans(pods []Pod) []string {
	var out []string
	for _, p := range pods {
		if p.Orphan && !p.Deleting {
			out = append(out, p.Name)
		}
	}
	return out
}

// spareable returns pods, the orphans a plan would delete, when the
// Service keeps at least n ready endpoints without them, else none. A pod
// read as an orphan may have been adopted by the stable's ReplicaSet
// since (the caches of pods and of Deployments are not read at one
// instant: the stable may count it available before the pod's new owner
// reaches the cache); it then serves as one of the n, and deleting it
// would leave the Service short. With N = 4: the stable's own 4 pods and
// 4 orphans ready, the orphans go; 4 ready that are all "orphans", none
// does.
func spareable(pods, ready []string, n int32) []string {
	if len(pods) == 0 {
		return nil
	}
	var left int32
	for _, p := range ready {
		if !slices.Contains(pods, p) {
			left++
		}
	}
	if left < n {
		return nil
	}
	return pods
}

// OtherTrack is the track of a new canary Deployment, whose selector must
// not select the stable Deployment's pods: those carry the track of the
// canary they were handed over from (stableTrack), "" when they never
// were. The two tracks take turns: canary, canary-b, canary, ...
func OtherTrack(stableTrack string) string {
	if stableTrack == contract.TrackCanary {
		return contract.TrackCanaryNext
	}
	return contract.TrackCanary
}

// servingNames names the pods of pods that carry the serving label.
func servingNames(pods []Pod) []string {
	var out []string
	for _, p := range pods {
		if p.Serving {
			out = append(out, p.Name)
		}
	}
	return out
}
