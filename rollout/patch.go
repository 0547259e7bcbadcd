package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

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
	if target == statusSubresource {
		subresources = []string{statusSubresource}
	}
	out, err := c.writerOf(live).AppsV1().Deployments(live.Namespace).Patch(ctx, live.Name, patchType, patch,
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

// notCopied are the annotations the Deployment controller does not copy
// from a Deployment to its newest ReplicaSet (its own, and kubectl's
// last applied configuration).
var notCopied = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
	"deployment.kubernetes.io/revision":                true,
	"deployment.kubernetes.io/revision-history":        true,
	"deployment.kubernetes.io/desired-replicas":        true,
	"deployment.kubernetes.io/max-replicas":            true,
	"deprecated.deployment.rollback.to":                true,
}

// mirror writes onto the ReplicaSet of w that Deployment d, as just
// written, controls and runs d's template what the Deployment
// controller's next sync of d would write there: d's annotations, where
// they differ, and d's count, when that sync would scale the ReplicaSet
// to it (see scaleOf).
//
// It copies every annotation of a Deployment to its newest ReplicaSet
// with an update, on each sync that finds them differ: each status that
// changes cost it one write more, from its budget of 20 requests a second
// that every rollout waits on, and a write that lost to the ReplicaSet
// controller's status updates with a conflict half the time (1,079 of
// 2,408 updates of ReplicaSets over 50 canaries and 50 blue-greens), to
// be queued and made again. A patch of the controller's own, made after
// the Deployment's (a ReplicaSet ahead of its Deployment reads as `kubectl
// rollout undo`, see rewound), leaves the Deployment controller nothing
// to copy, and carries no resourceVersion to conflict on. Nothing to
// mirror, or a ReplicaSet gone, is nothing to do; the template's
// ReplicaSet not made yet gets them when it is made.
//
// The count goes the same way. Each step of a canary scales the canary
// or the stable Deployment, and the Deployment controller scaled the
// ReplicaSet with an update and a ScalingReplicaSet Event of its own:
// over 50 canaries of 4 pods and 5 steps, 5 scales a revision, 10 of the
// 38 writes it made per workload. And the step's pods waited in its
// queue (9 s behind at 50 canaries, twice that at 100) before the
// ReplicaSet controller made or deleted them. Scaled here, in the same
// patch as the annotations, the ReplicaSet controller acts at once, and
// the Deployment controller finds the ReplicaSet at its Deployment's
// count with the annotations its own scale would have set: it writes the
// Deployment's status and nothing else. The ScalingReplicaSet Event it
// would have recorded on the Deployment is recorded here, in the same
// words, so that `kubectl describe deployment` tells the same story.
func (c *Controller) mirror(ctx context.Context, w *workload, d *appsv1.Deployment) error {
	// held are the stable's ReplicaSets a hand-over holds out, its own
	// again by the Deployment controller's next sync.
	var own, held []*appsv1.ReplicaSet
	for _, rs := range w.rsets {
		switch {
		case metav1.IsControlledBy(rs, d):
			// What was written before the cache had it is not written again.
			own = append(own, c.mirrored.newest(rs))
		case d.Name == w.name && strategies.IsHeldOut(rs):
			held = append(held, rs)
		}
	}
	rs := templateReplicaSet(d, own)
	if rs == nil || !revisionSettled(d, rs, append(held, own...)) {
		return nil
	}
	delta := map[string]any{}
	for k, v := range d.Annotations {
		if !notCopied[k] && rs.Annotations[k] != v {
			delta[k] = v
		}
	}
	body := map[string]any{}
	n, scale, scaled := scaleOf(d, rs, own)
	if scaled {
		maps.Copy(delta, scale)
		body["spec"] = map[string]any{"replicas": n}
	}
	if len(delta) == 0 {
		return nil
	}
	body["metadata"] = map[string]any{"annotations": delta}
	patch, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode the patch of ReplicaSet %s: %w", rs.Name, err)
	}
	out, err := c.writer(w.key()).AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("copy Deployment %s to ReplicaSet %s: %w", d.Name, rs.Name, err)
	default:
		c.mirrored.wrote(out)
		if scaled {
			c.eventFor(ctx, d, corev1.EventTypeNormal, ReasonScalingReplicaSet, scalingMessage(rs.Name, *rs.Spec.Replicas, n))
		}
	}
	return nil
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
	n := strategies.DeploymentRevision(rs)
	if n < 0 || rs.Annotations[strategies.AnnotationDeploymentRevision] != d.Annotations[strategies.AnnotationDeploymentRevision] {
		return false
	}
	for _, other := range own {
		if other.UID != rs.UID && strategies.DeploymentRevision(other) >= n {
			return false
		}
	}
	return true
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

