package rollout

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// canary is the live state of a canary workload as read for one step.
type canary struct {
	ns, name       string
	stable, canary *appsv1.Deployment
	service        *corev1.Service
	pods           []corev1.Pod
}

// readCanary reads the Deployments, the Service and the canary pods of
// workload ns/name; annotations (Git's, or the stable Deployment's) name
// the Service and the steps.
func (c *Controller) readCanary(ctx context.Context, ns, name string, annotations map[string]string) (*canary, []strategies.Step, error) {
	cy := &canary{ns: ns, name: name}
	var err error
	if cy.stable, err = c.getDeployment(ctx, ns, name); err != nil {
		return nil, nil, err
	}
	if cy.canary, err = c.getDeployment(ctx, ns, name+"-canary"); err != nil {
		return nil, nil, err
	}
	if annotations == nil {
		annotations = annotationsOf(cy.stable)
	}
	if cy.service, err = c.getService(ctx, ns, annotations, contract.AnnotationService); err != nil {
		return cy, nil, err
	}
	steps, err := canarySteps(annotations)
	if err != nil {
		return cy, nil, err
	}
	pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{
		contract.LabelWorkload: name, contract.LabelTrack: contract.TrackCanary}.String()})
	if err != nil {
		return nil, nil, fmt.Errorf("list the canary pods of %s/%s: %w", ns, name, err)
	}
	cy.pods = pods.Items
	return cy, steps, nil
}

// canarySteps parses plimsoll.dev/steps, strategies.DefaultSteps when absent.
func canarySteps(a map[string]string) ([]strategies.Step, error) {
	v, ok := a[contract.AnnotationSteps]
	if !ok {
		v = strategies.DefaultSteps
	}
	steps, err := strategies.ParseSteps(v)
	if err != nil {
		return nil, &inputError{fmt.Sprintf("annotation %s: %v", contract.AnnotationSteps, err)}
	}
	return steps, nil
}

// syncCanary takes a commit's canary Deployment: the stable Deployment is
// created from Git when absent, else gets Git's metadata; the Git template
// goes to <name>-canary with the commit as its change cause; then the
// workload is reconciled once.
func (c *Controller) syncCanary(ctx context.Context, commit, subject string, git *appsv1.Deployment) error {
	cy, _, err := c.readCanary(ctx, git.Namespace, git.Name, git.Annotations)
	if err != nil {
		if cy == nil {
			return err
		}
		return c.invalid(ctx, err, git.Annotations, cy.stable, cy.canary)
	}
	recorded, err := strategies.ReadStatus(annotationsOf(cy.stable))
	if err != nil {
		return err
	}
	state := readState(annotationsOf(cy.stable))
	state.Replicas = desiredReplicas(git)
	desired := strategies.TemplateHash(git.Spec.Template)
	decision := strategies.DecideRevision(recorded, desired)
	status := recorded
	status.Commit = commit
	if decision.Action == strategies.RevisionNew {
		status = strategies.Status{Revision: decision.Revision, Hash: desired, FailedHash: recorded.FailedHash, Commit: commit,
			Phase: strategies.PhaseProgressing, Message: fmt.Sprintf("rolling out revision %d", decision.Revision)}
		state.Step, state.StepSince = 0, time.Time{}
	}
	annotations := state.annotations(status)

	var stable *appsv1.Deployment
	if cy.stable == nil {
		t := *git.Spec.Template.DeepCopy()
		setLabel(&t.ObjectMeta, contract.LabelServing, "true")
		stable = derived(git, git.Name, nil, t, state.Replicas)
		setAnnotation(&stable.ObjectMeta, AnnotationChangeCause, changeCause(commit, subject))
	} else {
		stable = refresh(cy.stable, git)
	}
	stamp(stable, annotations, strategies.RoleStable)
	if err := c.writeDeployment(ctx, cy.stable, stable); err != nil {
		return err
	}

	var want *appsv1.Deployment
	switch live := cy.canary; {
	case decision.Action != strategies.RevisionRefused && strategies.LiveHash(annotatedTemplate(live)) != desired:
		replicas := int32(0)
		if live != nil {
			replicas = *live.Spec.Replicas
		}
		want = derived(git, git.Name+"-canary", map[string]string{contract.LabelTrack: contract.TrackCanary}, git.Spec.Template, replicas)
		if live != nil {
			want.ObjectMeta = refresh(live, git).ObjectMeta
		}
		setAnnotation(&want.ObjectMeta, AnnotationChangeCause, changeCause(commit, subject))
	case live != nil:
		want = refresh(live, git)
	}
	if want != nil {
		stamp(want, annotations, strategies.RoleCanary)
		if err := c.writeDeployment(ctx, cy.canary, want); err != nil {
			return err
		}
	}
	return c.reconcileCanary(ctx, git.Namespace, git.Name)
}

