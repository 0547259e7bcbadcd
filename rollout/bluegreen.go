package rollout

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// blueGreen is the live state of a blue-green workload as read for one
// step.
type blueGreen struct {
	ns, name        string
	blue, green     *appsv1.Deployment
	legacy          *appsv1.Deployment
	active, preview *corev1.Service
}

func (bg *blueGreen) deployment(c strategies.Color) *appsv1.Deployment {
	if c == strategies.ColorGreen {
		return bg.green
	}
	return bg.blue
}

// primary is the Deployment whose annotations carry the workload's state
// and commands: the active color's, else the one with the newer revision,
// else the Deployment the workload ran before switching to blue-green.
func (bg *blueGreen) primary() *appsv1.Deployment {
	if bg.active != nil {
		if d := bg.deployment(strategies.Color(bg.active.Spec.Selector[contract.LabelColor])); d != nil {
			return d
		}
	}
	switch {
	case bg.blue != nil && bg.green != nil:
		b, _ := strategies.ReadStatus(bg.blue.Annotations)
		g, _ := strategies.ReadStatus(bg.green.Annotations)
		if g.Revision > b.Revision {
			return bg.green
		}
		return bg.blue
	case bg.blue != nil:
		return bg.blue
	case bg.green != nil:
		return bg.green
	}
	return bg.legacy
}

// readBlueGreen reads the Deployments and Services of workload ns/name;
// annotations (Git's, or the primary's) name the Services.
func (c *Controller) readBlueGreen(ctx context.Context, ns, name string, annotations map[string]string) (*blueGreen, error) {
	bg := &blueGreen{ns: ns, name: name}
	var err error
	if bg.blue, err = c.getDeployment(ctx, ns, name+"-blue"); err != nil {
		return nil, err
	}
	if bg.green, err = c.getDeployment(ctx, ns, name+"-green"); err != nil {
		return nil, err
	}
	if bg.legacy, err = c.getDeployment(ctx, ns, name); err != nil {
		return nil, err
	}
	if annotations == nil {
		if p := bg.primary(); p != nil {
			annotations = p.Annotations
		}
	}
	if bg.active, err = c.getService(ctx, ns, annotations, contract.AnnotationActiveService); err != nil {
		return bg, err
	}
	if annotations[contract.AnnotationPreviewService] != "" {
		if bg.preview, err = c.getService(ctx, ns, annotations, contract.AnnotationPreviewService); err != nil {
			return bg, err
		}
	}
	return bg, nil
}

// syncBlueGreen takes a commit's blue-green Deployment: the Git template goes
// to the color the plan targets, with the commit as its change cause (so
// that `kubectl rollout history` of the color lists commits), Git's
// metadata to every color, and then the workload is reconciled once.
func (c *Controller) syncBlueGreen(ctx context.Context, commit, subject string, git *appsv1.Deployment) error {
	bg, err := c.readBlueGreen(ctx, git.Namespace, git.Name, git.Annotations)
	if err != nil {
		if bg == nil {
			return err
		}
		return c.invalid(ctx, err, git.Annotations, bg.blue, bg.green)
	}
	if isPrimary(bg.legacy) {
		// A rolling workload switching to blue-green: <name> serves until
		// the first color takes over, and is no longer the primary.
		if err := c.setRole(ctx, bg.legacy, strategies.RoleIdle); err != nil {
			return err
		}
	}
	recorded, err := strategies.ReadStatus(annotationsOf(bg.primary()))
	if err != nil {
		return err
	}
	state := readState(annotationsOf(bg.primary()))
	state.Replicas = desiredReplicas(git)
	desired := strategies.TemplateHash(git.Spec.Template)
	decision := strategies.DecideRevision(recorded, desired)
	status := recorded
	status.Commit = commit
	if decision.Action == strategies.RevisionNew {
		status = strategies.Status{Revision: decision.Revision, Hash: desired, FailedHash: recorded.FailedHash, Commit: commit,
			Phase: strategies.PhaseProgressing, Message: fmt.Sprintf("rolling out revision %d", decision.Revision)}
	}
	target := strategies.ColorBlue
	if decision.Action != strategies.RevisionRefused {
		target = bgTarget(desired, bg)
	}
	for _, color := range []strategies.Color{strategies.ColorBlue, strategies.ColorGreen} {
		live := bg.deployment(color)
		var want *appsv1.Deployment
		switch {
		case color == target && decision.Action != strategies.RevisionRefused && strategies.LiveHash(annotatedTemplate(live)) != desired:
			replicas := int32(0)
			if live != nil {
				replicas = *live.Spec.Replicas
			}
			want = derived(git, git.Name+"-"+string(color), map[string]string{contract.LabelColor: string(color)}, git.Spec.Template, replicas)
			if live != nil {
				want.ObjectMeta = refresh(live, git).ObjectMeta
			}
			setAnnotation(&want.ObjectMeta, AnnotationChangeCause, changeCause(commit, subject))
		case live != nil:
			want = refresh(live, git)
		default:
			continue
		}
		stamp(want, state.annotations(status), strategies.Role(annotationsOf(live)[contract.AnnotationRole]))
		if err := c.writeDeployment(ctx, live, want); err != nil {
			return err
		}
	}
	return c.reconcileBlueGreen(ctx, git.Namespace, git.Name)
}

