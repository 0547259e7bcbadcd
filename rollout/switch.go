package rollout

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// A workload whose strategy changes in Git keeps serving through the
// change. Into blue-green or canary, the strategies take over the rolling
// Deployment <name> themselves (as blue-green's legacy Deployment, or as
// canary's stable one). Back to rolling, <name> is applied from Git and
// becomes the primary again (plimsoll.dev/role: primary); once it is
// Healthy, the controller retires what the progressive strategy left:
//
//	blue-green: plimsoll.dev/color leaves the Services' selectors, so that
//	    they select <name>'s pods as well as the colors', then
//	    <name>-blue and <name>-green are deleted
//	canary: plimsoll.dev/serving leaves the Service's selector (every pod
//	    of <name> still carries the label), the canary pods lose it, then
//	    <name>-canary is deleted
//
// At no point does a Service select fewer pods than <name> runs Ready.

// progressiveKeys are the annotations a progressive strategy leaves on
// <name> that mean nothing to a rolling workload: its input keys, when Git
// no longer sets them, and its state.
var progressiveKeys = []string{
	contract.AnnotationStrategy, contract.AnnotationActiveService, contract.AnnotationPreviewService, contract.AnnotationService,
	contract.AnnotationAutoPromote, contract.AnnotationScaleDownDelay, contract.AnnotationSteps,
	contract.AnnotationReplicas, contract.AnnotationStep, contract.AnnotationStepSince, contract.AnnotationScaleDownAt, contract.AnnotationPaused,
}

// retireFromRolling prepares the live Deployment <name> of a workload that
// was blue-green's legacy Deployment or canary's stable one for a rolling
// apply of git: it removes the progressive annotations Git does not set
// (an apply does not remove fields another operation wrote), and returns
// the template labels the apply must keep so that the Service still
// selects the new pods (canary's serving label).
func (c *Controller) retireFromRolling(ctx context.Context, live, git *appsv1.Deployment) (map[string]string, error) {
	if live == nil {
		return nil, nil
	}
	var stale []string
	for _, k := range progressiveKeys {
		if _, inLive := live.Annotations[k]; inLive {
			if _, inGit := git.Annotations[k]; !inGit {
				stale = append(stale, k)
			}
		}
	}
	if len(stale) > 0 {
		var b strings.Builder
		for i, k := range stale {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:null", k)
		}
		patch := []byte(`{"metadata":{"annotations":{` + b.String() + `}}}`)
		if _, err := c.client.AppsV1().Deployments(live.Namespace).Patch(ctx, live.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return nil, fmt.Errorf("remove the annotations of the previous strategy: %w", err)
		}
	}
	keep := map[string]string{}
	if v := live.Spec.Template.Labels[contract.LabelServing]; v != "" {
		keep[contract.LabelServing] = v
	}
	return keep, nil
}

// retireProgressive deletes what a progressive strategy left of workload
// w once its rolling Deployment is Healthy: the colors of blue-green, the
// canary of canary, and their keys in the Services' selectors. It reports
// whether anything was left to retire.
func (c *Controller) retireProgressive(ctx context.Context, w *workload) (bool, error) {
	var left []*appsv1.Deployment
	for _, suffix := range sideSuffixes {
		if d := w.deployment(suffix); d != nil {
			left = append(left, d)
		}
	}
	if len(left) == 0 {
		return false, nil
	}
	// 1. Widen the Services: they select <name>'s pods from now on.
	for _, d := range left {
		for _, ref := range []struct{ annotation, key string }{
			{contract.AnnotationActiveService, contract.LabelColor},
			{contract.AnnotationPreviewService, contract.LabelColor},
			{contract.AnnotationService, contract.LabelServing},
		} {
			if err := c.setSelectorKey(ctx, w.services[d.Annotations[ref.annotation]], ref.key, nil); err != nil {
				return true, err
			}
		}
	}
	// 2. Take the canary pods out of traffic, then delete the Deployments.
	for _, d := range left {
		if d.Name == w.name+contract.SuffixCanary {
			if err := c.unlabelCanaryPods(ctx, w); err != nil {
				return true, err
			}
		}
		err := c.client.AppsV1().Deployments(w.ns).Delete(ctx, d.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &d.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return true, fmt.Errorf("delete Deployment %s of the previous strategy: %w", d.Name, err)
		}
		c.written.forget(w.ns, d.Name)
		c.specs.forget(w.ns, d.Name)
		c.templates.forget(w.ns, d.Name)
		c.log.Info("retired a Deployment of the previous strategy", "workload", w.ns+"/"+w.name, "deployment", d.Name)
	}
	return true, nil
}

// unlabelCanaryPods removes the serving label from every canary pod of
// workload w.
func (c *Controller) unlabelCanaryPods(ctx context.Context, w *workload) error {
	for _, p := range w.pods {
		if p.Labels[contract.LabelTrack] == contract.TrackCanary && p.Labels[contract.LabelServing] != "" {
			if err := c.labelPod(ctx, w.ns, p.Name, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// latestStatus returns the recorded status of the workload's colors when
// one has a later revision than recorded, else recorded.
func latestStatus(w *workload, recorded strategies.Status) strategies.Status {
	for _, suffix := range colorSuffixes {
		if d := w.deployment(suffix); d != nil {
			if st, err := strategies.ReadStatus(d.Annotations); err == nil && st.Revision > recorded.Revision {
				recorded = st
			}
		}
	}
	return recorded
}

// eventSwitched records that a workload finished switching to rolling.
func (c *Controller) eventSwitched(d *appsv1.Deployment) {
	c.eventFor(d, corev1.EventTypeNormal, ReasonPhase, "switched to the rolling strategy; retired the Deployments of the previous strategy")
}
