package strategies

import (
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// The canary's pods become the stable's.
//
// A promotion used to give the stable Deployment the canary's template:
// the Deployment controller then made a second set of N pods, waited for
// them, and deleted the canary's, which had served the whole time. With 4
// replicas and a canary at 50%, 6 pods were made and 6 deleted per
// revision where 4 and 4 do. Now the canary's pods are handed to the
// stable Deployment, with the Deployment and ReplicaSet controllers' own
// rules:
//
//   - a ReplicaSet adopts an orphan pod that its selector selects, and
//     makes only the pods its count lacks;
//   - the Deployment controller names a new template's ReplicaSet, and
//     its pod-template-hash label, after the hash of the template (and of
//     its collision count): the stable Deployment given the canary's very
//     template makes a ReplicaSet whose selector selects the canary's pods;
//   - a paused Deployment makes no new ReplicaSet, and one whose template
//     matches a ReplicaSet of its own keeps its count.
//
// With N = 4, the canary at 2 and the stable at 2, the hand-over goes:
//
//  1. the canary grows to 4; its pods serve once Ready (its template
//     carries plimsoll.dev/serving), 6 serving in all;
//  2. 4 canary pods serve and are available: the canary Deployment is
//     paused, and the stable scales to 0 (its 2 pods go; 4 still serve);
//  3. the canary's ReplicaSets of earlier revisions (at 0) are deleted,
//     then its ReplicaSet with the orphan propagation policy: the garbage
//     collector takes the pods' owner reference away, and they keep
//     running, serving, owned by nothing (the paused canary Deployment
//     makes no new ReplicaSet in its place, and has none left to scale
//     up);
//  4. once no pod of the canary is owned any more, the stable Deployment
//     takes the canary Deployment's template and 4 replicas: its new
//     ReplicaSet selects the 4 orphan pods, adopts them and makes none;
//  5. the paused canary Deployment, which now runs nothing, is deleted; a
//     new one at 0 is made for the next revision, with the other track
//     (its selector must not select the stable's pods, which carry this
//     one's).
//
// The Service never has fewer than 4 ready endpoints, and a daemon killed
// at any point goes on from what it finds: every step is told by the
// objects (a paused canary, its ReplicaSet being deleted, pods without an
// owner, the stable on the canary's template). Should the stable's new
// ReplicaSet not select the orphan pods after all (its collision count
// made another hash), it makes 4 of its own, and the orphans are deleted
// once it is available.
//
// Not handed over, promoted as before (the stable takes the template and
// surges, see StablePromote): a workload whose count an HPA owns, and a
// canary Deployment made before its template carried the serving label.

// handsOver reports whether the promotion of workload o hands the canary's
// pods over to the stable Deployment (see above): no HPA owns the count,
// and the canary Deployment runs Git's revision from a template that
// carries a track and the serving label.
func handsOver(desired CanaryDesired, o CanaryObserved) bool {
	c := o.Canary
	return !desired.Autoscaled && c != nil && c.DeletionTimestamp == nil && hashOf(c) == desired.Hash &&
		c.Spec.Template.Labels[contract.LabelTrack] != "" && c.Spec.Template.Labels[contract.LabelServing] == "true"
}

// planHandOver plans a promotion that hands the canary's pods over, steps
// 1 to 4 above, while the stable Deployment still runs the previous
// template.
func planHandOver(plan CanaryPlan, o CanaryObserved, n int32, revision string) CanaryPlan {
	status := &plan.Status
	status.Phase = PhaseProgressing
	status.Message = revision + ": promoting: the canary's pods become the stable's"
	zero := int32(0)
	if !o.Canary.Spec.Paused {
		// 1. The canary grows to N; a pod taken out of traffic by hand
		// does not count, and one more is made in its place.
		serving := label(&plan, o.Pods, n)
		size := n + unlabelled(o.Pods)
		plan.CanaryReplicas = &size
		if serving < n || !fullyAvailable(o.Canary, size) {
			return plan
		}
		// 2. N canary pods serve.
		paused := true
		plan.CanaryPaused, plan.StableReplicas = &paused, &zero
		return plan
	}
	if liveReplicas(o.Stable) != 0 {
		plan.StableReplicas = &zero // 2, again after a restart between the writes
	}
	old, oldLeft := olderReplicaSets(o.ReplicaSets, o.Canary)
	switch rs := ownReplicaSet(o.ReplicaSets, o.Canary); {
	case oldLeft:
		// The canary's earlier ReplicaSets (at 0) go first: once its
		// ReplicaSet goes, a paused Deployment scales the latest it has
		// left up to its count, and would make N pods of an earlier
		// revision.
		plan.DeleteReplicaSets = old
	case rs != nil && rs.DeletionTimestamp == nil:
		plan.Orphan = rs.Name // 3.
	case rs != nil || anyControlled(o.Pods):
		// The garbage collector takes the owner references away: the
		// ReplicaSet's deletion and the pods' changes queue the workload.
	case !scaledDown(o.Stable):
		// The stable's own pods have not all gone yet: its new ReplicaSet
		// would be made smaller than N beside the old one, and give up
		// some of the pods it adopts.
	default:
		// 4.
		plan.Stable, plan.StableReplicas = StableHandOver, &n
	}
	return plan
}

// handingOver reports whether a hand-over of workload o is past step 1:
// the canary Deployment is paused, with a template to hand over, and the
// stable Deployment does not run it yet.
func handingOver(o CanaryObserved) bool {
	c := o.Canary
	return c != nil && c.Spec.Paused && c.DeletionTimestamp == nil && o.Stable != nil &&
		c.Spec.Template.Labels[contract.LabelTrack] != "" && c.Spec.Template.Labels[contract.LabelServing] == "true" &&
		!equality.Semantic.DeepEqual(c.Spec.Template, o.Stable.Spec.Template)
}

// handedOver reports whether the canary Deployment of o is the one a
// hand-over paused and took the template of: paused, with the stable's
// template. It runs nothing any more and is deleted (step 5).
func handedOver(o CanaryObserved) bool {
	return o.Canary != nil && o.Canary.Spec.Paused && o.Canary.DeletionTimestamp == nil &&
		equality.Semantic.DeepEqual(o.Canary.Spec.Template, o.Stable.Spec.Template)
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
// pod-template-hash label.
func SameTemplate(a, b corev1.PodTemplateSpec) bool {
	a, b = *a.DeepCopy(), *b.DeepCopy()
	a.Labels, b.Labels = maps.Clone(a.Labels), maps.Clone(b.Labels)
	delete(a.Labels, LabelPodTemplateHash)
	delete(b.Labels, LabelPodTemplateHash)
	return equality.Semantic.DeepEqual(a, b)
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

// anyControlled reports whether a pod of pods still has a controller.
func anyControlled(pods []Pod) bool {
	for _, p := range pods {
		if !p.Orphan && !p.Deleting {
			return true
		}
	}
	return false
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
