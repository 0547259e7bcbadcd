package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/fields"
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/strategies"
)

// reconcileRolling reads like the checklist it is: deleted? another
// strategy's? command pending? then the rolling plan, executed in one
// write, skipped when nothing changes. With an intent, the write is a
// server-side apply of the Git Deployment with the template the plan
// names; without one (a daemon that started and has not synced yet), a
// status update of the live Deployment.
func (c *Controller) reconcileRolling(ctx context.Context, w *workload, in intent) error {
	live := w.deployment("")
	if live != nil {
		if strategy := live.Annotations[contract.AnnotationStrategy]; in.git == nil && strategy != "" && strategy != contract.StrategyRolling {
			return nil // another strategy's Deployment
		}
		if cmd := live.Annotations[contract.AnnotationCommand]; cmd != "" && isPrimary(live) {
			recorded, err := strategies.ReadStatus(live.Annotations)
			if err != nil {
				return err
			}
			return c.command(ctx, w, live, recorded, cmd)
		}
	}
	if in.git == nil {
		return c.followRolling(ctx, w, live)
	}
	return c.applyRolling(ctx, w, in, live)
}

// applyRolling plans a rolling workload against its intent and applies the
// Git Deployment with the template the plan names (Git's for a new
// revision, the live one for a refused revision, the previous one for a
// rollback), the plimsoll.dev/workload label on the Deployment and its
// template, the status annotations, and kubernetes.io/change-cause =
// "<short commit> <subject>". Nothing is written when the live Deployment
// holds all of that already.
func (c *Controller) applyRolling(ctx context.Context, w *workload, in intent, live *appsv1.Deployment) error {
	git := in.git
	recorded := strategies.Status{}
	if live != nil {
		var err error
		if recorded, err = strategies.ReadStatus(recordedAnnotations(live, w.rsets)); err != nil {
			return err
		}
	}
	if !isPrimary(live) {
		// Switching from blue-green, whose status is on the colors: the
		// revisions count on from there.
		recorded = strategies.Latest(recorded, colorStatuses(w))
	}
	want := strategies.Desired{
		Hash:         podtemplate.Hash(git.Spec.Template),
		Replicas:     git.Spec.Replicas,
		AutoRollback: autoRollback(git.Annotations),
	}
	want.Commit = strategies.RevisionCommit(recorded, want.Hash, in.commit)
	count, autoscaled := w.autoscaledCount(live)
	if autoscaled {
		want.Replicas = nil // the HPA's count is the desired one
	}
	j, err := c.judgeRolling(ctx, live, git.Annotations, recorded, want.Hash)
	if err != nil {
		return c.markInvalid(ctx, w, err, git.Annotations, live)
	}
	plan := strategies.PlanRolling(want, recorded, strategies.RollingObserved{Deployment: live, ReplicaSets: w.rsets,
		Analysis: j.specs, Run: j.run, Pods: templatePods(w, live), Now: c.clock.Now()})
	c.requeueRolling(w, plan)
	from := previousStrategy(w, contract.StrategyRolling)
	labels, annotations := c.hand.dropped(live, git)
	held := strategies.RollingHeld{Git: git, Live: live, Recorded: recorded, Stamped: stampedWith(live, want.Hash),
		Primary: isPrimary(live), Switching: live != nil && w.hasAny(sideSuffixes), GitDropped: len(labels)+len(annotations) > 0,
		Cause: changeCause(in.commit, in.subject), Autoscaled: autoscaled, Count: count, Once: c.once.Load()}
	if live != nil {
		held.KeepsHandEdits = keepsHandEdits(git, live)
		held.RecordedCause = recordedAnnotations(live, w.rsets)[AnnotationChangeCause]
		// The check of a hand edit is noted as it is asked (see
		// templateChecks.runs): asked only of Git's template.
		held.RunsGit = plan.Template == strategies.TemplateGit && c.runsGit(live, git, want.Hash)
	}
	actions := strategies.PlanRollingApply(plan, held)
	if len(actions) == 0 {
		c.log.Info("not creating a Deployment whose template is refused", "workload", w.ns+"/"+w.name)
		return nil
	}
	x := &execution{w: w, git: git, annotations: plan.Status.Annotations(), run: plan.Run}
	x.written = func() {
		out := x.applied
		if !isPrimary(live) {
			c.eventSwitching(ctx, out, from, contract.StrategyRolling, fmt.Sprintf("%s serves beside the previous strategy's Deployments until it is Healthy", out.Name))
		}
		c.log.Info("applied workload", "workload", w.ns+"/"+git.Name, "revision", plan.Status.Revision,
			"commit", revision.Short(in.commit), "template", plan.Template.String(), "phase", string(plan.Status.Phase))
		if live != nil {
			c.report(ctx, out, contract.StrategyRolling, recorded, plan.Status, outcome{rolledBack: plan.Template == strategies.TemplateRollback})
			c.reportAnalysis(ctx, out, strategies.DecodeRun(live.Annotations[contract.AnnotationAnalysisRun]), plan.Run, j.taken, j.specs)
		}
	}
	if err := c.execute(ctx, x, actions); err != nil || x.applied != nil {
		return err
	}
	return c.rollingRetirement(ctx, w, live, plan.Status.Phase)
}

