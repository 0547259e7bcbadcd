package rollout

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/prune"
)

// retireLeaving retires each workload of leaving, whose Deployment left
// Git and is pruned next by sync syncName, unless the Deployment that
// serves it (its namesake, or a blue-green workload's active color) is
// one that prune keeps (annotated plimsoll.dev/prune: disabled, or no
// longer labelled as the sync's): a blue-green workload has no namesake to
// keep, and retiring its colors would take it down.
func (c *Controller) retireLeaving(ctx context.Context, syncName string, leaving []types.NamespacedName) error {
	var errs []error
	for _, w := range leaving {
		serving, err := c.ServingDeployment(ctx, w.Namespace, w.Name)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("read workload %s: %w", w, err))
			continue
		case serving != nil && !prune.Allowed(serving, syncName):
			continue // kept, and all it runs with it
		}
		if err := c.removeWorkload(ctx, w.Namespace, w.Name); err != nil {
			errs = append(errs, fmt.Errorf("remove workload %s: %w", w, err))
		}
	}
	return errors.Join(errs...)
}

// removeWorkload retires what a workload whose Deployment left Git runs
// besides the Deployment <name> itself, which the sync prunes like any
// object: the blue-green colors and the canary Deployment, and the
// selector keys plimsoll added to the Services the workload steered
// (plimsoll.dev/color, plimsoll.dev/serving), in an order that never
// narrows a Service that stays in Git:
//
//  1. each Service loses the keys, so it selects every pod of the
//     workload (both colors, stable and canary) and of any Deployment
//     that replaces it in Git with the same labels: never fewer ready
//     endpoints than before;
//  2. then the Deployments are deleted.
//
// It reads and writes the API server directly (a removal is rare, and a
// one-shot sync has no caches). The workload is marked leaving first: its
// reconciles do nothing from then on (a canary's would put the serving key
// back into the selector it just lost), until Git hands it over again.
func (c *Controller) removeWorkload(ctx context.Context, ns, name string) error {
	c.intents.leave(ns + "/" + name)
	deploys, err := c.listWorkload(ctx, ns, name)
	if err != nil {
		return err
	}
	var left []*appsv1.Deployment
	services := map[string]bool{}
	for _, d := range deploys {
		for _, key := range serviceKeys {
			if s := d.Annotations[key]; s != "" {
				services[s] = true
			}
		}
		if d.Name != name {
			left = append(left, d)
		}
	}
	for svc := range services {
		if err := c.dropWorkloadKeys(ctx, ns, svc); err != nil {
			return err
		}
	}
	return c.deleteDeployments(ctx, ns, name, left)
}

// deleteDeployments deletes the Deployments deploys of workload ns/name,
// which left Git, each on the condition that it is still the object read
// (its UID), and forgets them. A switch of strategy deletes Deployments as
// planned actions instead (see retire).
func (c *Controller) deleteDeployments(ctx context.Context, ns, name string, deploys []*appsv1.Deployment) error {
	for _, d := range deploys {
		err := c.writerOf(d).AppsV1().Deployments(ns).Delete(ctx, d.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &d.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Deployment %s of workload %s, which left Git: %w", d.Name, name, err)
		}
		c.forgetDeployment(ns, d.Name)
		c.log.Info("deleted a Deployment of workload "+name+", which left Git", "workload", ns+"/"+name, "deployment", d.Name)
	}
	return nil
}

// listWorkload returns the Deployments of workload ns/name (labelled
// plimsoll.dev/workload=name) as the API server holds them.
func (c *Controller) listWorkload(ctx context.Context, ns, name string) ([]*appsv1.Deployment, error) {
	sel := labels.SelectorFromSet(labels.Set{contract.LabelWorkload: name}).String()
	list, err := c.client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list the Deployments of workload %s/%s: %w", ns, name, err)
	}
	deploys := make([]*appsv1.Deployment, len(list.Items))
	for i := range list.Items {
		deploys[i] = &list.Items[i]
	}
	return deploys, nil
}

// dropWorkloadKeys removes the selector keys a strategy adds from Service
// ns/name; a Service that is gone is nothing to do.
func (c *Controller) dropWorkloadKeys(ctx context.Context, ns, name string) error {
	svc, err := c.client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read Service %s: %w", name, err)
	}
	return c.steer(ctx, nil, svc, selectorChange{drop: []string{contract.LabelColor, contract.LabelServing}})
}