// annotatedTemplate is d's template, empty for a nil d.
func annotatedTemplate(d *appsv1.Deployment) corev1.PodTemplateSpec {
	if d == nil {
		return corev1.PodTemplateSpec{}
	}
	return d.Spec.Template
}

func annotationsOf(d *appsv1.Deployment) map[string]string {
	if d == nil {
		return nil
	}
	return d.Annotations
}

// bgTarget is the color a template of hash goes to (see
// strategies.PlanBlueGreen).
func bgTarget(hash string, bg *blueGreen) strategies.Color {
	active := strategies.Color(bg.active.Spec.Selector[contract.LabelColor])
	switch {
	case active != "" && strategies.LiveHash(annotatedTemplate(bg.deployment(active))) == hash:
		return active
	case active != "":
		return active.Other()
	case bg.green != nil && strategies.LiveHash(bg.green.Spec.Template) == hash:
		return strategies.ColorGreen
	}
	return strategies.ColorBlue
}

// reconcileBlueGreen plans and executes one step of a blue-green workload:
// Deployments first (scale-ups, status), then the Services (the swap), and
// only then the scale-down of a color that lost traffic, once the active
// Service's endpoints no longer hold its pods.
func (c *Controller) reconcileBlueGreen(ctx context.Context, ns, name string) error {
	bg, err := c.readBlueGreen(ctx, ns, name, nil)
	if err != nil {
		if bg == nil {
			return err
		}
		return c.settleInvalid(ns, name, c.invalid(ctx, err, nil, bg.blue, bg.green))
	}
	primary := bg.primary()
	switch {
	case primary == nil || primary == bg.legacy:
		return nil // the sink has not written a color yet
	case isPrimary(bg.legacy):
		return nil // switched back to rolling; the rolling reconcile retires the colors
	}
	recorded, err := strategies.ReadStatus(primary.Annotations)
	if err != nil {
		return err
	}
	state := readState(primary.Annotations)
	cmd := readCommand(primary, &recorded, &state)
	delay, err := scaleDownDelay(primary.Annotations)
	if err != nil {
		return c.settleInvalid(ns, name, c.invalid(ctx, err, nil, bg.blue, bg.green))
	}
	replicas := state.Replicas
	desired := strategies.BlueGreenDesired{
		Desired: strategies.Desired{Hash: recorded.Hash, Replicas: &replicas,
			AutoRollback: autoRollback(primary.Annotations), Commit: recorded.Commit},
		AutoPromote:    primary.Annotations[contract.AnnotationAutoPromote] != "false",
		ScaleDownDelay: delay,
	}
	legacy := bg.legacy
	if legacy != nil && legacy.Annotations[contract.AnnotationStrategy] == contract.StrategyBlueGreen {
		legacy = nil // not a rolling workload's Deployment
	}
	pods, err := c.colorPods(ctx, ns, name)
	if err != nil {
		return err
	}
	active := strategies.Color(bg.active.Spec.Selector[contract.LabelColor])
	plan := strategies.PlanBlueGreen(desired, recorded, strategies.BlueGreenObserved{
		Blue: bg.blue, Green: bg.green, Legacy: legacy, Active: active, Pods: pods,
		ScaleDownAt: state.ScaleDownAt, Paused: state.Paused,
		Promote: cmd.promote, Abort: cmd.abort, Now: time.Now(),
	})
	state.ScaleDownAt = plan.ScaleDownAt
	annotations := state.annotations(plan.Status)

	// A command that swaps the Services (promote, abort) stays on the
	// primary until the swap is made, so that a swap that fails is tried
	// again with it; a pending promote waits for the new color and stays.
	swaps := plan.Active != "" && plan.Active != active
	clearNow := !plan.Pending && !swaps

	// 1. Deployments, except that a color the active Service selects now
	// is not scaled down before the Service stops selecting it.
	var later []strategies.Color
	for _, color := range []strategies.Color{strategies.ColorBlue, strategies.ColorGreen} {
		live := bg.deployment(color)
		if live == nil {
			continue
		}
		want := live.DeepCopy()
		stamp(want, annotations, plan.Roles[color])
		if live == primary && clearNow {
			delete(want.Annotations, contract.AnnotationCommand)
		}
		if n, ok := plan.Replicas[color]; ok {
			if n < *live.Spec.Replicas && color == active && plan.Active != active {
				later = append(later, color)
			} else if n >= *live.Spec.Replicas || !c.stillServing(ctx, bg, live) {
				want.Spec.Replicas = &n
			} else {
				plan.RequeueAfter = time.Second
			}
		}
		if err := c.writeDeployment(ctx, live, want); err != nil {
			return err
		}
		if live == primary {
			// The primary carries the status and took the command:
			// report now, so that a failed write after it cannot lose
			// the command's Event (the retry no longer sees the command).
			out := outcome{cmd: cmd, acted: plan.Acted,
				rolledBack: newlyFailed(recorded, plan.Status) && desired.AutoRollback && !cmd.abort}
			if plan.Pending {
				out.cmd = command{} // no Event until it acts
			}
			c.report(primary, contract.StrategyBlueGreen, recorded, plan.Status, out)
		}
	}
	// 2. The swap: one selector patch per Service.
	if plan.Active != "" {
		if err := c.patchSelector(ctx, bg.active, contract.LabelColor, string(plan.Active)); err != nil {
			return err
		}
	}
	if bg.preview != nil && plan.Preview != "" {
		if err := c.patchSelector(ctx, bg.preview, contract.LabelColor, string(plan.Preview)); err != nil {
			return err
		}
	}
	if swaps && !plan.Pending && cmd.name != "" {
		if err := c.clearCommand(ctx, primary, cmd.name); err != nil {
			return err
		}
	}
	if len(later) > 0 {
		plan.RequeueAfter = time.Second // the next step scales them down once the endpoints follow
	}
	if plan.LegacyReplicas != nil && legacy != nil && *legacy.Spec.Replicas != *plan.LegacyReplicas && !c.stillServing(ctx, bg, legacy) {
		want := legacy.DeepCopy()
		want.Spec.Replicas = plan.LegacyReplicas
		if err := c.writeDeployment(ctx, legacy, want); err != nil {
			return err
		}
	}
	if plan.RequeueAfter > 0 {
		c.queue.AddAfter(ns+"/"+name, plan.RequeueAfter)
	}
	return nil
}

