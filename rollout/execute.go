package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// execution is what executing one plan of a workload needs besides the
// plan's actions.
type execution struct {
	w *workload
	// services are the Services the strategy steers, by role; a role
	// without one (no preview Service) skips its actions.
	services map[strategies.ServiceRole]*corev1.Service
	// annotations are the status and step state every write with Status
	// records.
	annotations map[string]string
	// primary carries the workload's state; commandOn carries the
	// command the plan acted on (see commandOn), the primary when there
	// is none; command is that command, "" for none. cleared records
	// that a write has removed it.
	primary   *appsv1.Deployment
	commandOn *appsv1.Deployment
	command   string
	cleared   bool
	// autoscaler is the workload's HorizontalPodAutoscaler, nil for
	// none: an ActionRetarget points it elsewhere.
	autoscaler *autoscalingv2.HorizontalPodAutoscaler
	// written, when set, is called once the primary has been written: it
	// reports the plan (Events, metrics, log), so that a failed write
	// after it cannot lose the command's Event.
	written func()
	// git is the Git Deployment an ActionApply applies, run the analysis
	// run it records; applied is the Deployment as the apply returned it,
	// nil while none was written.
	git     *appsv1.Deployment
	run     *strategies.AnalysisRun
	applied *appsv1.Deployment
	// found is the Deployment <name> an ActionAdopt takes over, as read
	// from the API server.
	found *appsv1.Deployment
}

