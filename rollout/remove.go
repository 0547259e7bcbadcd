package rollout

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plimsoll.dev/plimsoll/contract"
)

// RemoveWorkload retires what a workload whose Deployment left Git runs
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
func (c *Controller) RemoveWorkload(ctx context.Context, ns, name string) error {
	c.intents.leave(ns + "/" + name)
	sel := labels.SelectorFromSet(labels.Set{contract.LabelWorkload: name}).String()
	list, err := c.client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("list the Deployments of workload %s/%s: %w", ns, name, err)
	}
	var left []*appsv1.Deployment
	services := map[string]bool{}
	for i := range list.Items {
		d := &list.Items[i]
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
	_, err = c.deleteDeployments(ctx, ns, name, "of workload "+name+", which left Git", nil, left)
	return err
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
