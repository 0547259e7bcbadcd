package rollout

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/strategies"
)

// reconcileSet observes a set, applies the command it carries, plans
// its step and carries it out: the status, the rollback of a failed
// template, a canary's partition, the replacement of the failed pods. It
// returns when to look again (0: on its next change).
func (c *Controller) reconcileSet(ctx context.Context, s *set) (time.Duration, error) {
	a := s.meta.GetAnnotations()
	key := setKey(s.kind, s.meta.GetNamespace(), s.meta.GetName())
	client := c.clientOfSync(s.meta.GetLabels()[contract.LabelSync])
	recorded, err := strategies.ReadStatus(a)
	if err != nil {
		recorded = strategies.Status{}
	}
	canary := canaryOf(s)
	cmd := strategies.ApplyCommand(a[contract.AnnotationCommand], strategies.Held{Status: recorded, Paused: a[contract.AnnotationPaused] == "true"}, canary != nil)
	if canary == nil && (cmd.Name == contract.CommandPause || cmd.Name == contract.CommandResume) {
		// Nothing holds a rolling set's own controller.
		cmd.Held.Paused, cmd.Did = false, fmt.Sprintf("ignored: a %s rolled out by its own controller cannot be paused", s.kind)
	}
	hash, git := podtemplate.Hash(s.template), c.setCommits.of(key)
	if retried(cmd, recorded, hash, git) {
		// Git's template goes out again first; its change brings the
		// command back with it live, and the revision starts from there.
		t, err := templateOf(git.template)
		if err != nil {
			return 0, err
		}
		return 0, c.writeSetTemplate(ctx, client, s, t, holdAll(canary, s))
	}
	o := strategies.SetObserved{Kind: s.kind, Hash: hash, Recorded: cmd.Held.Status, Progress: s.progress,
		Deadline: setDeadline(a), AutoRollback: a[contract.AnnotationAutoRollback] != "false", StableKept: true, Now: c.clock.Now()}
	o.Since, _ = time.Parse(time.RFC3339, a[contract.AnnotationStepSince])
	if git.hash == hash {
		o.Commit = git.commit
	}
	if canary != nil {
		canary.Paused, canary.Promote, canary.Abort = cmd.Held.Paused, cmd.Promote, cmd.Abort
		canary.Step, _ = strconv.Atoi(a[contract.AnnotationStep])
		o.Canary = canary
	}
	plan := strategies.PlanSet(o)
	var stable *corev1.PodTemplateSpec
	if plan.Rollback {
		if stable, err = c.stableTemplate(ctx, s, recorded.StableHash); err != nil {
			return 0, err
		}
		if stable == nil {
			o.StableKept = false
			plan = strategies.PlanSet(o)
		}
	}
	// The status first, then the template: a cache that has the one
	// write and not yet the other then shows the failure recorded with
	// the failed template live, which plans the same rollback again (see
	// PlanSet), never the stable template as a new revision.
	if err := c.writeSetStatus(ctx, s, plan, cmd); err != nil {
		return 0, err
	}
	switch {
	case plan.Rollback:
		err = c.writeSetTemplate(ctx, client, s, *stable, plan.Partition)
	case plan.Partition != nil:
		err = c.writePartition(ctx, client, s, *plan.Partition)
	}
	if err != nil {
		return 0, err
	}
	if plan.Replace {
		if err := c.replaceFailedPods(ctx, client, s); err != nil {
			return 0, err
		}
		return setRetry, nil
	}
	if plan.Status.Phase == strategies.PhaseProgressing && plan.RequeueAfter == 0 {
		return max(o.Deadline-o.Now.Sub(plan.Since), 0) + time.Second, nil
	}
	return plan.RequeueAfter, nil
}

// canaryOf is what the canary strategy reads of a StatefulSet rolled by
// canary (its steps checked when its commit was), nil for any other set.
func canaryOf(s *set) *strategies.SetCanary {
	a := s.meta.GetAnnotations()
	if s.kind != kindStatefulSet || a[contract.AnnotationStrategy] != contract.StrategyCanary {
		return nil
	}
	steps, err := strategies.ParseSteps(cmp.Or(a[contract.AnnotationSteps], strategies.DefaultSteps))
	if err != nil {
		return nil
	}
	return &strategies.SetCanary{Steps: steps, Replicas: s.replicas, Partition: s.partition}
}

