package rollout

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// adoptAttempts bounds the reads and patches that take kubectl's fields
// of an adopted Deployment over when each conflicts with a change made
// since the read (the Deployment controller's status writes).
const adoptAttempts = 3

// adopt takes over the Deployment <name> of a workload when it runs
// already but was not written by plimsoll, as strategies.PlanAdoption
// plans it. It asks the API server only when the caches hold no
// Deployment of the workload that could be <name>: when a workload is
// first handed off, and for blue-green before its first color exists.
// A progressive workload of plimsoll's own whose <name> is gone has
// nothing foreign to adopt.
func (c *Controller) adopt(ctx context.Context, w *workload, git *appsv1.Deployment) error {
	if git == nil || w.deployment("") != nil || w.hasAny(sideSuffixes) {
		return nil
	}
	found, err := c.client.AppsV1().Deployments(w.ns).Get(ctx, w.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read Deployment %s/%s to adopt it: %w", w.ns, w.name, err)
	}
	return c.execute(ctx, &execution{w: w, git: git, found: found}, strategies.PlanAdoption(w.name, git, found))
}

// executeAdopt adopts x.found as action a asks: it labels the Deployment
// and the ReplicaSets it controls (metadata only: the pod template, and
// so every pod, stays as it is), takes kubectl's fields over, and adds
// them to the workload for this reconcile; the caches hold them from
// then on.
func (c *Controller) executeAdopt(ctx context.Context, x *execution, a strategies.Action) error {
	if x.found == nil {
		return nil
	}
	w := x.w
	adopted, err := c.labelDeployment(ctx, x.found, a.Labels)
	if err != nil {
		return err
	}
	if adopted, err = c.claimCreatorFields(ctx, adopted); err != nil {
		return err
	}
	c.written.wrote(adopted)
	w.deploys[adopted.Name] = adopted
	rsets, err := c.labelReplicaSets(ctx, adopted, w.name)
	if err != nil {
		return err
	}
	w.rsets = append(w.rsets, rsets...)
	c.log.Info("adopted a Deployment that runs already", "workload", w.ns+"/"+w.name, "replicaSets", len(rsets))
	c.eventFor(ctx, adopted, corev1.EventTypeNormal, ReasonAdopted,
		fmt.Sprintf("took over Deployment %s, which plimsoll did not create; its pods keep running", adopted.Name))
	return nil
}

// claimCreatorFields gives the controller the fields that kubectl owns on
// Deployment d, just adopted, and returns d as stored (see takeover.Patch):
// the values stay as they run, no pod changes. kubectl owns them because
// it created d (`kubectl apply`, `kubectl create`), and it would go on
// co-owning each field plimsoll writes with the same value: once plimsoll
// has stamped the template, that ownership reads as a change by hand (see
// runsGit), and Git's template was written again over a canary's
// hand-over, replacing the pods it had just handed over. After this, a
// field kubectl owns is one kubectl set since. A conflict is a change
// made since d was read: d is read again, up to adoptAttempts times.
func (c *Controller) claimCreatorFields(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	for range adoptAttempts {
		out, err := c.claimKubectlFields(ctx, d)
		switch {
		case err == nil && out == nil:
			return d, nil
		case err == nil:
			return out, nil
		case !apierrors.IsConflict(err):
			return nil, fmt.Errorf("take over the fields kubectl set on Deployment %s: %w", d.Name, err)
		}
		if d, err = c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("read Deployment %s to take over kubectl's fields: %w", d.Name, err)
		}
	}
	return d, nil
}

// labelDeployment sets labels on Deployment d, unless it has them.
func (c *Controller) labelDeployment(ctx context.Context, d *appsv1.Deployment, labels map[string]string) (*appsv1.Deployment, error) {
	patch, missing := labelPatch(d.Labels, labels)
	if !missing {
		return d, nil
	}
	out, err := c.writerOf(d).AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("label Deployment %s to adopt it: %w", d.Name, err)
	}
	return out, nil
}

// labelReplicaSets labels the ReplicaSets that Deployment d controls with
// its workload, so that a rollback finds the revision that ran before
// plimsoll, and returns them.
func (c *Controller) labelReplicaSets(ctx context.Context, d *appsv1.Deployment, workload string) ([]*appsv1.ReplicaSet, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("read the selector of Deployment %s: %w", d.Name, err)
	}
	list, err := c.client.AppsV1().ReplicaSets(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("list the ReplicaSets of Deployment %s: %w", d.Name, err)
	}
	var out []*appsv1.ReplicaSet
	for i := range list.Items {
		rs := &list.Items[i]
		if !metav1.IsControlledBy(rs, d) {
			continue
		}
		patch, missing := labelPatch(rs.Labels, map[string]string{contract.LabelWorkload: workload})
		if missing {
			if rs, err = c.writerOf(d).AppsV1().ReplicaSets(d.Namespace).Patch(ctx, rs.Name, types.MergePatchType, patch,
				metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
				return nil, fmt.Errorf("label ReplicaSet %s to adopt it: %w", list.Items[i].Name, err)
			}
		}
		out = append(out, rs)
	}
	return out, nil
}

// labelPatch is the merge patch that sets want on an object labelled
// have, and whether any label is missing or different.
func labelPatch(have, want map[string]string) ([]byte, bool) {
	missing := false
	for k, v := range want {
		if have[k] != v {
			missing = true
		}
	}
	labels, _ := json.Marshal(want) // a map of strings always encodes
	return fmt.Appendf(nil, `{"metadata":{"labels":%s}}`, labels), missing
}