// reconcileCanary plans and executes one step of a canary workload. Pod
// labels go first, so that stable scales down only for canary pods that
// already serve and an abort takes the canary's traffic away before
// anything else; then the Service, then the Deployments.
func (c *Controller) reconcileCanary(ctx context.Context, ns, name string) error {
	cy, steps, err := c.readCanary(ctx, ns, name, nil)
	if err != nil {
		if cy == nil {
			return err
		}
		return c.settleInvalid(ns, name, c.invalid(ctx, err, nil, cy.stable, cy.canary))
	}
	if cy.stable == nil || isPrimary(cy.stable) {
		return nil // not created yet, or switched back to rolling
	}
	recorded, err := strategies.ReadStatus(cy.stable.Annotations)
	if err != nil {
		return err
	}
	state := readState(cy.stable.Annotations)
	cmd := readCommand(cy.stable, &recorded, &state)
	replicas := state.Replicas
	observed := strategies.CanaryObserved{
		Stable: cy.stable, Canary: cy.canary,
		ServiceSelectsServing: cy.service.Spec.Selector[contract.LabelServing] == "true",
		Step:                  state.Step, StepSince: state.StepSince, Paused: state.Paused,
		Promote: cmd.promote, Abort: cmd.abort, Now: time.Now(),
	}
	for i := range cy.pods {
		observed.Pods = append(observed.Pods, podState(&cy.pods[i]))
	}
	plan := strategies.PlanCanary(strategies.CanaryDesired{
		Desired: strategies.Desired{Hash: recorded.Hash, Replicas: &replicas,
			AutoRollback: autoRollback(cy.stable.Annotations), Commit: recorded.Commit},
		Steps: steps,
	}, recorded, observed)
	state.Step, state.StepSince = plan.Step, plan.StepSince
	annotations := state.annotations(plan.Status)

	for _, pod := range plan.Unlabel {
		if err := c.labelPod(ctx, ns, pod, nil); err != nil {
			return err
		}
	}
	serving := "true"
	for _, pod := range plan.Label {
		if err := c.labelPod(ctx, ns, pod, &serving); err != nil {
			return err
		}
	}
	if plan.SelectServing {
		if err := c.patchSelector(ctx, cy.service, contract.LabelServing, "true"); err != nil {
			return err
		}
	}

	stable := cy.stable.DeepCopy()
	stamp(stable, annotations, strategies.RoleStable)
	delete(stable.Annotations, contract.AnnotationCommand) // acted on in this write
	if plan.StableReplicas != nil {
		stable.Spec.Replicas = plan.StableReplicas
	}
	switch plan.Stable {
	case strategies.StableServing:
		setLabel(&stable.Spec.Template.ObjectMeta, contract.LabelServing, "true")
	case strategies.StablePromote:
		if cy.canary != nil {
			t := *cy.canary.Spec.Template.DeepCopy()
			delete(t.Labels, contract.LabelTrack)
			setLabel(&t.ObjectMeta, contract.LabelServing, "true")
			stable.Spec.Template = strategies.Stamp(t)
			// The stable Deployment's new ReplicaSet is the canary's
			// commit in `kubectl rollout history`.
			keepAnnotation(stable, cy.canary, AnnotationChangeCause)
		}
	}
	if err := c.writeDeployment(ctx, cy.stable, stable); err != nil {
		return err
	}
	// The stable Deployment carries the status and took the command: report
	// now, so that a failed write of the canary cannot lose the command's
	// Event (the retry no longer sees the command).
	c.report(cy.stable, contract.StrategyCanary, recorded, plan.Status, outcome{cmd: cmd, acted: plan.Acted,
		rolledBack: newlyFailed(recorded, plan.Status) && autoRollback(cy.stable.Annotations) && !cmd.abort})
	if cy.canary != nil {
		want := cy.canary.DeepCopy()
		stamp(want, annotations, strategies.RoleCanary)
		if plan.CanaryReplicas != nil {
			want.Spec.Replicas = plan.CanaryReplicas
		}
		if err := c.writeDeployment(ctx, cy.canary, want); err != nil {
			return err
		}
	}
	if plan.RequeueAfter > 0 {
		c.queue.AddAfter(ns+"/"+name, plan.RequeueAfter)
	}
	return nil
}

// labelPod sets plimsoll.dev/serving on a pod to *value, with
// plimsoll.dev/served, or removes both when value is nil. A pod gone
// meanwhile is no error: its replacement is labelled when Ready.
func (c *Controller) labelPod(ctx context.Context, ns, pod string, value *string) error {
	v := "null"
	if value != nil {
		v = fmt.Sprintf("%q", *value)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%s},"annotations":{%q:%s}}}`,
		contract.LabelServing, v, contract.AnnotationServed, v)
	_, err := c.client.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("label pod %s serving=%s: %w", pod, v, err)
	}
	return nil
}

// podState is p as the planners see it.
func podState(p *corev1.Pod) strategies.Pod {
	ready, since := strategies.PodReadiness(p)
	serving := p.Labels[contract.LabelServing] == "true"
	return strategies.Pod{Name: p.Name, Ready: ready, NotReadySince: since, Serving: serving,
		Deleting: p.DeletionTimestamp != nil, Unlabelled: !serving && p.Annotations[contract.AnnotationServed] == "true"}
}