// rollingObject is what an apply of rolling workload git writes before
// its template is chosen: Git's Deployment with the workload label, the
// status annotations given and the primary role.
func rollingObject(git *appsv1.Deployment, status map[string]string) *appsv1.Deployment {
	obj := git.DeepCopy()
	obj.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	obj.Status = appsv1.DeploymentStatus{}
	obj.ResourceVersion, obj.UID, obj.ManagedFields = "", "", nil
	setLabel(&obj.ObjectMeta, contract.LabelWorkload, git.Name)
	for k, v := range status {
		setAnnotation(&obj.ObjectMeta, k, v)
	}
	setAnnotation(&obj.ObjectMeta, contract.AnnotationRole, contract.RolePrimary)
	return obj
}

// statusKeys are the annotations a write of the status sets or removes.
var statusKeys = slices.Concat(contract.StatusKeys, []string{contract.AnnotationRole, contract.AnnotationAnalysisRun})

// applied reports whether live holds everything an apply of obj would
// write: every field of obj (see fields.Hold), and exactly obj's status
// annotations, which an apply also removes when obj leaves them out.
// Without status, the status annotations but the role are not compared.
func applied(live, obj *appsv1.Deployment, status bool) bool {
	if status {
		for _, k := range statusKeys {
			if live.Annotations[k] != obj.Annotations[k] {
				return false
			}
		}
	} else {
		obj = obj.DeepCopy()
		for _, k := range statusKeys {
			if k != contract.AnnotationRole {
				delete(obj.Annotations, k)
			}
		}
	}
	got, err1 := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	exp, err2 := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err1 != nil || err2 != nil {
		return false
	}
	meta, _ := exp["metadata"].(map[string]any)
	want := map[string]any{"spec": exp["spec"], "metadata": map[string]any{"labels": meta["labels"], "annotations": meta["annotations"]}}
	return fields.Hold(got, want)
}

