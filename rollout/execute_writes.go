package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// The writes of the executor's actions but a Deployment's own (see
// execute): a ReplicaSet's labels, owner and deletion, a Deployment's
// and a pod's deletion.

// deleteReplicaSet deletes ReplicaSet name of workload w and its pods, on
// the uid the caches hold; one gone already is nothing to do.
func (c *Controller) deleteReplicaSet(ctx context.Context, w *workload, name string) error {
	var uid *metav1.Preconditions
	if rs := w.replicaSet(name); rs != nil {
		uid = &metav1.Preconditions{UID: &rs.UID}
	}
	background := metav1.DeletePropagationBackground
	err := c.workloadWriter(w).AppsV1().ReplicaSets(w.ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ReplicaSet %s: %w", name, err)
	}
	return nil
}

// holdOut takes label key=value away from ReplicaSet name of workload w
// and records it as held out (see strategies.HeldOut), or, with restore,
// gives it back and drops the record. One gone already is nothing to do.
//
// The same patch takes the ReplicaSet out of the stable Deployment's
// hands, or puts it back in them, as the Deployment controller would once
// it saw the label go or come back: it releases a ReplicaSet its selector
// no longer selects (removes its owner reference) and adopts an orphan
// it selects (adds one). Left to it, each was one more of its writes per
// ReplicaSet, from the budget every rollout waits on, and a hand-over
// step that waited for its queue: over 50 canaries, 1.7 s for the
// release and 8 s for the adoption, per workload. The patch is the one
// it sends (a strategic merge of the owner references, keyed by uid),
// and it carries the ReplicaSet's uid, so that it never lands on a
// namesake. An adoption the API server refuses (a ReplicaSet that another
// controller took meanwhile, or an owner reference the daemon's identity
// may not set: blockOwnerDeletion asks for the right to update
// deployments/finalizers where OwnerReferencesPermissionEnforcement is
// on) is left to the Deployment controller's rules: the label alone goes
// back.
func (c *Controller) holdOut(ctx context.Context, w *workload, name, key, value string, restore bool) error {
	label, record, action := any(nil), any(key+"="+value), "hold out"
	if restore {
		label, record, action = value, nil, "give back"
	}
	meta := map[string]any{
		"labels":      map[string]any{key: label},
		"annotations": map[string]any{contract.AnnotationHeldOut: record},
	}
	if rs := w.replicaSet(name); rs != nil {
		meta["uid"] = rs.UID
	}
	if stable := w.deployment(""); stable != nil {
		if restore {
			meta["ownerReferences"] = []metav1.OwnerReference{*metav1.NewControllerRef(stable, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
		} else {
			meta["ownerReferences"] = []map[string]any{{"$patch": "delete", "uid": stable.UID}}
		}
	}
	err := c.patchReplicaSet(ctx, w, name, meta)
	if restore && (apierrors.IsInvalid(err) || apierrors.IsForbidden(err)) {
		delete(meta, "ownerReferences")
		err = c.patchReplicaSet(ctx, w, name, meta)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s label %s of ReplicaSet %s: %w", action, key, name, err)
	}
	return nil
}

// handOver gives ReplicaSet name of workload w, the canary Deployment's,
// to the stable Deployment: one patch takes the canary's owner reference
// away and adds the stable's (step 5 of a hand-over, see
// strategies.planHandOver). One gone already is nothing to do.
//
// The canary Deployment, deleted with the orphan propagation policy right
// after, no longer owns it, so the garbage collector has nothing to
// release, and the stable Deployment, paused on its template at its
// count, nothing to adopt. Left to them, the release was a patch of the
// garbage collector's and the adoption one of the Deployment
// controller's, from the budget of 20 requests a second every rollout
// waits on, and the hand-over's last step waited for both queues (0.5 s
// at the end of one canary of 50). The patch carries the ReplicaSet's
// uid, so that it never lands on a namesake. A patch the API server
// refuses (a namesake, an owner reference a sync's identity may not set:
// blockOwnerDeletion asks for the right to update deployments/finalizers
// where OwnerReferencesPermissionEnforcement is on) leaves the hand-over
// to those two controllers' rules: the canary still goes with the orphan
// policy, and the stable adopts what it leaves.
func (c *Controller) handOver(ctx context.Context, w *workload, name string) error {
	rs, stable, canary := w.replicaSet(name), w.deployment(""), w.deployment(contract.SuffixCanary)
	if rs == nil || stable == nil || canary == nil {
		return nil
	}
	meta := map[string]any{
		"uid": rs.UID,
		"ownerReferences": []any{
			map[string]any{"$patch": "delete", "uid": canary.UID},
			metav1.NewControllerRef(stable, appsv1.SchemeGroupVersion.WithKind("Deployment")),
		},
	}
	err := c.patchReplicaSet(ctx, w, name, meta)
	switch {
	case apierrors.IsNotFound(err):
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err):
		// Left to the garbage collector and the Deployment controller, as
		// the canary goes with the orphan policy.
		c.log.Info("the canary's ReplicaSet is left to the Deployment controller to hand over", "workload", w.ns+"/"+w.name,
			"replicaSet", name, "err", err)
	case err != nil:
		return fmt.Errorf("hand ReplicaSet %s to Deployment %s: %w", name, stable.Name, err)
	default:
		c.log.Info("handed the canary's ReplicaSet to the stable Deployment", "workload", w.ns+"/"+w.name, "replicaSet", name)
	}
	return nil
}

// patchReplicaSet sends a strategic merge patch of ReplicaSet name's
// metadata.
func (c *Controller) patchReplicaSet(ctx context.Context, w *workload, name string, meta map[string]any) error {
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	_, err = c.workloadWriter(w).AppsV1().ReplicaSets(w.ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// deleteDeployment deletes Deployment name of workload w with propagation
// policy, on the uid the caches hold: orphan leaves its ReplicaSets
// running without an owner (a hand-over's canary, whose ReplicaSet is
// the stable's by then: see handOver), background takes them with it.
// One gone already is nothing to do.
func (c *Controller) deleteDeployment(ctx context.Context, w *workload, name string, policy metav1.DeletionPropagation) error {
	d := w.deploys[name]
	if d == nil {
		return nil
	}
	err := c.workloadWriter(w).AppsV1().Deployments(w.ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy,
		Preconditions: &metav1.Preconditions{UID: &d.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Deployment %s: %w", name, err)
	}
	c.forgetDeployment(w.ns, name)
	return nil
}

// deletePod deletes pod name of workload w, on the uid and
// resourceVersion the caches hold: the planner judged the pod an orphan
// from that version, and a ReplicaSet that adopted it since (its owner
// references changed, so did its version) must keep it. A pod gone
// already, or changed since, is nothing to do: the change requeues the
// workload and the planner judges it again.
func (c *Controller) deletePod(ctx context.Context, w *workload, name string) error {
	var pre *metav1.Preconditions
	for _, p := range w.pods {
		if p.Name == name {
			pre = &metav1.Preconditions{UID: &p.UID, ResourceVersion: &p.ResourceVersion}
		}
	}
	if pre == nil {
		return nil
	}
	err := c.workloadWriter(w).CoreV1().Pods(w.ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: pre})
	if apierrors.IsConflict(err) {
		c.log.Debug("pod changed since it was judged an orphan; judging again", "workload", w.ns+"/"+w.name, "pod", name)
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s, left without an owner: %w", name, err)
	}
	return nil
}

// writeMetadata writes on d, Deployment <name> of Git Deployment git, the
// role (none for ""), without the annotations drop and without the labels
// and annotations that the controller wrote on d from Git and git no
// longer sets (see handEdits.dropped), in one merge patch; it returns d as
// written, nil when there was nothing to write.
func (c *Controller) writeMetadata(ctx context.Context, d, git *appsv1.Deployment, role strategies.Role, drop []string) (*appsv1.Deployment, error) {
	labels, annotations := c.hand.dropped(d, git)
	meta := map[string]map[string]any{"labels": {}, "annotations": {}}
	if role != "" {
		meta["annotations"][contract.AnnotationRole] = string(role)
	}
	for _, k := range labels {
		meta["labels"][k] = nil
	}
	for _, k := range slices.Concat(annotations, drop) {
		meta["annotations"][k] = nil
	}
	if len(meta["labels"])+len(meta["annotations"]) == 0 {
		return nil, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, fmt.Errorf("encode the metadata of Deployment %s: %w", d.Name, err)
	}
	out, err := c.writerOf(d).AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("write the metadata of Deployment %s: %w", d.Name, err)
	}
	c.written.wrote(out)
	return out, nil
}