// colorPods lists the pods of workload ns/name by color.
func (c *Controller) colorPods(ctx context.Context, ns, name string) (map[strategies.Color][]strategies.Pod, error) {
	list, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{contract.LabelWorkload: name}.String() + "," + contract.LabelColor})
	if err != nil {
		return nil, fmt.Errorf("list the pods of %s/%s: %w", ns, name, err)
	}
	pods := map[strategies.Color][]strategies.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		color := strategies.Color(p.Labels[contract.LabelColor])
		pods[color] = append(pods[color], podState(p))
	}
	return pods, nil
}

// stillServing reports whether the active Service still has ready
// endpoints among d's pods; on error it says yes, which only delays. Before
// the first swap the Service selects no color and serves every color's
// pods: scaling one down is then the plan's intent, not a race.
func (c *Controller) stillServing(ctx context.Context, bg *blueGreen, d *appsv1.Deployment) bool {
	if bg.active.Spec.Selector[contract.LabelColor] == "" {
		return false
	}
	served, err := c.servedBy(ctx, bg.ns, bg.active.Name, d.Name)
	if err != nil {
		c.log.Info("cannot read endpoints; scale-down deferred", "workload", bg.ns+"/"+bg.name, "err", err)
		return true
	}
	return served
}

// scaleDownDelay reads plimsoll.dev/scale-down-delay, DefaultScaleDownDelay
// when absent.
func scaleDownDelay(a map[string]string) (time.Duration, error) {
	v, ok := a[contract.AnnotationScaleDownDelay]
	if !ok {
		return DefaultScaleDownDelay, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, &inputError{fmt.Sprintf("annotation %s: %q is not a duration like 30s or 5m", contract.AnnotationScaleDownDelay, v)}
	}
	return d, nil
}
