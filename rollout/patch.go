package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// statusSubresource is the Deployment subresource whose writes the API
// server takes without a new generation.
const statusSubresource = "status"

// patchDeployment writes want over live, the copy of it the controller
// planned from, as a patch of what differs: the labels and annotations
// that changed, one by one (a key live has and want has not is removed),
// and, when spec is set, the whole spec, replaced (a field want leaves out
// is removed, or defaulted again by the API server, as an update of the
// whole object would: a field Git dropped, or one kubectl added to the
// template, goes). It returns what the API server stored, or live when
// nothing differs.
//
// A patch carries no resourceVersion. The Deployment controller writes
// the Deployment's status (observedGeneration, counts, conditions) all
// along, and an update of the whole object made from the cache's copy
// lost the race to it with a conflict, to be planned and sent again. The
// fields a patch sets are the rollout controller's, the status the
// Deployment controller's: they cannot collide. Nor is a command that
// `kubectl annotate` set meanwhile lost: only the keys that differ are
// written.
//
// A patch of annotations alone (a status write: phase, message, step)
// goes to the status subresource. The API server's status strategy for
// Deployments keeps the spec and the labels as they are but takes the
// annotations, and it does not move metadata.generation; written to the
// Deployment itself, a change of annotations makes a new generation, which
// the Deployment controller must observe with a write of its own before
// any planner trusts its counts again. With 100 canaries of 5 steps, that
// is some 1,500 writes of the Deployment controller's saved, in the one
// controller (20 requests a second by default) every rollout waits on. It
// still copies the annotations to the newest ReplicaSet: one write of its
// own per status change, where there were two.
//
// A status write is the daemon's own bookkeeping, as the sync record is:
// it goes out with the controller's client, not as the sync's identity.
// Kubernetes' admin and edit roles give a team's ServiceAccount no write
// of deployments/status, and a rollout whose status could not be written
// would never be seen to move (see docs/syncs.md, "The rights of a
// sync").
//
// A write that clears the command it acted on (plimsoll.dev/command) goes
// as a JSON patch that first tests the command is still the one acted on:
// one set meanwhile with `kubectl annotate` fails the write, and the next
// reconcile acts on it, where a merge would have dropped it unseen.
func (c *Controller) patchDeployment(ctx context.Context, live, want *appsv1.Deployment, spec bool) (*appsv1.Deployment, error) {
	patchType := types.StrategicMergePatchType
	patch, target, err := deploymentPatch(live, want, spec)
	if cmd, ok := live.Annotations[contract.AnnotationCommand]; ok && want.Annotations[contract.AnnotationCommand] != cmd && err == nil && patch != nil {
		patchType = types.JSONPatchType
		patch, err = commandPatch(live, want, spec, cmd)
	}
	if err != nil || patch == nil {
		return live, err
	}
	var subresources []string
	writer := c.writerOf(live)
	if target == statusSubresource {
		subresources, writer = []string{statusSubresource}, c.client
	}
	out, err := writer.AppsV1().Deployments(live.Namespace).Patch(ctx, live.Name, patchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}, subresources...)
	if err != nil {
		return nil, fmt.Errorf("write Deployment %s: %w", live.Name, err)
	}
	return out, nil
}

// deploymentPatch is the strategic merge patch from live to want (see
// patchDeployment), nil when nothing differs, and the subresource to send
// it to: statusSubresource for a patch of annotations alone, else "".
func deploymentPatch(live, want *appsv1.Deployment, spec bool) (patch []byte, subresource string, err error) {
	meta := map[string]any{}
	if d := mapDelta(live.Labels, want.Labels); d != nil {
		meta["labels"] = d
	}
	if d := mapDelta(live.Annotations, want.Annotations); d != nil {
		meta["annotations"] = d
	}
	body := map[string]any{}
	if len(meta) > 0 {
		body["metadata"] = meta
	}
	if spec {
		raw, err := json.Marshal(want.Spec)
		if err != nil {
			return nil, "", fmt.Errorf("encode the spec of Deployment %s: %w", want.Name, err)
		}
		var s map[string]any
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, "", fmt.Errorf("encode the spec of Deployment %s: %w", want.Name, err)
		}
		s["$patch"] = "replace"
		body["spec"] = s
	}
	if len(body) == 0 {
		return nil, "", nil
	}
	if !spec && len(meta) == 1 && meta["annotations"] != nil {
		subresource = statusSubresource
	}
	patch, err = json.Marshal(body)
	if err != nil {
		return nil, "", fmt.Errorf("encode the patch of Deployment %s: %w", want.Name, err)
	}
	return patch, subresource, nil
}

