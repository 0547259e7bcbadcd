package rollout

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
	workloads "plimsoll.dev/plimsoll/workload"
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

// previousStrategy names the strategy other than target that workload
// w's Deployments were written for, "" when none (see
// workloads.PreviousStrategy).
func previousStrategy(w *workload, target string) string {
	s, _ := workloads.PreviousStrategy(w.name, w.lookup, target) // w.lookup never fails
	return s
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

// forgetDeployment drops what the controller remembers of Deployment
// ns/name, deleted.
func (c *Controller) forgetDeployment(ns, name string) {
	c.written.forget(ns, name)
	c.specs.forget(ns, name)
	c.templates.forget(ns, name)
	c.hand.forget(ns, name)
}

// runRetirement observes what the strategy before target left of
// workload w, its Deployments of suffixes, and executes what
// strategies.PlanRetirement plans of it: carrier is the Service that
// carries target's traffic (nil for rolling), phase the phase a rolling
// workload's plan records, and keep the workload's count. It is the one
// place a switch of strategy retires anything; primary, the workload's
// primary Deployment, gets the Event that says the switch is done.
func (c *Controller) runRetirement(ctx context.Context, w *workload, target string, carrier *corev1.Service, phase strategies.Phase, keep int32,
	primary *appsv1.Deployment, suffixes ...string) error {
	r := strategies.Retiring{Workload: w.name, Target: target, Primary: isPrimary(primary), Phase: phase, Keep: keep,
		Selectors: map[string]map[string]string{}, Ready: w.ready}
	if carrier != nil {
		r.Carrier, r.CarrierSelector = carrier.Name, carrier.Spec.Selector
	}
	for _, suffix := range suffixes {
		if d := w.deployment(suffix); d != nil {
			r.Left = append(r.Left, d)
			for _, key := range serviceKeys {
				if svc := w.services[d.Annotations[key]]; svc != nil {
					r.Selectors[svc.Name] = svc.Spec.Selector
				}
			}
		}
	}
	for _, p := range w.canaryPods() {
		if p.Labels[contract.LabelServing] != "" {
			r.Serving = append(r.Serving, p.Name)
		}
	}
	actions, done := strategies.PlanRetirement(r)
	if len(actions) == 0 {
		return nil
	}
	from := previousStrategy(w, target)
	if err := c.execute(ctx, &execution{w: w}, actions); err != nil {
		return err
	}
	if done {
		c.eventSwitched(ctx, primary, from, target, r.Left)
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