// followRolling goes on with a rolling workload from the state recorded on
// it: the plan with the recorded hash as desired, executed in one write,
// skipped when nothing changes.
func (c *Controller) followRolling(ctx context.Context, w *workload, cached *appsv1.Deployment) error {
	if cached == nil {
		return nil // deleted: nothing to roll out
	}
	live := cached
	// After `kubectl rollout undo`, the status is the one of the
	// ReplicaSet that records a later revision (see rewound).
	recorded, err := strategies.ReadStatus(recordedAnnotations(live, w.rsets))
	if err != nil {
		return err
	}
	if recorded.Hash == "" {
		return nil // not written by a handoff yet
	}
	want := strategies.Desired{
		Hash:         recorded.Hash,
		Replicas:     live.Spec.Replicas,
		AutoRollback: autoRollback(live.Annotations),
		Commit:       recorded.Commit,
	}
	j, err := c.judgeRolling(ctx, live, live.Annotations, recorded, recorded.Hash)
	if err != nil {
		return c.markInvalid(ctx, w, err, nil, live)
	}
	plan := strategies.PlanRolling(want, recorded, strategies.RollingObserved{Deployment: live, ReplicaSets: w.rsets,
		Analysis: j.specs, Run: j.run, Pods: templatePods(w, live), Now: c.clock.Now()})
	c.requeueRolling(w, plan)
	if err := c.rollingRetirement(ctx, w, live, plan.Status.Phase); err != nil {
		return err
	}
	rollback, ran := plan.Template == strategies.TemplateRollback, live.Annotations[contract.AnnotationAnalysisRun]
	followed := strategies.Followed{Live: live, Recorded: recorded, Rewound: rewound(live, w.rsets), KeepsHandEdits: keepsHandEdits(live, live)}
	actions := strategies.PlanRollingFollow(plan, w.name, followed)
	undone := !rollback && actions[0].Template != nil
	x := &execution{w: w, annotations: rollingAnnotations(plan.Status, plan.Run), primary: live}
	x.written = func() {
		if undone {
			c.templateRestored(ctx, live, "")
		}
		if plan.Status == recorded && strategies.EncodeRun(plan.Run) == ran && !rollback {
			return // nothing changed to tell
		}
		c.report(ctx, live, contract.StrategyRolling, recorded, plan.Status, outcome{rolledBack: rollback})
		c.reportAnalysis(ctx, live, strategies.DecodeRun(ran), plan.Run, j.taken, j.specs)
	}
	if err := c.execute(ctx, x, actions); err != nil {
		return fmt.Errorf("write status of %s/%s: %w", w.ns, w.name, err)
	}
	return nil
}

// rollingAnnotations are the annotations a rolling workload's status st
// and analysis run records.
func rollingAnnotations(st strategies.Status, run *strategies.AnalysisRun) map[string]string {
	a := st.Annotations()
	if v := strategies.EncodeRun(run); v != "" {
		a[contract.AnnotationAnalysisRun] = v
	}
	return a
}

// templatePods are the pods of w that run live's template, known by the
// stamp they carry (see podtemplate.Stamp); none for an unstamped template.
func templatePods(w *workload, live *appsv1.Deployment) []strategies.Pod {
	hash := annotatedTemplate(live).Annotations[contract.AnnotationTemplateHash]
	if hash == "" {
		return nil
	}
	return podStates(w.pods, func(p *corev1.Pod) bool { return p.Annotations[contract.AnnotationTemplateHash] == hash })
}

// requeueRolling plans workload w again when plan asks to (its
// verification's next measurement).
func (c *Controller) requeueRolling(w *workload, plan strategies.RollingPlan) {
	if plan.RequeueAfter > 0 {
		c.queue.AddAfter(w.ns+"/"+w.name, plan.RequeueAfter)
	}
}

// rollingRetirement runs the retirement of what a previous strategy left
// of rolling workload w, from its Deployment live and the phase its plan
// records (see runRetirement); none while live is not there.
func (c *Controller) rollingRetirement(ctx context.Context, w *workload, live *appsv1.Deployment, phase strategies.Phase) error {
	if live == nil {
		return nil
	}
	return c.runRetirement(ctx, w, contract.StrategyRolling, nil, phase, specReplicas(live), live, sideSuffixes...)
}

// command acts on command cmd on rolling Deployment live of workload w,
// recorded its status (see strategies.ApplyCommand), in the one write
// strategies.PlanRollingCommand lists.
func (c *Controller) command(ctx context.Context, w *workload, live *appsv1.Deployment, recorded strategies.Status, cmd string) error {
	run := strategies.DecodeRun(live.Annotations[contract.AnnotationAnalysisRun])
	done := strategies.ApplyCommand(cmd, strategies.Held{Status: recorded, Paused: live.Spec.Paused, Run: run}, false)
	x := &execution{w: w, annotations: rollingAnnotations(done.Held.Status, done.Held.Run), primary: live, commandOn: live, command: cmd}
	if err := c.execute(ctx, x, strategies.PlanRollingCommand(done)); err != nil {
		return fmt.Errorf("act on command %q: %w", cmd, err)
	}
	did := done.Describe("")
	c.log.Info("command", "workload", live.Namespace+"/"+live.Name, "command", cmd, "result", did)
	c.metrics.command(strings.TrimSpace(cmd))
	c.eventFor(ctx, live, corev1.EventTypeNormal, ReasonCommand, fmt.Sprintf("%s: %s", cmd, did))
	return nil
}