// mapDelta is what a merge of want over have must carry: the keys whose
// value is new or changed, and null for those want drops; nil when the
// two are equal.
func mapDelta(have, want map[string]string) map[string]any {
	if maps.Equal(have, want) {
		return nil
	}
	d := map[string]any{}
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			d[k] = v
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			d[k] = nil
		}
	}
	return d
}

// commandPatch is the JSON patch of the write deploymentPatch describes,
// whose first operation tests that live's command is still cmd: the
// labels and annotations that change, one operation each, and the spec
// replaced whole when spec is set.
func commandPatch(live, want *appsv1.Deployment, spec bool, cmd string) ([]byte, error) {
	ops := []map[string]any{{"op": "test", "path": annotationPath(contract.AnnotationCommand), "value": cmd}}
	keyOps := func(field string, have, want map[string]string) {
		for _, k := range slices.Sorted(maps.Keys(mapDelta(have, want))) {
			path := "/metadata/" + field + "/" + jsonPointerEscape(k)
			if v, ok := want[k]; ok {
				ops = append(ops, map[string]any{"op": "add", "path": path, "value": v})
			} else {
				ops = append(ops, map[string]any{"op": "remove", "path": path})
			}
		}
	}
	if live.Labels == nil && len(want.Labels) > 0 {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": want.Labels})
	} else {
		keyOps("labels", live.Labels, want.Labels)
	}
	keyOps("annotations", live.Annotations, want.Annotations)
	if spec {
		ops = append(ops, map[string]any{"op": "replace", "path": "/spec", "value": want.Spec})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encode the patch of Deployment %s: %w", want.Name, err)
	}
	return patch, nil
}

// annotationPath is the JSON pointer of annotation key.
func annotationPath(key string) string {
	return "/metadata/annotations/" + jsonPointerEscape(key)
}

// jsonPointerEscape escapes a map key for a JSON pointer (RFC 6901):
// "plimsoll.dev/command" is "plimsoll.dev~1command".
func jsonPointerEscape(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

// mirror writes onto the ReplicaSet of w's template that Deployment d,
// as just written, controls what the Deployment controller's next sync
// of d would write there (strategies.MirrorOf): d's annotations, where
// they differ, and d's count, when that sync would scale the ReplicaSet
// to it. Nothing to mirror, or a ReplicaSet gone, is nothing to do. The
// ScalingReplicaSet Event that controller would have recorded on the
// Deployment is recorded here, in the same words, so that `kubectl
// describe deployment` tells the same story.
func (c *Controller) mirror(ctx context.Context, w *workload, d *appsv1.Deployment) error {
	rsets := make([]*appsv1.ReplicaSet, 0, len(w.rsets))
	for _, rs := range w.rsets {
		// What was written before the cache had it is not written again.
		rsets = append(rsets, c.mirrored.newest(rs))
	}
	m, ok := strategies.MirrorOf(d, rsets, d.Name == w.name)
	if !ok {
		return nil
	}
	body := map[string]any{"metadata": map[string]any{"annotations": m.Annotations}}
	if m.Replicas != nil {
		body["spec"] = map[string]any{"replicas": *m.Replicas}
	}
	patch, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode the patch of ReplicaSet %s: %w", m.ReplicaSet.Name, err)
	}
	rs := m.ReplicaSet
	out, err := c.workloadWriter(w).AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("copy Deployment %s to ReplicaSet %s: %w", d.Name, rs.Name, err)
	default:
		c.mirrored.wrote(out)
		if m.Replicas != nil {
			c.eventFor(ctx, d, corev1.EventTypeNormal, ReasonScalingReplicaSet, scalingMessage(rs.Name, *rs.Spec.Replicas, *m.Replicas))
		}
	}
	return nil
}