// execute runs a plan's actions in their order and stops at the first
// that fails; the retry plans again. It chooses nothing: every decision is
// the planner's.
func (c *Controller) execute(ctx context.Context, x *execution, actions []strategies.Action) error {
	serving := "true"
	debug := c.log.Enabled(ctx, slog.LevelDebug)
	for _, a := range actions {
		if debug {
			c.log.DebugContext(ctx, "execute action", "workload", x.w.ns+"/"+x.w.name, "action", a.String())
		}
		var err error
		switch a.Kind {
		case strategies.ActionWrite:
			err = c.executeWrite(ctx, x, a)
		case strategies.ActionApply:
			err = c.executeApply(ctx, x, a)
		case strategies.ActionLabel:
			err = c.labelPod(ctx, x.w.ns, a.Pod, &serving)
		case strategies.ActionUnlabel:
			err = c.labelPod(ctx, x.w.ns, a.Pod, nil)
		case strategies.ActionSelect:
			err = c.executeSelect(ctx, x, a)
		case strategies.ActionClearCommand:
			err = c.clearActedCommand(ctx, x)
		case strategies.ActionHoldOut:
			err = c.holdOut(ctx, x.w, a.ReplicaSet, a.Key, a.Value, false)
		case strategies.ActionRestore:
			err = c.holdOut(ctx, x.w, a.ReplicaSet, a.Key, a.Value, true)
		case strategies.ActionHandOver:
			err = c.handOver(ctx, x.w, a.ReplicaSet)
		case strategies.ActionDeleteReplicaSet:
			err = c.deleteReplicaSet(ctx, x.w, a.ReplicaSet)
		case strategies.ActionDelete:
			policy := metav1.DeletePropagationBackground
			if a.Orphan {
				policy = metav1.DeletePropagationOrphan
			}
			err = c.deleteDeployment(ctx, x.w, x.w.name+a.Deployment, policy)
		case strategies.ActionDeletePod:
			err = c.deletePod(ctx, x.w, a.Pod)
		case strategies.ActionMetadata:
			err = c.executeMetadata(ctx, x, a)
		case strategies.ActionAdopt:
			err = c.executeAdopt(ctx, x, a)
		case strategies.ActionRetarget:
			if x.autoscaler != nil {
				err = c.retarget(ctx, x.autoscaler, x.w.name+a.Deployment)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// executeWrite writes one Deployment of the workload as action a asks.
func (c *Controller) executeWrite(ctx context.Context, x *execution, a strategies.Action) error {
	live := x.w.deployment(a.Deployment)
	if live == nil {
		return nil
	}
	want := live.DeepCopy()
	if a.Status {
		stamp(want, x.annotations, a.Role)
	}
	clears := a.ClearCommand && live == x.commandOn && !x.cleared
	if clears {
		// Only the command acted on is cleared, once.
		delete(want.Annotations, contract.AnnotationCommand)
	}
	if a.Replicas != nil {
		want.Spec.Replicas = a.Replicas
	}
	if a.Paused != nil {
		want.Spec.Paused = *a.Paused
	}
	if a.Template != nil {
		want.Spec.Template = *a.Template.DeepCopy()
	}
	if a.Strategy != nil {
		want.Spec.Strategy = *a.Strategy.DeepCopy()
	}
	if a.ChangeCause != "" {
		setAnnotation(&want.ObjectMeta, AnnotationChangeCause, a.ChangeCause)
	}
	for k, v := range a.Annotations {
		setAnnotation(&want.ObjectMeta, k, v)
	}
	if err := c.writeDeployment(ctx, x.w.cached(live), want); err != nil {
		return err
	}
	x.cleared = x.cleared || clears
	if !a.Alone {
		if err := c.mirror(ctx, x.w, want); err != nil {
			return err
		}
	}
	if a.ClearCommand && live == x.primary {
		// The plan clears the command with the primary's write; one that
		// came on another Deployment is cleared there, after it.
		if err := c.clearActedCommand(ctx, x); err != nil {
			return err
		}
	}
	if live == x.primary && x.written != nil {
		x.written()
		x.written = nil
	}
	return nil
}

// clearActedCommand removes the command the plan acted on from the
// Deployment that carries it, unless a write has removed it already or
// there is none.
func (c *Controller) clearActedCommand(ctx context.Context, x *execution) error {
	if x.cleared || x.command == "" || x.commandOn == nil {
		return nil
	}
	raw, ok := x.commandOn.Annotations[contract.AnnotationCommand]
	if !ok {
		return nil
	}
	if err := c.clearCommand(ctx, x.commandOn, raw); err != nil {
		return err
	}
	x.cleared = true
	return nil
}

// executeApply applies Git's Deployment of a rolling workload as action a
// asks (see strategies.RollingWrite): with the workload label and the
// primary role, the plan's status and analysis run, and the action's
// template, change cause, strategy and count; skipped when the live
// Deployment holds all of it already (see applied).
func (c *Controller) executeApply(ctx context.Context, x *execution, a strategies.Action) error {
	live, ap := x.w.deployment(""), a.Apply
	obj := applyObject(x.git, live, x.annotations, x.run, ap)
	if !ap.Always && applied(live, obj, !ap.QuietStatus) {
		return nil
	}
	if ap.TakeOver && live != nil {
		var err error
		if obj, err = c.claimHandEditFields(ctx, live, obj); err != nil {
			return err
		}
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode the Deployment: %w", err)
	}
	force := true
	scaledBy := c.hand.scaledBy(live)
	out, err := c.workloadWriter(x.w).AppsV1().Deployments(x.w.ns).Patch(ctx, x.git.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	c.written.wrote(out)
	c.wroteTemplate(ctx, live, obj, out)
	c.wroteCount(ctx, live, out, scaledBy)
	if ap.Undone {
		c.templateRestored(ctx, out, "")
	}
	x.applied = out
	if x.written != nil {
		x.written()
		x.written = nil
	}
	return nil
}

// applyObject is the Deployment an apply of rolling workload git writes
// as write ap asks, over live (nil before it exists): Git's Deployment
// with the workload label, the primary role, the status annotations and
// analysis run run, and ap's template, change cause, strategy and count.
// `plimsoll diff` dry-runs the same object (see diffRolling).
func applyObject(git, live *appsv1.Deployment, status map[string]string, run *strategies.AnalysisRun, ap *strategies.RollingWrite) *appsv1.Deployment {
	obj := rollingObject(git, status)
	setRun(obj, run)
	obj.Spec.Template = *ap.Template.DeepCopy()
	if ap.Stamp {
		obj.Spec.Template = strategies.WorkloadTemplate(obj.Spec.Template, git.Name)
	}
	if ap.ChangeCause != "" {
		setAnnotation(&obj.ObjectMeta, AnnotationChangeCause, ap.ChangeCause)
	}
	if ap.Strategy != nil {
		obj.Spec.Strategy = *ap.Strategy.DeepCopy()
	}
	if ap.Replicas != nil && live != nil {
		obj.Spec.Replicas, obj.ResourceVersion = ap.Replicas, live.ResourceVersion
	}
	return obj
}

// executeMetadata writes the metadata of one Deployment of the workload
// as action a asks (see writeMetadata); the workload holds it as written
// from then on, so that a write after it in the plan starts from there.
func (c *Controller) executeMetadata(ctx context.Context, x *execution, a strategies.Action) error {
	d := x.w.deployment(a.Deployment)
	if d == nil {
		return nil
	}
	out, err := c.writeMetadata(ctx, d, x.git, a.Role, a.Drop)
	if err != nil || out == nil {
		return err
	}
	x.w.deploys[out.Name] = out
	return nil
}

// executeSelect writes the selector of the Service of action a: one of
// the strategy's by role, or one named (see strategies.Action).
func (c *Controller) executeSelect(ctx context.Context, x *execution, a strategies.Action) error {
	svc, ch := x.services[a.Service], selectorChange{drop: a.Drop, keep: a.Keep, repair: a.Repair}
	if a.ServiceName != "" {
		svc = x.w.services[a.ServiceName]
	}
	if a.Key != "" {
		ch.set = map[string]string{a.Key: a.Value}
	}
	return c.steer(ctx, x.w, svc, ch)
}
