package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// DeploymentSink takes the Deployments of a synced commit that need a
// write: new, changed in Git, or drifted from it in the cluster. commit and
// subject name the commit they came from; each Deployment is as in Git,
// with its namespace and the plimsoll.dev/sync label set. The sync engine
// calls it after the commit's other objects are applied, and records the
// Deployments as applied only when it returns nil.
//
// CheckDeployment is asked about every Deployment of a commit before
// anything of it is applied; an error refuses the whole commit. services
// names the Services of the Deployment's namespace that the commit
// applies.
type DeploymentSink interface {
	CheckDeployment(ctx context.Context, desired *appsv1.Deployment, services []string) error
	SyncDeployments(ctx context.Context, commit, subject string, desired []*appsv1.Deployment) error
}

var _ DeploymentSink = (*Controller)(nil)

// SyncDeployments plans each Git Deployment against what runs and writes
// it, in one server-side apply, with the template the plan names (Git's
// for a new revision, the live one for a refused revision, the previous one
// for a rollback) and the status annotations. It reads the cluster
// directly rather than through the informers, so it also works for a
// one-shot sync with no controller running; the reconcile loop takes over
// from the write.
func (c *Controller) SyncDeployments(ctx context.Context, commit, subject string, desired []*appsv1.Deployment) error {
	var errs []error
	for _, d := range desired {
		// The progressive strategies read and update: a write that lost
		// a race with the Deployment controller's status is read again.
		err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			return c.syncDeployment(ctx, commit, subject, d)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("roll out Deployment %s/%s of commit %.7s: %w", d.Namespace, d.Name, commit, err))
			continue
		}
		c.queue.Add(d.Namespace + "/" + d.Name)
	}
	return errors.Join(errs...)
}

// CheckDeployment reports what keeps a Git Deployment from being rolled
// out as written: a namespace the controller does not watch (see
// Config.Namespaces), an unknown strategy, an annotation value that does not
// parse, a Service the strategy needs that is unnamed, or neither in the
// commit (services) nor in the cluster. A refusal of a blue-green or canary
// workload is also recorded on its live Deployments, phase Degraded and the
// error as message, which the pods do not notice.
func (c *Controller) CheckDeployment(ctx context.Context, git *appsv1.Deployment, services []string) error {
	if !c.watches(git.Namespace) {
		return fmt.Errorf("namespace %q is not one the rollout controller watches", git.Namespace)
	}
	err := checkAnnotations(git.Annotations)
	if err == nil {
		err = c.checkServices(ctx, git, services)
	}
	if err == nil {
		return nil
	}
	if strategy := git.Annotations[contract.AnnotationStrategy]; !isInputError(err) || (strategy != contract.StrategyBlueGreen && strategy != contract.StrategyCanary) {
		// A rolling workload's status is the rolling plan's to write; the
		// refusal shows in the sync status.
		return err
	}
	var live []*appsv1.Deployment
	for _, name := range workloadDeployments(git) {
		d, gerr := c.getDeployment(ctx, git.Namespace, name)
		if gerr != nil {
			return errors.Join(err, gerr)
		}
		live = append(live, d)
	}
	return c.invalid(ctx, err, git.Annotations, live...)
}

// checkServices checks that the Services git's strategy steers exist, or
// come with the commit (services).
func (c *Controller) checkServices(ctx context.Context, git *appsv1.Deployment, services []string) error {
	for _, key := range []string{contract.AnnotationActiveService, contract.AnnotationPreviewService, contract.AnnotationService} {
		name := git.Annotations[key]
		if name == "" || slices.Contains(services, name) || !steers(git.Annotations[contract.AnnotationStrategy], key) {
			continue
		}
		if _, err := c.getService(ctx, git.Namespace, git.Annotations, key); err != nil {
			return err
		}
	}
	return nil
}

// steers reports whether strategy uses the Service named by annotation key.
func steers(strategy, key string) bool {
	switch key {
	case contract.AnnotationActiveService, contract.AnnotationPreviewService:
		return strategy == contract.StrategyBlueGreen
	case contract.AnnotationService:
		return strategy == contract.StrategyCanary
	}
	return false
}