// scalingMessage is the line of a ScalingReplicaSet Event, as the
// Deployment controller words it: "Scaled down replica set api-7b5 from 4
// to 3".
func scalingMessage(rs string, from, to int32) string {
	way := "up"
	if to < from {
		way = "down"
	}
	return fmt.Sprintf("Scaled %s replica set %s from %d to %d", way, rs, from, to)
}

// The Progressing condition the Deployment controller sets when a
// Deployment is paused or resumed (see notePause).
const (
	reasonPaused   = "DeploymentPaused"
	reasonResumed  = "DeploymentResumed"
	messagePaused  = "Deployment is paused"
	messageResumed = "Deployment is resumed"
)

// notePause writes onto Deployment d, just paused or resumed by the
// controller, the Progressing condition the Deployment controller's next
// sync of d would write for it (see pauseCondition), and returns d as
// stored.
//
// The Deployment controller writes that condition with an update of d's
// status of its own, then goes on with the same sync from the copy it
// read, whose resourceVersion that update has just made stale: its
// second update, of observedGeneration and the counts, fails with a
// conflict, and d goes back on its queue to be synced a third time. Over
// 50 canaries, whose promotion pauses the canary and the stable and
// resumes the stable, that was 150 of the controller's 2,272 writes
// conflicting and 150 more made for the condition alone, from its budget
// of 20 a second every rollout waits on. Written here, the condition is
// found in place, and the sync makes one write.
//
// The patch carries d's resourceVersion: if the Deployment controller
// has written d since (its condition, or progress past it), the API
// server refuses it with a conflict, which leaves d as that controller
// wrote it, and is no error.
func (c *Controller) notePause(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	cond, ok := pauseCondition(d, metav1.NewTime(c.clock.Now()))
	if !ok {
		return d, nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": d.ResourceVersion},
		"status":   map[string]any{"conditions": []appsv1.DeploymentCondition{cond}},
	})
	if err != nil {
		return nil, fmt.Errorf("encode the Progressing condition of Deployment %s: %w", d.Name, err)
	}
	out, err := c.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}, statusSubresource)
	switch {
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return d, nil
	case err != nil:
		return nil, fmt.Errorf("write the Progressing condition of Deployment %s: %w", d.Name, err)
	}
	return out, nil
}

// pauseCondition returns the Progressing condition the Deployment
// controller sets on Deployment d for its spec.paused, at now, and
// whether it would set one, by its own rule: only for a Deployment with a
// progress deadline, never over a deadline exceeded, "DeploymentPaused"
// when d is paused and the condition does not say so yet,
// "DeploymentResumed" when d is not and it still does. The transition
// time stays when the status does (Unknown, both).
func pauseCondition(d *appsv1.Deployment, now metav1.Time) (appsv1.DeploymentCondition, bool) {
	if s := d.Spec.ProgressDeadlineSeconds; s == nil || *s == math.MaxInt32 {
		return appsv1.DeploymentCondition{}, false
	}
	cur := strategies.ProgressCondition(d)
	if cur != nil && cur.Reason == strategies.ReasonProgressDeadlineExceeded {
		return appsv1.DeploymentCondition{}, false
	}
	paused := cur != nil && cur.Reason == reasonPaused
	cond := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionUnknown,
		LastUpdateTime: now, LastTransitionTime: now}
	switch {
	case d.Spec.Paused && !paused:
		cond.Reason, cond.Message = reasonPaused, messagePaused
	case !d.Spec.Paused && paused:
		cond.Reason, cond.Message = reasonResumed, messageResumed
	default:
		return appsv1.DeploymentCondition{}, false
	}
	if cur != nil && cur.Status == cond.Status {
		cond.LastTransitionTime = cur.LastTransitionTime
	}
	return cond, true
}
