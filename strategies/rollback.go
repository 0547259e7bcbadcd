package strategies

import (
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// Rollback is the restoration of a previous template after a revision
// failed.
type Rollback struct {
	// Template is the pod template to write into the live Deployment: the
	// template of ReplicaSet, without the pod-template-hash label (as
	// kubectl rollout undo does), so that the Deployment controller finds
	// that ReplicaSet again and scales it back up instead of creating one.
	Template corev1.PodTemplateSpec
	// ReplicaSet names the ReplicaSet whose template is restored.
	ReplicaSet string
	// Revision is the plimsoll revision of the restored template and Commit
	// the commit it came from, 0 and "" when unknown (see rollbackTarget).
	Revision int64
	Commit   string
	// FailedHash is the hash of the template that failed; the plan's Status
	// records it as the failed hash.
	FailedHash string
}

// rollbackTarget returns the ReplicaSet to roll back to, or nil when there
// is none: of the ReplicaSets live controls whose template is none of the
// excluded hashes (the failing one and any failed before), the one whose
// template is stable (the last revision that was Healthy), or else the
// newest by deployment.kubernetes.io/revision. Revisions compare as
// numbers, so 10 is newer than 9; a ReplicaSet without a readable revision
// counts as the oldest, and among equal revisions the greater name wins, so
// the choice never depends on the order of the list. ReplicaSets being
// deleted are skipped.
//
// The stable one comes first because the newest need never have been
// Healthy: revision 3 replaced by revision 4 halfway through its rollout
// has the newest ReplicaSet when 4 fails, while revision 2 is the last
// one known to work. Without a stable hash (a Deployment plimsoll adopted,
// or whose stable ReplicaSet the Deployment controller pruned under its
// revisionHistoryLimit), the newest is the best guess, as for kubectl
// rollout undo.
//
// ReplicaSets of a Deployment at revisions 1, 2 (hash 0b3e66d1c8), 3 (hash
// 5d9f01c2aa) and 4 (hash 7c4e1a2b9f, failing): with 0b3e66d1c8 stable,
// the target is 2; with no stable hash, 3; with none and 5d9f01c2aa
// excluded as failed before, 2.
func rollbackTarget(live *appsv1.Deployment, replicaSets []*appsv1.ReplicaSet, stable string, exclude ...string) *appsv1.ReplicaSet {
	exclude = slices.DeleteFunc(slices.Clone(exclude), func(h string) bool { return h == "" })
	var newest, stableRS *appsv1.ReplicaSet
	for _, rs := range replicaSets {
		if rs == nil || rs.DeletionTimestamp != nil {
			continue
		}
		if live.UID != "" && !metav1.IsControlledBy(rs, live) {
			continue
		}
		hash := podtemplate.LiveHash(rs.Spec.Template)
		if slices.Contains(exclude, hash) {
			continue
		}
		if hash == stable && newer(rs, stableRS) {
			stableRS = rs
		}
		if newer(rs, newest) {
			newest = rs
		}
	}
	if stableRS != nil {
		return stableRS
	}
	return newest
}

// newer reports whether ReplicaSet a is newer than b (nil: none) by
// deployment.kubernetes.io/revision, the greater name winning a tie.
func newer(a, b *appsv1.ReplicaSet) bool {
	if b == nil {
		return true
	}
	ra, rb := DeploymentRevision(a), DeploymentRevision(b)
	return ra > rb || (ra == rb && a.Name > b.Name)
}

// PossibleRollback returns the ReplicaSet whose template an automatic
// rollback of the rolling Deployment live would restore, were its live
// template to fail now, or nil when no automatic rollback can restore one:
// live is not the Deployment of a rolling workload (its plimsoll.dev/role
// is another strategy's, or, before it has a role, its
// plimsoll.dev/strategy names another: blue-green and canary fall back to
// their other Deployment, not to a ReplicaSet), its phase is Healthy (a
// revision fails only while it rolls out), its live template is not the
// recorded revision's (plimsoll.dev/template-hash: it was restored by a
// rollback, or kept while Git's is refused or paused, and the planner
// rolls back only the revision's own template), auto-rollback is off, or
// no ReplicaSet qualifies.
//
// The choice is the planner's (see PlanRolling, steps 1 and 7): of the
// ReplicaSets of live whose template is neither the live one nor the
// recorded failed hash, the stable one (plimsoll.dev/stable-hash), else
// the newest. Revision 4 rolling out over revision 3, with ReplicaSets at
// revisions 1, 3 and 4 and no stable hash: revision 3's; the same with
// revision 3's hash recorded as failed: revision 1's; with revision 1's
// hash stable: revision 1's; once revision 4 failed and revision 3's
// template was restored: none.
func PossibleRollback(live *appsv1.Deployment, replicaSets []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if live == nil {
		return nil
	}
	a := live.Annotations
	role, strategy := a[contract.AnnotationRole], a[contract.AnnotationStrategy]
	rolling := role == string(RolePrimary) || (role == "" && (strategy == "" || strategy == contract.StrategyRolling))
	current := podtemplate.LiveHash(live.Spec.Template)
	if !rolling || a[contract.AnnotationPhase] == string(PhaseHealthy) || current != a[contract.AnnotationTemplateHash] ||
		a[contract.AnnotationAutoRollback] == "false" {
		return nil
	}
	return rollbackTarget(live, replicaSets, a[contract.AnnotationStableHash], current, a[contract.AnnotationFailedHash])
}

// DeploymentRevision reads deployment.kubernetes.io/revision of rs, -1
// when it is missing or not a number.
func DeploymentRevision(rs *appsv1.ReplicaSet) int64 {
	n, err := strconv.ParseInt(rs.Annotations[AnnotationDeploymentRevision], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// newRollback restores the template of rs after the template hashing to
// failedHash failed.
//
// The plimsoll revision and commit of rs come from its own annotations: the
// Deployment controller copies a Deployment's annotations onto its newest
// ReplicaSet at every sync, so a ReplicaSet keeps the plimsoll.dev/revision
// and plimsoll.dev/commit the Deployment had while rs was the newest. They
// are believed only when the plimsoll.dev/template-hash copied with them is
// the hash of rs's own template: once rs has been restored by a rollback,
// it receives the status of the failed revision (say revision 4 and its
// hash), which describes another template, and its revision is unknown.
func newRollback(rs *appsv1.ReplicaSet, failedHash string) Rollback {
	template := *rs.Spec.Template.DeepCopy()
	delete(template.Labels, LabelPodTemplateHash)
	rb := Rollback{Template: template, ReplicaSet: rs.Name, FailedHash: failedHash}
	if rs.Annotations[contract.AnnotationTemplateHash] == podtemplate.LiveHash(rs.Spec.Template) {
		if n, err := strconv.ParseInt(rs.Annotations[contract.AnnotationRevision], 10, 64); err == nil && n > 0 {
			rb.Revision = n
			rb.Commit = rs.Annotations[contract.AnnotationCommit]
		}
	}
	return rb
}

// message is the status line of a rollback done because of reason:
// "rolled back to revision 3 (commit abc1234): progress deadline exceeded
// after 600s", or, when the revision is unknown, "rolled back to the
// template of ReplicaSet web-5d9f8b7c4: ...".
func (rb Rollback) message(failed, reason string) string {
	target := "the template of ReplicaSet " + rb.ReplicaSet
	if rb.Revision > 0 {
		target = describeRevision(rb.Revision, rb.Commit)
	}
	return fmt.Sprintf("%s failed: %s; rolled back to %s", failed, reason, target)
}