// syncDeployment hands one Git Deployment to its strategy.
func (c *Controller) syncDeployment(ctx context.Context, commit, subject string, git *appsv1.Deployment) error {
	defer c.locks.lock(git.Namespace + "/" + git.Name)()
	switch strategy := git.Annotations[contract.AnnotationStrategy]; strategy {
	case "", contract.StrategyRolling:
		return c.syncRolling(ctx, commit, subject, git)
	case contract.StrategyBlueGreen:
		return c.syncBlueGreen(ctx, commit, subject, git)
	case contract.StrategyCanary:
		return c.syncCanary(ctx, commit, subject, git)
	default:
		return fmt.Errorf("annotation %s: unknown strategy %q (want %s, %s or %s)",
			contract.AnnotationStrategy, strategy, contract.StrategyRolling, contract.StrategyBlueGreen, contract.StrategyCanary)
	}
}

// syncRolling writes a rolling Deployment as its plan says.
func (c *Controller) syncRolling(ctx context.Context, commit, subject string, git *appsv1.Deployment) error {
	live, err := c.client.AppsV1().Deployments(git.Namespace).Get(ctx, git.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return fmt.Errorf("read the live Deployment: %w", err)
	}
	recorded := strategies.Status{}
	var rsets []*appsv1.ReplicaSet
	if live != nil {
		if recorded, err = strategies.ReadStatus(live.Annotations); err != nil {
			return err
		}
		list, err := c.client.AppsV1().ReplicaSets(git.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: labels.Set{contract.LabelWorkload: git.Name}.String(),
		})
		if err != nil {
			return fmt.Errorf("list the ReplicaSets: %w", err)
		}
		for i := range list.Items {
			rsets = append(rsets, &list.Items[i])
		}
	}
	if !isPrimary(live) && c.hasDeployment(git.Namespace, git.Name, "-blue", "-green") {
		// Switching from blue-green, whose status is on the colors: the
		// revisions count on from there.
		if recorded, err = c.latestStatus(ctx, git.Namespace, git.Name, recorded); err != nil {
			return err
		}
	}
	want := strategies.Desired{
		Hash:         strategies.TemplateHash(git.Spec.Template),
		Replicas:     git.Spec.Replicas,
		AutoRollback: autoRollback(git.Annotations),
		Commit:       commit,
	}
	plan := strategies.PlanRolling(want, recorded, strategies.RollingObserved{Deployment: live, ReplicaSets: rsets})
	if plan.Template == strategies.TemplateLive && live == nil {
		c.log.Info("not creating a Deployment whose template is refused", "workload", git.Namespace+"/"+git.Name)
		return nil
	}

	keep := map[string]string{}
	if live != nil && !isPrimary(live) {
		// The workload was blue-green or canary: <name> becomes the
		// primary, and what the previous strategy left goes once it is
		// Healthy (see retireProgressive).
		if keep, err = c.retireFromRolling(ctx, live, git); err != nil {
			return err
		}
	}

	obj := git.DeepCopy()
	obj.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	obj.Status = appsv1.DeploymentStatus{}
	obj.ResourceVersion, obj.UID, obj.ManagedFields = "", "", nil
	setLabel(&obj.ObjectMeta, contract.LabelWorkload, git.Name)
	for k, v := range plan.Status.Annotations() {
		setAnnotation(&obj.ObjectMeta, k, v)
	}
	setAnnotation(&obj.ObjectMeta, contract.AnnotationRole, string(strategies.RolePrimary))
	switch plan.Template {
	case strategies.TemplateGit:
		obj.Spec.Template = workloadTemplate(git.Spec.Template, git.Name)
		setAnnotation(&obj.ObjectMeta, AnnotationChangeCause, changeCause(commit, subject))
	case strategies.TemplateLive:
		obj.Spec.Template = live.Spec.Template
		keepAnnotation(obj, live, AnnotationChangeCause)
	case strategies.TemplateRollback:
		obj.Spec.Template = workloadTemplate(plan.Rollback.Template, git.Name)
		keepAnnotation(obj, live, AnnotationChangeCause)
	}
	for k, v := range keep {
		setLabel(&obj.Spec.Template.ObjectMeta, k, v)
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode the Deployment: %w", err)
	}
	force := true
	_, err = c.client.AppsV1().Deployments(git.Namespace).Patch(ctx, git.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	c.log.Info("applied workload", "workload", git.Namespace+"/"+git.Name, "revision", plan.Status.Revision,
		"commit", short(commit), "template", plan.Template.String(), "phase", string(plan.Status.Phase))
	return nil
}
