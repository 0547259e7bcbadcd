package rollout

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/fields"
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/strategies"
)

// clearCommand removes command cmd from Deployment d, unless the
// annotation has changed since: a newer command is not the one acted on.
func (c *Controller) clearCommand(ctx context.Context, d *appsv1.Deployment, cmd string) error {
	path := annotationPath(contract.AnnotationCommand)
	patch := fmt.Appendf(nil, `[{"op":"test","path":%q,"value":%q},{"op":"remove","path":%q}]`, path, cmd, path)
	_, err := c.writerOf(d).AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsInvalid(err):
		// Cleared, gone, or the command is no longer cmd (the API server
		// answers a failed test with 422 Invalid).
		return nil
	}
	return fmt.Errorf("clear %s=%s on Deployment %s: %w", contract.AnnotationCommand, cmd, d.Name, err)
}

// labelPod sets plimsoll.dev/serving on a pod to *value, with
// plimsoll.dev/served, or removes both when value is nil. A pod taken
// out also gets the lowest deletion cost of its ReplicaSet's pods
// (controller.kubernetes.io/pod-deletion-cost, which the others leave
// at 0), so that when its ReplicaSet shrinks it deletes the pod out of
// the Service, not one that serves; a pod put back loses it. A pod gone
// meanwhile is no error: its replacement is labelled when Ready.
func (c *Controller) labelPod(ctx context.Context, ns, pod string, value *string) error {
	v, cost := "null", fmt.Sprintf("%q", outOfServiceCost)
	if value != nil {
		v, cost = fmt.Sprintf("%q", *value), "null"
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%s},"annotations":{%q:%s,%q:%s}}}`,
		contract.LabelServing, v, contract.AnnotationServed, v, corev1.PodDeletionCost, cost)
	out, err := c.writerOfPod(ns, pod).CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("label pod %s serving=%s: %w", pod, v, err)
	}
	c.labelled.wrote(out)
	return nil
}

// writeDeployment creates want when live is nil, else writes what differs
// between live and want (see patchDeployment) unless live holds want
// already (see holds) and want restores no template changed by hand (see
// restoring): an unchanged Deployment is not written. The spec goes with
// the write whenever it differs at all from what the API server stores
// (a strategy put back to Git's default, a field Git dropped; see
// defaulted) or restores a template; a status write leaves it out. What
// the API server returns is remembered until the cache has it (see
// recentWrites).
func (c *Controller) writeDeployment(ctx context.Context, live, want *appsv1.Deployment) error {
	if live == nil {
		created, err := c.writerOf(want).AppsV1().Deployments(want.Namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager})
		if err == nil && created.Spec.Paused {
			created, err = c.notePause(ctx, created)
		}
		if err != nil {
			return fmt.Errorf("create Deployment %s: %w", want.Name, err)
		}
		c.written.wrote(created)
		return nil
	}
	restore := c.restoring(live, want)
	if holds(live, want) && !restore {
		return nil
	}
	if restore {
		var err error
		if want, err = c.claimHandEditFields(ctx, live, want); err != nil {
			return err
		}
	}
	// A spec from Git leaves out what the API server defaults: compared as
	// written, it differed from the live spec it would not change, and the
	// write carried the spec, to the Deployment itself, where a change of
	// annotations makes a new generation too. At the start of each canary
	// revision the stable Deployment, given Git's strategy ({}), took its
	// new status in such a write, and the Deployment controller synced it,
	// wrote its status and copied the annotations to its ReplicaSet,
	// racing the copy of ours.
	spec := restore || !reflect.DeepEqual(live.Spec, podtemplate.DeploymentSpec(want.Spec))
	scaledBy := c.hand.scaledBy(live)
	updated, err := c.patchDeployment(ctx, live, want, spec)
	if err == nil && updated.Spec.Paused != live.Spec.Paused {
		updated, err = c.notePause(ctx, updated)
	}
	if err != nil {
		return err
	}
	c.written.wrote(updated)
	c.specs.wrote(live, updated)
	c.wroteTemplate(ctx, live, want, updated)
	c.wroteCount(ctx, live, updated, scaledBy)
	return nil
}

// wroteCount tells of a write of Deployment live, returned as out, that
// put its own count back over one set outside the controller (`kubectl
// scale`, `kubectl edit`, a dashboard; see handEdits.scaledBy): a log
// line and a ScaleRestored Warning Event. A write that keeps such a count
// (the plan waits for the endpoints before it scales down) leaves it
// remembered, for the write that puts the count back to tell. The count
// the Deployment controller's autoscaler set is no such change: the
// controller writes over it only when an autoscaler has stopped
// targeting the Deployment (a blue-green color that lost traffic scales
// down). by is c.hand.scaledBy(live), read before the write: the write's
// own watch event may have replaced what was noted of live by then.
func (c *Controller) wroteCount(ctx context.Context, live, out *appsv1.Deployment, by string) {
	switch {
	case by == "" || by == autoscalerManager || live.Spec.Replicas == nil || out.Spec.Replicas == nil:
		return
	case *live.Spec.Replicas == *out.Spec.Replicas:
		c.hand.keepScaledBy(out, by)
		return
	}
	c.hand.forgetScaledBy(out.Namespace, out.Name)
	c.log.Info("restored a replica count changed outside Git", "workload", out.Namespace+"/"+out.Labels[contract.LabelWorkload],
		"deployment", out.Name, "from", *live.Spec.Replicas, "to", *out.Spec.Replicas, "by", by)
	c.eventFor(ctx, out, corev1.EventTypeWarning, ReasonScaleRestored, fmt.Sprintf("the count was set to %d outside Git (by %s): %d written again",
		*live.Spec.Replicas, by, *out.Spec.Replicas))
}

