package strategies

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The annotations the Deployment controller's scale of a ReplicaSet sets
// (SetReplicasAnnotations): its Deployment's count, and that count plus
// the surge its strategy allows.
const (
	AnnotationDesiredReplicas = "deployment.kubernetes.io/desired-replicas"
	AnnotationMaxReplicas     = "deployment.kubernetes.io/max-replicas"
)

// notCopied are the annotations the Deployment controller does not copy
// from a Deployment to its newest ReplicaSet (its own, and kubectl's
// last applied configuration).
var notCopied = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
	AnnotationDeploymentRevision:                       true,
	"deployment.kubernetes.io/revision-history":        true,
	AnnotationDesiredReplicas:                          true,
	AnnotationMaxReplicas:                              true,
	"deprecated.deployment.rollback.to":                true,
}

// Copied reports whether the Deployment controller copies annotation key
// of a Deployment to its newest ReplicaSet.
func Copied(key string) bool { return !notCopied[key] }

// Mirror is what the Deployment controller's next sync of a Deployment,
// as just written, would write onto the ReplicaSet of its template, for
// the rollout controller to write first (see MirrorOf).
type Mirror struct {
	// ReplicaSet is the ReplicaSet of the Deployment's template.
	ReplicaSet *appsv1.ReplicaSet
	// Annotations are those to set on it: the Deployment's that it lacks
	// or holds otherwise, and with Replicas the two the scale sets.
	Annotations map[string]string
	// Replicas, when set, is the count to scale it to.
	Replicas *int32
}

// MirrorOf returns what the Deployment controller's next sync of
// Deployment d, as just written, would write onto the ReplicaSet that d
// controls and that runs d's template: d's annotations, where they
// differ, and d's count, when that sync would scale the ReplicaSet to it
// (see scaleOf). rsets are the workload's ReplicaSets; holder says that
// d is the Deployment a hand-over holds ReplicaSets out of (the
// stable), whose held-out ones are its own again by that sync. It
// returns false when there is nothing to write.
//
// The Deployment controller copies every annotation of a Deployment to
// its newest ReplicaSet with an update, on each sync that finds them
// differ: each status that changes cost it one write more, from its
// budget of 20 requests a second that every rollout waits on, and a write
// that lost to the ReplicaSet controller's status updates with a conflict
// half the time (1,079 of 2,408 updates of ReplicaSets over 50 canaries
// and 50 blue-greens), to be queued and made again. A patch of the
// rollout controller's own, made after the Deployment's (a ReplicaSet
// ahead of its Deployment reads as `kubectl rollout undo`), leaves it
// nothing to copy, and carries no resourceVersion to conflict on. The
// template's ReplicaSet not made yet gets them when it is made.
//
// A count down goes the same way (a count up is left to that controller:
// see scaleOf). Each step of a canary scales the canary or the stable
// Deployment, and the Deployment controller scaled the
// ReplicaSet with an update and a ScalingReplicaSet Event of its own:
// over 50 canaries of 4 pods and 5 steps, 5 scales a revision, 10 of the
// 38 writes it made per workload. And the step's pods waited in its
// queue (9 s behind at 50 canaries, twice that at 100) before the
// ReplicaSet controller made or deleted them. Scaled first, in the same
// patch as the annotations, the ReplicaSet controller acts at once, and
// the Deployment controller finds the ReplicaSet at its Deployment's
// count with the annotations its own scale would have set: it writes the
// Deployment's status and nothing else.
func MirrorOf(d *appsv1.Deployment, rsets []*appsv1.ReplicaSet, holder bool) (Mirror, bool) {
	var own, held []*appsv1.ReplicaSet
	for _, rs := range rsets {
		switch {
		case metav1.IsControlledBy(rs, d):
			own = append(own, rs)
		case holder && IsHeldOut(rs):
			held = append(held, rs)
		}
	}
	rs := TemplateReplicaSet(d, own)
	if rs == nil || !revisionSettled(d, rs, append(held, own...)) {
		return Mirror{}, false
	}
	m := Mirror{ReplicaSet: rs, Annotations: map[string]string{}}
	for k, v := range d.Annotations {
		if Copied(k) && rs.Annotations[k] != v {
			m.Annotations[k] = v
		}
	}
	if n, ok := scaleOf(d, rs, own); ok {
		// max-replicas is the count plus the surge d's strategy allows,
		// rounded up as the Deployment controller's MaxSurge does: 3 of 4
		// with Git's 25% gives "4".
		maxPods, _ := rollingBounds(n, d.Spec.Strategy)
		m.Replicas = &n
		m.Annotations[AnnotationDesiredReplicas] = strconv.Itoa(int(n))
		m.Annotations[AnnotationMaxReplicas] = strconv.Itoa(int(maxPods))
	}
	return m, len(m.Annotations) > 0
}

