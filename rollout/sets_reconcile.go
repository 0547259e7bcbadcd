package rollout

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	hold := setHold{partition: plan.Partition}
	if plan.Release {
		hold.strategy = gitStrategy(git)
	}
	switch {
	case plan.Rollback:
		err = c.writeSetTemplate(ctx, client, s, *stable, hold)
	case plan.Partition != nil, plan.Release:
		err = c.writeHold(ctx, client, s, hold)
	case plan.UpdateTo > 0:
		err = c.updateNodes(ctx, client, s, plan.UpdateTo)
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

// canaryOf is what the canary strategy reads of a set rolled by canary
// (its steps checked when its commit was), nil for a rolling one.
func canaryOf(s *set) *strategies.SetCanary {
	a := s.meta.GetAnnotations()
	if a[contract.AnnotationStrategy] != contract.StrategyCanary {
		return nil
	}
	steps, err := strategies.ParseSteps(cmp.Or(a[contract.AnnotationSteps], strategies.DefaultSteps))
	if err != nil {
		return nil
	}
	return &strategies.SetCanary{Steps: steps, Nodes: s.kind == kindDaemonSet, Replicas: s.replicas, Partition: s.partition, OnDelete: s.onDelete}
}

// retried reports whether cmd is a retry of the failed template that Git
// still gives the set, while the set runs another: Git's template goes
// out again.
func retried(cmd strategies.Commanded, recorded strategies.Status, live string, git setCommit) bool {
	return cmd.Name == contract.CommandRetry && recorded.FailedHash != "" && git.hash == recorded.FailedHash &&
		git.hash != live && git.template != nil
}

// holdAll is what a canary set's new template goes out with, so that no
// pod takes it before the first step asks: a StatefulSet's partition at
// its whole count (see holdPartition), a DaemonSet's OnDelete (see
// holdNodes); nothing for a rolling set.
func holdAll(canary *strategies.SetCanary, s *set) setHold {
	switch {
	case canary == nil:
		return setHold{}
	case canary.Nodes:
		return setHold{strategy: map[string]any{"type": string(appsv1.OnDeleteDaemonSetStrategyType)}}
	}
	return setHold{partition: &s.replicas}
}

// gitStrategy is the update strategy Git gives a canary DaemonSet, which
// it gets back at the end of its steps: the DaemonSet controller's
// default (one node at a time) when Git gives none or none was noted.
func gitStrategy(git setCommit) map[string]any {
	if git.strategy != nil && git.strategy["type"] != string(appsv1.OnDeleteDaemonSetStrategyType) {
		return git.strategy
	}
	return map[string]any{"type": string(appsv1.RollingUpdateDaemonSetStrategyType), "rollingUpdate": map[string]any{"maxUnavailable": int64(1)}}
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
	opts, err := s.listOptions()
	if err != nil {
		return nil, err
	}
	list, err := c.client.AppsV1().ControllerRevisions(s.meta.GetNamespace()).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list the revisions of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	owned := slices.DeleteFunc(list.Items, func(r appsv1.ControllerRevision) bool { return !s.owns(&r) })
	slices.SortFunc(owned, func(a, b appsv1.ControllerRevision) int { return int(b.Revision - a.Revision) })
	return owned, nil
}

// replaceFailedPods deletes the set's pods that are not Ready and do not
// run its live template, so that its controller creates them again from
// it: a StatefulSet rolled back waits for such a pod forever
// (kubernetes/kubernetes#67250). A Ready pod is never deleted.
func (c *Controller) replaceFailedPods(ctx context.Context, client kubernetes.Interface, s *set) error {
	current, err := c.currentRevision(ctx, s)
	if err != nil || current == "" {
		return err
	}
	pods, err := c.ownedPods(ctx, s)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Labels[appsv1.ControllerRevisionHashLabelKey] == current || podReady(&p) {
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

// currentRevision is the controller-revision-hash label of the pods of
// the set's live template: a StatefulSet's update revision, a
// DaemonSet's newest ControllerRevision; "" while unknown.
func (c *Controller) currentRevision(ctx context.Context, s *set) (string, error) {
	if s.kind != kindDaemonSet {
		return s.revisionKey, nil
	}
	revs, err := c.revisionsOf(ctx, s)
	if err != nil || len(revs) == 0 {
		return "", err
	}
	return revs[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey], nil
}

// ownedPods lists the pods the set owns.
func (c *Controller) ownedPods(ctx context.Context, s *set) ([]corev1.Pod, error) {
	opts, err := s.listOptions()
	if err != nil {
		return nil, err
	}
	list, err := c.client.CoreV1().Pods(s.meta.GetNamespace()).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list the pods of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return !s.owns(&p) }), nil
}

// listOptions select the set's pods and controller revisions.
func (s *set) listOptions() (metav1.ListOptions, error) {
	selector, err := metav1.LabelSelectorAsSelector(s.selector)
	if err != nil {
		return metav1.ListOptions{}, fmt.Errorf("read the selector of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	return metav1.ListOptions{LabelSelector: selector.String()}, nil
}

// owns reports whether the set is obj's controller.
func (s *set) owns(obj metav1.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == s.meta.GetUID()
}

// podReady reports whether pod p is Ready (see strategies.PodReadiness).
func podReady(p *corev1.Pod) bool {
	ready, _ := strategies.PodReadiness(p)
	return ready
}

// updateNodes deletes the pod of one more node of a canary DaemonSet held
// at OnDelete, so that its controller creates it from the live template:
// once every pod is Ready and none is going, the first node by name whose
// pod runs another revision, until to nodes run it. One node at a time is
// the DaemonSet controller's own default (maxUnavailable 1): no more than
// one node is without a Ready pod.
func (c *Controller) updateNodes(ctx context.Context, client kubernetes.Interface, s *set, to int32) error {
	if !s.onDelete || !s.progress.Observed || s.progress.Updated >= to {
		return nil
	}
	current, err := c.currentRevision(ctx, s)
	if err != nil || current == "" {
		return err
	}
	pods, err := c.ownedPods(ctx, s)
	if err != nil {
		return err
	}
	var old []corev1.Pod
	updated := int32(0)
	for _, p := range pods {
		switch {
		case p.DeletionTimestamp != nil || !podReady(&p):
			return nil // a node is without a Ready pod: wait for it
		case p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == current:
			updated++
		default:
			old = append(old, p)
		}
	}
	if updated >= to || len(old) == 0 {
		return nil
	}
	slices.SortFunc(old, func(a, b corev1.Pod) int { return strings.Compare(a.Spec.NodeName, b.Spec.NodeName) })
	p := old[0]
	uid := p.UID
	err = client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("update node %s of DaemonSet %s: delete pod %s: %w", p.Spec.NodeName, s.meta.GetName(), p.Name, err)
	}
	c.log.Info("canary node updated", "workload", s.meta.GetNamespace()+"/"+s.meta.GetName(), "node", p.Spec.NodeName, "pod", p.Name)
	return nil
}