// retried reports whether cmd is a retry of the failed template that Git
// still gives the set, while the set runs another: Git's template goes
// out again.
func retried(cmd strategies.Commanded, recorded strategies.Status, live string, git setCommit) bool {
	return cmd.Name == contract.CommandRetry && recorded.FailedHash != "" && git.hash == recorded.FailedHash &&
		git.hash != live && git.template != nil
}

// holdAll is the partition a canary StatefulSet's new template goes out
// with, every ordinal held (see holdPartition); nil for another set.
func holdAll(canary *strategies.SetCanary, s *set) *int32 {
	if canary == nil {
		return nil
	}
	return &s.replicas
}

// templateOf reads a pod template noted from Git.
func templateOf(m map[string]any) (corev1.PodTemplateSpec, error) {
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t); err != nil {
		return t, fmt.Errorf("read the template Git gives: %w", err)
	}
	return t, nil
}

// setDeadline is a set's plimsoll.dev/progress-deadline, checked when its
// commit was; the default when it sets none.
func setDeadline(a map[string]string) time.Duration {
	if d, err := time.ParseDuration(a[contract.AnnotationProgressDeadline]); err == nil && d > 0 {
		return d
	}
	return strategies.DefaultSetDeadline
}

// stableTemplate finds, among the set's controller revisions, the one
// whose template hashes to hash; nil when none is kept.
func (c *Controller) stableTemplate(ctx context.Context, s *set, hash string) (*corev1.PodTemplateSpec, error) {
	revs, err := c.revisionsOf(ctx, s)
	if err != nil {
		return nil, err
	}
	for _, r := range revs {
		var data struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if json.Unmarshal(r.Data.Raw, &data) == nil && podtemplate.Hash(data.Spec.Template) == hash {
			t := data.Spec.Template
			return &t, nil
		}
	}
	return nil, nil
}

// revisionsOf lists the controller revisions the set owns, newest first.
func (c *Controller) revisionsOf(ctx context.Context, s *set) ([]appsv1.ControllerRevision, error) {
	selector, err := metav1.LabelSelectorAsSelector(s.selector)
	if err != nil {
		return nil, fmt.Errorf("read the selector of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	list, err := c.client.AppsV1().ControllerRevisions(s.meta.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("list the revisions of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	owned := slices.DeleteFunc(list.Items, func(r appsv1.ControllerRevision) bool {
		ref := metav1.GetControllerOf(&r)
		return ref == nil || ref.UID != s.meta.GetUID()
	})
	slices.SortFunc(owned, func(a, b appsv1.ControllerRevision) int { return int(b.Revision - a.Revision) })
	return owned, nil
}

// replaceFailedPods deletes the set's pods that are not Ready and do not
// run its live template, so that its controller creates them again from
// it: a StatefulSet rolled back waits for such a pod forever
// (kubernetes/kubernetes#67250). A Ready pod is never deleted.
func (c *Controller) replaceFailedPods(ctx context.Context, client kubernetes.Interface, s *set) error {
	current := s.revisionKey
	if s.kind == kindDaemonSet {
		revs, err := c.revisionsOf(ctx, s)
		if err != nil || len(revs) == 0 {
			return err
		}
		current = revs[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	}
	if current == "" {
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(s.selector)
	if err != nil {
		return fmt.Errorf("read the selector of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	pods, err := c.client.CoreV1().Pods(s.meta.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return fmt.Errorf("list the pods of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != s.meta.GetUID() || p.DeletionTimestamp != nil ||
			p.Labels[appsv1.ControllerRevisionHashLabelKey] == current || podReady(&p) {
			continue
		}
		uid := p.UID
		err := client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("replace pod %s of the failed template of %s %s: %w", p.Name, s.kind, s.meta.GetName(), err)
		}
		c.events.Event(ctx, s.obj, corev1.EventTypeNormal, ReasonPodReplaced,
			fmt.Sprintf("pod %s of the failed template, never Ready, deleted so that the %s creates it from its stable template", p.Name, s.kind))
	}
	return nil
}

// podReady reports whether pod p is Ready.
func podReady(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}
