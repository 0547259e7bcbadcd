package rollout

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/prune"
	"plimsoll.dev/plimsoll/strategies"
)

// removeLeaving removes each workload of leaving (see removeWorkload),
// whose Deployment left Git and is pruned next by sync syncName, unless the Deployment that
// serves it (its namesake, or a blue-green workload's active color) is
// one that prune keeps (annotated plimsoll.dev/prune: disabled, or no
// longer labelled as the sync's): a blue-green workload has no namesake to
// keep, and retiring its colors would take it down.
func (c *Controller) removeLeaving(ctx context.Context, syncName string, leaving []types.NamespacedName) error {
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
// besides the Deployment <name> itself, as strategies.PlanRemoval plans
// it: the Services it steered lose the strategies' keys, then its colors
// and canary Deployment go. It reads the API server directly (a removal
// is rare, and a one-shot sync has no caches). The workload is marked
// leaving first: its reconciles do nothing from then on (a canary's
// would put the serving key back into the selector it just lost), until
// Git hands it off again.
func (c *Controller) removeWorkload(ctx context.Context, ns, name string) error {
	c.intents.leave(ns + "/" + name)
	deploys, err := c.listWorkload(ctx, ns, name)
	if err != nil {
		return err
	}
	w := &workload{ns: ns, name: name, deploys: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{}}
	l := strategies.Leaving{Workload: name, Deployments: deploys, Selectors: map[string]map[string]string{}}
	for _, d := range deploys {
		w.deploys[d.Name] = d
		for _, key := range serviceKeys {
			svc := d.Annotations[key]
			if svc == "" || w.services[svc] != nil {
				continue
			}
			got, err := c.client.CoreV1().Services(ns).Get(ctx, svc, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return fmt.Errorf("read Service %s: %w", svc, err)
			}
			w.services[svc], l.Selectors[svc] = got, got.Spec.Selector
		}
	}
	actions := strategies.PlanRemoval(l)
	if err := c.execute(ctx, &execution{w: w}, actions); err != nil {
		return err
	}
	for _, a := range actions {
		if a.Kind == strategies.ActionDelete {
			c.log.Info("deleted a Deployment of workload "+name+", which left Git", "workload", ns+"/"+name, "deployment", name+a.Deployment)
		}
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
