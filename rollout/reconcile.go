package rollout

import (
	"context"
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// reconcile brings one workload a step further with its strategy's
// reconcile. A sync handing over the same workload waits meanwhile.
func (c *Controller) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller made; nothing to retry
	}
	defer c.locks.lock(key)()
	switch c.strategyOf(ns, name) {
	case contract.StrategyBlueGreen:
		return c.reconcileBlueGreen(ctx, ns, name)
	case contract.StrategyCanary:
		return c.reconcileCanary(ctx, ns, name)
	}
	return c.reconcileRolling(ctx, key, ns, name)
}

// strategyOf tells a workload's strategy from the Deployments it has:
// rolling when <name> is the primary (also while it retires what a
// previous strategy left), blue-green once it has a color, canary when
// <name> says so, else rolling.
func (c *Controller) strategyOf(ns, name string) string {
	d, err := c.deployments(ns).Get(name)
	if err != nil {
		d = nil
	}
	if isPrimary(d) {
		return contract.StrategyRolling
	}
	if c.hasDeployment(ns, name, "-blue", "-green") {
		return contract.StrategyBlueGreen
	}
	if d != nil && d.Annotations[contract.AnnotationStrategy] == contract.StrategyCanary {
		return contract.StrategyCanary
	}
	return contract.StrategyRolling
}

// hasDeployment reports whether the informer holds a Deployment named
// name plus one of suffixes.
func (c *Controller) hasDeployment(ns, name string, suffixes ...string) bool {
	for _, suffix := range suffixes {
		if _, err := c.deployments(ns).Get(name + suffix); err == nil {
			return true
		}
	}
	return false
}

// reconcileRolling reads like the checklist it is: deleted? command
// pending? then the rolling plan, executed in one write, skipped when
// nothing changes.
func (c *Controller) reconcileRolling(ctx context.Context, key, ns, name string) error {
	cached, err := c.deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // deleted: nothing to roll out
	}
	if err != nil {
		return fmt.Errorf("read Deployment %s: %w", key, err)
	}
	live := cached.DeepCopy()
	if strategy := live.Annotations[contract.AnnotationStrategy]; strategy != "" && strategy != contract.StrategyRolling {
		return nil // another strategy's Deployment
	}
	recorded, err := strategies.ReadStatus(live.Annotations)
	if err != nil {
		return err
	}
	if recorded.Hash == "" {
		return nil // not written by the sink yet
	}
	if cmd := live.Annotations[contract.AnnotationCommand]; cmd != "" {
		return c.command(ctx, live, recorded, cmd)
	}

	rsets, err := c.replicaSets(ns).List(labels.SelectorFromSet(labels.Set{contract.LabelWorkload: name}))
	if err != nil {
		return fmt.Errorf("list ReplicaSets of %s: %w", key, err)
	}
	want := strategies.Desired{
		Hash:         recorded.Hash,
		Replicas:     live.Spec.Replicas,
		AutoRollback: autoRollback(live.Annotations),
		Commit:       recorded.Commit,
	}
	plan := strategies.PlanRolling(want, recorded, strategies.RollingObserved{Deployment: live, ReplicaSets: rsets})

	if plan.Status.Phase == strategies.PhaseHealthy && isPrimary(live) && c.hasDeployment(ns, name, "-blue", "-green", "-canary") {
		retired, err := c.retireProgressive(ctx, ns, name)
		if err != nil {
			return err
		}
		if retired {
			c.eventSwitched(live)
		}
	}

	updated := live.DeepCopy()
	writeStatus(updated, plan.Status)
	if plan.Template == strategies.TemplateRollback {
		updated.Spec.Template = workloadTemplate(plan.Rollback.Template, name)
	}
	if maps.Equal(updated.Annotations, live.Annotations) && plan.Template != strategies.TemplateRollback {
		return nil
	}
	if _, err := c.client.AppsV1().Deployments(ns).Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("write status of %s: %w", key, err)
	}
	c.report(updated, contract.StrategyRolling, recorded, plan.Status, outcome{rolledBack: plan.Template == strategies.TemplateRollback})
	return nil
}

// command acts on the plimsoll.dev/command annotation and clears it in the
// same write: pause and resume set spec.paused, retry forgets the failed
// hash so that the next sync starts the Git template again.
func (c *Controller) command(ctx context.Context, live *appsv1.Deployment, recorded strategies.Status, cmd string) error {
	updated := live.DeepCopy()
	delete(updated.Annotations, contract.AnnotationCommand)
	var did string
	switch strings.TrimSpace(cmd) {
	case contract.CommandPause:
		updated.Spec.Paused, did = true, "paused"
	case contract.CommandResume:
		updated.Spec.Paused, did = false, "resumed"
	case contract.CommandRetry:
		writeStatus(updated, strategies.Retry(recorded))
		did = "cleared the failed template; the next sync rolls out the Git template again"
	default:
		did = fmt.Sprintf("ignored unknown command %q (want pause, resume or retry)", cmd)
	}
	if _, err := c.client.AppsV1().Deployments(live.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("act on command %q: %w", cmd, err)
	}
	c.log.Info("command", "workload", live.Namespace+"/"+live.Name, "command", cmd, "result", did)
	c.metrics.command(strings.TrimSpace(cmd))
	c.events.Event(updated, corev1.EventTypeNormal, ReasonCommand, fmt.Sprintf("%s: %s", cmd, did))
	return nil
}

// writeStatus replaces the status annotations of d with s's.
func writeStatus(d *appsv1.Deployment, s strategies.Status) {
	for _, k := range []string{contract.AnnotationPhase, contract.AnnotationRevision, contract.AnnotationTemplateHash,
		contract.AnnotationFailedHash, contract.AnnotationCommit, contract.AnnotationMessage} {
		delete(d.Annotations, k)
	}
	for k, v := range s.Annotations() {
		setAnnotation(&d.ObjectMeta, k, v)
	}
}

// workloadTemplate is t labelled with its workload and stamped with its
// hash (see strategies.Stamp).
func workloadTemplate(t corev1.PodTemplateSpec, workload string) corev1.PodTemplateSpec {
	t = *t.DeepCopy()
	setLabel(&t.ObjectMeta, contract.LabelWorkload, workload)
	return strategies.Stamp(t)
}

func autoRollback(annotations map[string]string) bool {
	return annotations[contract.AnnotationAutoRollback] != "false"
}

// changeCause is "<short commit> <subject>", what kubectl rollout history
// shows for the revision.
func changeCause(commit, subject string) string {
	return strings.TrimSpace(short(commit) + " " + subject)
}

func short(commit string) string {
	if len(commit) > shortCommit {
		return commit[:shortCommit]
	}
	return commit
}

func setLabel(m *metav1.ObjectMeta, k, v string) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[k] = v
}

func setAnnotation(m *metav1.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}

// isNotFound reports whether err says the object does not exist.
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// keepAnnotation copies key from live to obj, so that an apply without a
// new template does not drop it.
func keepAnnotation(obj, live *appsv1.Deployment, key string) {
	if v, ok := live.Annotations[key]; ok {
		setAnnotation(&obj.ObjectMeta, key, v)
	}
}