// templateReplicaSet returns the one ReplicaSet of own (those Deployment
// d controls) that runs d's template, nil for none or several.
func templateReplicaSet(d *appsv1.Deployment, own []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	var found *appsv1.ReplicaSet
	for _, rs := range own {
		if !strategies.SameTemplate(rs.Spec.Template, d.Spec.Template) {
			continue
		}
		if found != nil {
			return nil
		}
		found = rs
	}
	return found
}

// The annotations the Deployment controller's scale of a ReplicaSet sets
// (SetReplicasAnnotations): its Deployment's count, and that count plus
// the surge its strategy allows.
const (
	annotationDesiredReplicas = "deployment.kubernetes.io/desired-replicas"
	annotationMaxReplicas     = "deployment.kubernetes.io/max-replicas"
)

// scaleOf returns the count the Deployment controller's next sync of
// Deployment d would scale rs, the ReplicaSet of d's template, to, with
// the annotations that scale would set, and whether it would scale rs at
// all: only when d asks for another count than rs's, rs is not being
// deleted, and no other ReplicaSet of d (own: all of them, rs among
// them) asks for pods. Then d's sync, paused or not, finds rs the one
// active ReplicaSet (or, with none active, the one of its template) and
// scales it to d's count (its scale, and before it its check for a
// scaling event, which reads desired-replicas). With another one active a
// rolling update or a proportional scale is under way, whose arithmetic
// is the Deployment controller's to do.
//
// With 4 replicas and Git's strategy (25% surge), the canary's stable
// going from 4 to 3 pods gets spec.replicas 3, desired-replicas "3" and
// max-replicas "4" (3 plus 25% of 3, rounded up).
func scaleOf(d *appsv1.Deployment, rs *appsv1.ReplicaSet, own []*appsv1.ReplicaSet) (int32, map[string]any, bool) {
	if d.Spec.Replicas == nil || rs.Spec.Replicas == nil || *rs.Spec.Replicas == *d.Spec.Replicas || rs.DeletionTimestamp != nil {
		return 0, nil, false
	}
	for _, other := range own {
		if other.UID != rs.UID && (other.Spec.Replicas == nil || *other.Spec.Replicas > 0) {
			return 0, nil, false
		}
	}
	n := *d.Spec.Replicas
	return n, map[string]any{
		annotationDesiredReplicas: strconv.Itoa(int(n)),
		annotationMaxReplicas:     strconv.Itoa(int(n + maxSurge(d))),
	}, true
}

// maxSurge is the surge Deployment d's strategy allows over its count,
// as the Deployment controller resolves it (MaxSurge): a percentage of
// the count rounded up, 0 for Recreate or a value that does not parse.
func maxSurge(d *appsv1.Deployment) int32 {
	spec := defaulted(d.Spec)
	ru := spec.Strategy.RollingUpdate
	if spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil {
		return 0
	}
	n := int(*spec.Replicas)
	surge, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, n, true)
	if err != nil {
		return 0
	}
	if _, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, n, false); err != nil {
		return 0
	}
	return int32(surge)
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
	out, err := c.writerOf(d).AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.StrategicMergePatchType, patch,
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
