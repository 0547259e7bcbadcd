package rollout

import (
	"context"

	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/contract"
)

// reconcile brings one workload a step further. It reads like the
// checklist it is: what Git asks (the intent the sync handed over, if any),
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

// strategyOf tells a workload's strategy: Git's, when the sync handed the
// workload over; else from the Deployments it has: rolling when <name> is
// the primary, canary when it is a canary's stable (both also while they
// retire what a previous strategy left), blue-green once it has a color,
// canary when <name> says so and is not blue-green's idle legacy, else
// rolling.
func (c *Controller) strategyOf(w *workload, in intent) string {
	if in.git != nil {
		if s := in.git.Annotations[contract.AnnotationStrategy]; s != "" {
			return s
		}
		return contract.StrategyRolling
	}
	d := w.deployment("")
	switch role := annotationsOf(d)[contract.AnnotationRole]; {
	case isPrimary(d):
		return contract.StrategyRolling
	case role == contract.RoleStable:
		return contract.StrategyCanary // also while it retires the colors it switched from
	case w.hasAny(colorSuffixes):
		return contract.StrategyBlueGreen
	case d != nil && d.Annotations[contract.AnnotationStrategy] == contract.StrategyCanary && role != contract.RoleIdle:
		return contract.StrategyCanary
	}
	return contract.StrategyRolling
}