// revisionSettled reports whether the Deployment controller's next sync
// of Deployment d leaves the revision of rs, the ReplicaSet of d's
// template, as it is: rs carries d's revision, and no other ReplicaSet of
// d (own: all of them, rs among them, and those held out of it) a later
// one. One it has yet to make d's latest (a ReplicaSet a hand-over's
// stable has just adopted, one it has just made, a template rolled back
// to) gets a new revision in an update of that sync whatever is copied
// onto it first: a copy made before it was one more write, and made that
// update fail with a conflict and wait in the controller's queue to be
// made again (6 s at the end of a hand-over, over 50 canaries).
func revisionSettled(d *appsv1.Deployment, rs *appsv1.ReplicaSet, own []*appsv1.ReplicaSet) bool {
	n := DeploymentRevision(rs)
	if n < 0 || rs.Annotations[AnnotationDeploymentRevision] != d.Annotations[AnnotationDeploymentRevision] {
		return false
	}
	for _, other := range own {
		if other.UID != rs.UID && DeploymentRevision(other) >= n {
			return false
		}
	}
	return true
}

// TemplateReplicaSet returns the one ReplicaSet of own (those Deployment
// d controls) that runs d's template, nil for none or several.
func TemplateReplicaSet(d *appsv1.Deployment, own []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	var found *appsv1.ReplicaSet
	for _, rs := range own {
		if !SameTemplate(rs.Spec.Template, d.Spec.Template) {
			continue
		}
		if found != nil {
			return nil
		}
		found = rs
	}
	return found
}

// scaleOf returns the count the Deployment controller's next sync of
// Deployment d would scale rs, the ReplicaSet of d's template, to, and
// whether it would scale rs at all: only when d asks for another count
// than rs's, rs is not being deleted, and no other ReplicaSet of d (own:
// all of them, rs among them) asks for pods. Then d's sync, paused or
// not, finds rs the one active ReplicaSet (or, with none active, the one
// of its template) and scales it to d's count (its scale, and before it
// its check for a scaling event, which reads desired-replicas). With
// another one active a rolling update or a proportional scale is under
// way, whose arithmetic is the Deployment controller's to do.
//
// Only a count down is written first. That controller scales rs to the
// count of d its cache holds, which can be an earlier one: after an API
// server outage its Deployments lag its ReplicaSets by up to a minute.
// A count up written first was then scaled back down, and the pod it
// made deleted after a step had counted it serving and given a stable
// pod up for it: 3 ready endpoints of 4. A count down scaled back up
// makes a pod more for a while, and the pods that serve stay.
func scaleOf(d *appsv1.Deployment, rs *appsv1.ReplicaSet, own []*appsv1.ReplicaSet) (int32, bool) {
	if d.Spec.Replicas == nil || rs.Spec.Replicas == nil || *rs.Spec.Replicas <= *d.Spec.Replicas || rs.DeletionTimestamp != nil {
		return 0, false
	}
	for _, other := range own {
		if other.UID != rs.UID && (other.Spec.Replicas == nil || *other.Spec.Replicas > 0) {
			return 0, false
		}
	}
	return *d.Spec.Replicas, true
}
