package rollout

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
// ns/name once its rolling Deployment is Healthy: the colors of
// blue-green, the canary of canary, and their keys in the Services'
// selectors. It reports whether anything was left to retire.
func (c *Controller) retireProgressive(ctx context.Context, ns, name string) (bool, error) {
	var left []*appsv1.Deployment
	for _, suffix := range []string{"-blue", "-green", "-canary"} {
		d, err := c.getDeployment(ctx, ns, name+suffix)
		if err != nil {
			return false, err
		}
		if d != nil && d.Labels[contract.LabelWorkload] == name {
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
			if err := c.dropSelectorKey(ctx, ns, d.Annotations[ref.annotation], ref.key); err != nil {
				return true, err
			}
		}
	}
	// 2. Take the canary pods out of traffic, then delete the Deployments.
	for _, d := range left {
		if d.Name == name+"-canary" {
			if err := c.unlabelCanaryPods(ctx, ns, name); err != nil {
				return true, err
			}
		}
		err := c.client.AppsV1().Deployments(ns).Delete(ctx, d.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &d.UID}})
		if err != nil && !isNotFound(err) {
			return true, fmt.Errorf("delete Deployment %s of the previous strategy: %w", d.Name, err)
		}
		c.log.Info("retired a Deployment of the previous strategy", "workload", ns+"/"+name, "deployment", d.Name)
	}
	return true, nil
}

// dropSelectorKey removes key from the selector of Service name, if it is
// there; a Service that is gone, or no name, is nothing to do.
func (c *Controller) dropSelectorKey(ctx context.Context, ns, name, key string) error {
	if name == "" {
		return nil
	}
	svc, err := c.client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read Service %s: %w", name, err)
	}
	if _, ok := svc.Spec.Selector[key]; !ok {
		return nil
	}
	patch := fmt.Appendf(nil, `{"spec":{"selector":{%q:null}}}`, key)
	if _, err := c.client.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("remove %s from the selector of Service %s: %w", key, name, err)
	}
	return nil
}

// unlabelCanaryPods removes the serving label from every canary pod of
// workload ns/name.
func (c *Controller) unlabelCanaryPods(ctx context.Context, ns, name string) error {
	pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelWorkload + "=" + name +
		"," + contract.LabelTrack + "=" + contract.TrackCanary + "," + contract.LabelServing})
	if err != nil {
		return fmt.Errorf("list the canary pods of %s/%s: %w", ns, name, err)
	}
	for _, p := range pods.Items {
		if err := c.labelPod(ctx, ns, p.Name, nil); err != nil {
			return err
		}
	}
	return nil
}

// latestStatus returns the recorded status of the workload's colors when
// one has a later revision than recorded, else recorded.
func (c *Controller) latestStatus(ctx context.Context, ns, name string, recorded strategies.Status) (strategies.Status, error) {
	for _, color := range []strategies.Color{strategies.ColorBlue, strategies.ColorGreen} {
		d, err := c.getDeployment(ctx, ns, name+"-"+string(color))
		if err != nil || d == nil {
			return recorded, err
		}
		st, err := strategies.ReadStatus(d.Annotations)
		if err != nil {
			return recorded, err
		}
		if st.Revision > recorded.Revision {
			recorded = st
		}
	}
	return recorded, nil
}

// isPrimary reports whether d is the Deployment of a rolling workload, as
// syncRolling marks it.
func isPrimary(d *appsv1.Deployment) bool {
	return d != nil && d.Annotations[contract.AnnotationRole] == string(strategies.RolePrimary)
}

// setRole sets plimsoll.dev/role on d.
func (c *Controller) setRole(ctx context.Context, d *appsv1.Deployment, role strategies.Role) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.AnnotationRole, role)
	if _, err := c.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("set the role of Deployment %s: %w", d.Name, err)
	}
	return nil
}

// eventSwitched records that a workload finished switching to rolling.
func (c *Controller) eventSwitched(d *appsv1.Deployment) {
	c.events.Event(d, corev1.EventTypeNormal, ReasonPhase, "switched to the rolling strategy; retired the Deployments of the previous strategy")
}

// ServingDeployment returns the live Deployment that serves a Git
// Deployment, as it should read when the sync has nothing to do for it,
// or nil to compare the Git Deployment with its live namesake like any
// other object. It is not nil in two cases:
//   - a blue-green workload: the active color (the one the active Service
//     selects, or the one with role active), renamed to Git's name and
//     without the color in its selector and template, so that it reads
//     like the Git Deployment it came from (nil while no color serves);
//   - a Git template the controller refuses (its hash is the workload's
//     failed-hash): the serving Deployment with Git's template in place of
//     the one that runs, since the refusal, not the sync, keeps it out.
func (c *Controller) ServingDeployment(ctx context.Context, git *appsv1.Deployment) (*appsv1.Deployment, error) {
	serving, err := c.servingAs(ctx, git)
	if err != nil || serving == nil {
		return nil, err
	}
	st, err := strategies.ReadStatus(serving.Annotations)
	switch {
	case err != nil:
		return nil, err
	case st.FailedHash != "" && st.FailedHash == strategies.TemplateHash(git.Spec.Template):
		serving.Spec.Template = *git.Spec.Template.DeepCopy()
	case git.Annotations[contract.AnnotationStrategy] != contract.StrategyBlueGreen:
		return nil, nil // its namesake, as it runs
	}
	return serving, nil
}

// servingAs returns the live Deployment that serves Git Deployment git
// under Git's name: the active blue-green color, renamed, or the namesake.
func (c *Controller) servingAs(ctx context.Context, git *appsv1.Deployment) (*appsv1.Deployment, error) {
	if git.Annotations[contract.AnnotationStrategy] != contract.StrategyBlueGreen {
		return c.getDeployment(ctx, git.Namespace, git.Name)
	}
	for _, color := range []strategies.Color{strategies.ColorBlue, strategies.ColorGreen} {
		d, err := c.getDeployment(ctx, git.Namespace, git.Name+"-"+string(color))
		if err != nil {
			return nil, err
		}
		if d == nil || d.Annotations[contract.AnnotationRole] != string(strategies.RoleActive) {
			continue
		}
		d.Name = git.Name
		if d.Spec.Selector != nil {
			delete(d.Spec.Selector.MatchLabels, contract.LabelColor)
		}
		delete(d.Spec.Template.Labels, contract.LabelColor)
		return d, nil
	}
	return nil, nil
}