// holds reports whether live already is want as far as a write of want
// would change it: the same labels and annotations, and a spec that holds
// every field want's spec sets (want built from Git leaves the API
// server's defaults out; see fields.Hold).
func holds(live, want *appsv1.Deployment) bool {
	return metaHolds(live, want) && specHolds(live, want)
}

// metaHolds reports whether live has want's labels and annotations.
func metaHolds(live, want *appsv1.Deployment) bool {
	return maps.Equal(live.Labels, want.Labels) && maps.Equal(live.Annotations, want.Annotations)
}

// specHolds reports whether live's spec holds every field want's sets,
// and is paused as want is: false, the zero value, is a field want's
// spec does not set when it resumes one.
func specHolds(live, want *appsv1.Deployment) bool {
	if reflect.DeepEqual(live.Spec, want.Spec) {
		return true
	}
	if live.Spec.Paused != want.Spec.Paused {
		return false
	}
	// Git's spec leaves out what the API server defaults. Filled in as
	// the API server fills it in, it is the live spec in the common case,
	// and two structs compare for much less than the conversions below:
	// they took 14% of the daemon's CPU in a canary rollout of 300
	// workloads, at every reconcile of each Deployment. Equal is enough
	// (defaults only fill fields want leaves out); unequal is not, as a
	// quantity or an empty list written in another form than the API
	// server's, or a field another writer added, differ here and not there.
	full := podtemplate.DeploymentSpec(want.Spec)
	full.Template = podtemplate.Defaulted(full.Template)
	if reflect.DeepEqual(live.Spec, full) {
		return true
	}
	got, err1 := runtime.DefaultUnstructuredConverter.ToUnstructured(&live.Spec)
	exp, err2 := runtime.DefaultUnstructuredConverter.ToUnstructured(&want.Spec)
	return err1 == nil && err2 == nil && fields.Hold(got, exp)
}

// holdRefused records the refusal of a workload's Git Deployment (see
// commitHandoff.Refuse) on its live Deployments (see markInvalid).
func (c *Controller) holdRefused(ctx context.Context, w *workload, in intent) error {
	var deploys []*appsv1.Deployment
	for _, name := range workloadDeployments(in.refusedGit) {
		deploys = append(deploys, w.deploys[name])
	}
	return c.markInvalid(ctx, w, in.refused, in.refusedGit.Annotations, deploys...)
}

// markInvalid records err, an input error met while reading a workload,
// as the message of every given Deployment, phase Degraded, with the
// plimsoll.dev/ annotations of Git (git; nil keeps the live ones), which
// name what is wrong, so that a reconcile without the sync's intent meets
// the same error. The strategy is not copied: a workload keeps being
// reconciled by the strategy it runs with. Nothing else changes: the pods
// run on as they are, and the workload waits for Git to change (no retry).
// Any other error is returned, to be retried.
func (c *Controller) markInvalid(ctx context.Context, w *workload, err error, git map[string]string, deploys ...*appsv1.Deployment) error {
	if !isInputError(err) {
		return err
	}
	var suffixes []string
	for _, d := range deploys {
		if d != nil {
			suffixes = append(suffixes, strings.TrimPrefix(d.Name, w.name))
		}
	}
	if err := c.execute(ctx, &execution{w: w}, strategies.PlanInvalid(suffixes, git, err.Error())); err != nil {
		return err
	}
	c.log.Info("workload cannot be rolled out as written", "workload", w.ns+"/"+w.name, "err", err)
	return nil
}
