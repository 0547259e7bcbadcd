package rollout

import (
	"context"

	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/contract"
	workloads "plimsoll.dev/plimsoll/workload"
)

// reconcile brings one workload a step further. It reads like the
// checklist it is: what Git asks (the intent the sync handed off, if any),
// what runs (the caches), refused by its last commit? a Deployment that
// runs already but is not plimsoll's yet (adopt)? then the strategy's
// reconcile: plan with the pure planner, execute the plan, write status
// once and only when it changed.
func (c *Controller) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller made; nothing to retry
	}
	if c.intents.isLeaving(key) {
		return nil // its Deployment left Git; removeWorkload retires it
	}
	in, _ := c.intents.get(key)
	var gitAnnotations map[string]string
	if in.git != nil {
		gitAnnotations = in.git.Annotations
	}
	w := c.observe(ns, name, gitAnnotations)
	c.lookUpMissing(ctx, w, gitAnnotations)
	c.lookUpAutoscalers(ctx, w, gitAnnotations)
	if in.refused != nil {
		return c.holdRefused(ctx, w, in)
	}
	if err := c.adopt(ctx, w, in.git); err != nil {
		return err
	}
	switch c.strategyOf(w, in) {
	case contract.StrategyBlueGreen:
		return c.reconcileBlueGreen(ctx, w, in)
	case contract.StrategyCanary:
		return c.reconcileCanary(ctx, w, in)
	}
	return c.reconcileRolling(ctx, w, in)
}

// strategyOf tells a workload's strategy: Git's, when the sync handed
// the workload over; else what its Deployments run (see
// workloads.StrategyOf).
func (c *Controller) strategyOf(w *workload, in intent) string {
	if in.git != nil {
		return workloads.NamedStrategy(in.git.Annotations)
	}
	s, _ := workloads.StrategyOf(w.name, w.lookup) // w.lookup never fails
	return s
}
