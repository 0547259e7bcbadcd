package rollout

import (
	"context"
	"fmt"
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

// A workload whose strategy changes in Git keeps serving through the
// change: what the old strategy runs serves until the new strategy's
// Deployment is ready, then the Service moves over in one selector write
// (which drops the old strategy's key as it adds the new one), and only
// then is the old strategy's Deployments retired, once the Service's
// endpoints no longer need their pods. With N replicas the Service never
// has fewer than N ready endpoints:
//
//	rolling to blue-green: <name> serves (role idle) while the first color
//	    comes up; the swap adds the color to the selector; <name> scales to
//	    0 after the scale-down delay (and stays, at 0: the sync's inventory
//	    names it).
//	canary to blue-green: the same, <name> being the stable Deployment;
//	    the swap also drops plimsoll.dev/serving; <name>-canary is deleted
//	    once its pods have left the endpoints.
//	rolling to canary: <name> becomes the stable Deployment; its template
//	    gets the serving label (grown for it, so that N stay available),
//	    then the Service selects serving pods, then the canary steps run.
//	blue-green to canary: <name> is made the stable Deployment from the
//	    template of the color that serves (the last revision that went
//	    live), labelled serving; once it is available the selector drops
//	    the color and selects serving pods, and the colors are deleted
//	    once their pods have left the endpoints; then the canary steps run.
//	back to rolling: <name> is applied from Git and becomes the primary
//	    (role primary); a template it takes over from a canary's stable is
//	    rolled out surging, never below N available. Once it is Healthy, the
//	    old keys leave the selectors (so they select <name>'s pods as well),
//	    and the colors or the canary are deleted once the endpoints hold
//	    <name>'s pods.
//
// The revision counts on from the old strategy's status; its state (step,
// pause, scale-down time, analysis run) and a rolling workload's paused
// spec do not carry over: the new strategy starts from Git's annotations.
// Each switch is told by a PhaseChanged Event naming both strategies.

// progressiveKeys are the annotations a progressive strategy leaves on
// <name> that mean nothing to a rolling workload: its input keys, when Git
// no longer sets them, and its state.
var progressiveKeys = slices.Concat([]string{
	contract.AnnotationStrategy, contract.AnnotationActiveService, contract.AnnotationPreviewService, contract.AnnotationService,
	contract.AnnotationAutoPromote, contract.AnnotationScaleDownDelay, contract.AnnotationSteps,
}, contract.StateKeys)

// previousStrategy names the strategy other than target that workload w's
// Deployments were written for: blue-green while it has colors, canary
// while it has a canary Deployment or <name> is a canary's stable one,
// rolling while <name> is a rolling workload's primary; "" when they run
// target's alone.
func previousStrategy(w *workload, target string) string {
	role := strategies.Role(annotationsOf(w.deployment(""))[contract.AnnotationRole])
	ran := map[string]bool{
		contract.StrategyRolling:   role == strategies.RolePrimary,
		contract.StrategyBlueGreen: w.hasAny(colorSuffixes),
		contract.StrategyCanary:    w.deployment(contract.SuffixCanary) != nil || role == strategies.RoleStable,
	}
	for _, s := range []string{contract.StrategyRolling, contract.StrategyBlueGreen, contract.StrategyCanary} {
		if s != target && ran[s] {
			return s
		}
	}
	return ""
}

// eventSwitching records on d that workload switches strategy, from to
// to; how says what happens meanwhile.
func (c *Controller) eventSwitching(ctx context.Context, d *appsv1.Deployment, from, to, how string) {
	if d == nil || from == "" {
		return
	}
	c.log.Info("switching strategy", "workload", d.Namespace+"/"+d.Labels[contract.LabelWorkload], "from", from, "to", to)
	c.eventFor(ctx, d, corev1.EventTypeNormal, ReasonPhase, fmt.Sprintf("switching from %s to %s: %s", from, to, how))
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
		if _, err := c.writerOf(live).AppsV1().Deployments(live.Namespace).Patch(ctx, live.Name, types.MergePatchType, patch,
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

// retireProgressive retires what a progressive strategy left of workload
// w once its rolling Deployment live is Healthy: the colors of blue-green,
// the canary of canary, and their keys in the Services' selectors. It
// reports whether anything was left to retire.
func (c *Controller) retireProgressive(ctx context.Context, w *workload, live *appsv1.Deployment) (bool, error) {
	var left []*appsv1.Deployment
	for _, suffix := range sideSuffixes {
		if d := w.deployment(suffix); d != nil {
			left = append(left, d)
		}
	}
	if len(left) == 0 {
		return false, nil
	}
	from := previousStrategy(w, contract.StrategyRolling)
	// 1. Widen the Services: they select <name>'s pods from now on.
	for _, d := range left {
		for _, ref := range []struct{ annotation, key string }{
			{contract.AnnotationActiveService, contract.LabelColor},
			{contract.AnnotationPreviewService, contract.LabelColor},
			{contract.AnnotationService, contract.LabelServing},
		} {
			if err := c.steer(ctx, w, w.services[d.Annotations[ref.annotation]], selectorChange{drop: []string{ref.key}}); err != nil {
				return true, err
			}
		}
	}
	// 2. Take the canary pods out of traffic, then delete the Deployments
	// whose pods the endpoints no longer need.
	if w.deployment(contract.SuffixCanary) != nil {
		if err := c.unlabelCanaryPods(ctx, w); err != nil {
			return true, err
		}
	}
	done, err := c.retireDeployments(ctx, w, specReplicas(live), left...)
	if done && err == nil {
		c.eventSwitched(ctx, live, from, contract.StrategyRolling, left)
	}
	return true, err
}

// retireDeployments deletes the Deployments deploys of workload w that
// the strategy it switched to no longer runs, each once the Service it
// carried traffic for (the annotation plimsoll.dev/active-service or
// plimsoll.dev/service names it) no longer needs its pods (see
// strategies.Unneeded). It reports whether every one of deploys is gone;
// the others are looked at again when the endpoints change (their events
// queue the workload).
func (c *Controller) retireDeployments(ctx context.Context, w *workload, keep int32, deploys ...*appsv1.Deployment) (bool, error) {
	return c.deleteDeployments(ctx, w.ns, w.name, "of the previous strategy", func(d *appsv1.Deployment) bool { return c.unneeded(w, d, keep) }, deploys)
}

// deleteDeployments deletes the Deployments deploys of workload ns/name
// for which gone holds (nil: all of them), each on the condition that it
// is still the object read (its UID), and forgets them; why says which
// they are, in errors and logs. It reports whether every one is deleted.
// It is the one way a workload's Deployment is deleted: by a switch of
// strategy (retireDeployments) or by the workload leaving Git
// (removeWorkload).
func (c *Controller) deleteDeployments(ctx context.Context, ns, name, why string, gone func(*appsv1.Deployment) bool, deploys []*appsv1.Deployment) (bool, error) {
	done := true
	for _, d := range deploys {
		if gone != nil && !gone(d) {
			done = false
			continue
		}
		err := c.writerOf(d).AppsV1().Deployments(ns).Delete(ctx, d.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &d.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete Deployment %s %s: %w", d.Name, why, err)
		}
		c.forgetDeployment(ns, d.Name)
		c.log.Info("deleted a Deployment "+why, "workload", ns+"/"+name, "deployment", d.Name)
	}
	return done, nil
}

// unneeded reports whether the pods of Deployment d of workload w may go
// (see strategies.Unneeded), by the ready endpoints of the Service d
// carried traffic for.
func (c *Controller) unneeded(w *workload, d *appsv1.Deployment, keep int32) bool {
	svc := d.Annotations[contract.AnnotationActiveService]
	if svc == "" {
		svc = d.Annotations[contract.AnnotationService]
	}
	return strategies.Unneeded(w.ready[svc], d.Name, keep)
}

// forgetDeployment drops what the controller remembers of Deployment
// ns/name, deleted.
func (c *Controller) forgetDeployment(ns, name string) {
	c.written.forget(ns, name)
	c.specs.forget(ns, name)
	c.templates.forget(ns, name)
	c.hand.forget(ns, name)
}

// retireBefore retires what the strategy before target left of workload
// w once the Service svc carries target's traffic (its selector has
// target's key and none of the other strategy's): the Deployments of
// suffixes, deleted once the endpoints no longer need their pods (see
// retireDeployments), and the old strategy's key in the other Services
// its Deployments steered (a preview Service, or one the old strategy
// named and the new one does not), so that none of them is left selecting
// pods that are gone. keep is the workload's count; primary, its primary
// Deployment, gets the Event that says the switch is done.
func (c *Controller) retireBefore(ctx context.Context, w *workload, target string, svc *corev1.Service, keep int32, primary *appsv1.Deployment, suffixes ...string) error {
	if svc == nil || !strategies.MovedOver(target, svc.Spec.Selector) {
		return nil // the Service has not moved over yet
	}
	_, old := strategies.TrafficKeys(target)
	var left []*appsv1.Deployment
	for _, suffix := range suffixes {
		if d := w.deployment(suffix); d != nil {
			left = append(left, d)
		}
	}
	if len(left) == 0 {
		return nil
	}
	from := previousStrategy(w, target)
	for _, d := range left {
		for _, ann := range serviceKeys {
			if other := w.services[d.Annotations[ann]]; other != nil && other.Name != svc.Name {
				if err := c.steer(ctx, w, other, selectorChange{drop: []string{old}}); err != nil {
					return err
				}
			}
		}
	}
	done, err := c.retireDeployments(ctx, w, keep, left...)
	if done && err == nil {
		c.eventSwitched(ctx, primary, from, target, left)
	}
	return err
}

// unlabelCanaryPods removes the serving label from every canary pod of
// workload w.
func (c *Controller) unlabelCanaryPods(ctx context.Context, w *workload) error {
	for _, p := range w.canaryPods() {
		if p.Labels[contract.LabelServing] != "" {
			if err := c.labelPod(ctx, w.ns, p.Name, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// colorStatuses returns the status each blue-green color of workload w
// records, in the order of colorSuffixes; a zero Status for a color whose
// status does not parse, which is no revision at all.
func colorStatuses(w *workload) []strategies.Status {
	var out []strategies.Status
	for _, suffix := range colorSuffixes {
		if d := w.deployment(suffix); d != nil {
			st, _ := strategies.ReadStatus(d.Annotations)
			out = append(out, st)
		}
	}
	return out
}

// eventSwitched records on d that its workload finished switching from
// strategy from to to, having retired the Deployments gone.
func (c *Controller) eventSwitched(ctx context.Context, d *appsv1.Deployment, from, to string, gone []*appsv1.Deployment) {
	if d == nil {
		return
	}
	names := make([]string, len(gone))
	for i, g := range gone {
		names[i] = g.Name
	}
	if from == "" {
		from = "the previous strategy"
	}
	c.eventFor(ctx, d, corev1.EventTypeNormal, ReasonPhase, fmt.Sprintf("switched from %s to %s; retired %s", from, to, strings.Join(names, ", ")))
}
