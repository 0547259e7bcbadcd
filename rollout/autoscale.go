package rollout

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
)

// A HorizontalPodAutoscaler that targets a workload's Deployment owns its
// replica count: plimsoll reads the count, never resets it to Git's.
//
//	rolling: the apply of the Git Deployment carries the live count (with
//	    the live resourceVersion, so that a scale in between is a conflict
//	    and the apply is planned again), so an HPA that scaled 2 to 6 sees
//	    no write at all.
//	canary: the HPA keeps targeting the stable Deployment <name>, and its
//	    count is the workload's total. The controller never writes the
//	    stable's count: at weight w the canary runs ceil(w·total/100) pods,
//	    and a stable pod leaves the Service (loses plimsoll.dev/serving)
//	    for each canary pod that joins it, down to the stable's share,
//	    ceil((100-w)·total/100), so the Service serves the total or one
//	    more, the canary's share w. Those stable pods keep running until
//	    the promotion replaces them or an abort labels them again.
//	blue-green: the HPA targets the active color. The new color is brought
//	    up to the active color's count, and at the swap the controller
//	    points the HPA at the new active color; the sync keeps that
//	    target when it applies Git's HPA (see apply's keepScaleTarget),
//	    so it is no drift.

// autoscalerOf returns the HorizontalPodAutoscaler of namespace ns, from
// the caches, that targets one of the Deployments names, and the name it
// targets; nil when none does.
func (c *Controller) autoscalerOf(ns string, names ...string) (*autoscalingv2.HorizontalPodAutoscaler, string) {
	v, ok := c.viewOf(ns)
	if !ok || v.autoscalers == nil {
		return nil, ""
	}
	list, _ := v.autoscalers.HorizontalPodAutoscalers(ns).List(labels.Everything())
	return scalerOf(list, names)
}

// autoscaler returns the HorizontalPodAutoscaler of w, as observed, that
// targets one of the Deployments names, and the name it targets; nil
// when none does.
func (w *workload) autoscaler(names ...string) (*autoscalingv2.HorizontalPodAutoscaler, string) {
	return scalerOf(w.autoscalers, names)
}

// autoscaledCount returns the replica count of Deployment d of w when an
// HPA targets it, and whether one does: the count the HPA set, which is
// d's own.
func (w *workload) autoscaledCount(d *appsv1.Deployment) (int32, bool) {
	if d == nil {
		return 0, false
	}
	if h, _ := w.autoscaler(d.Name); h == nil {
		return 0, false
	}
	return specReplicas(d), true
}

// ofWorkload returns those of list that target a Deployment of workload
// name: <name>, or <name> with a suffix plimsoll gives it.
func ofWorkload(list []*autoscalingv2.HorizontalPodAutoscaler, name string) []*autoscalingv2.HorizontalPodAutoscaler {
	names := workloadNames(name)
	var out []*autoscalingv2.HorizontalPodAutoscaler
	for _, h := range list {
		if slices.ContainsFunc(names, func(n string) bool { return targets(h, n) }) {
			out = append(out, h)
		}
	}
	return out
}

// workloadNames are the names of the Deployments workload name may run.
func workloadNames(name string) []string {
	names := []string{name}
	for _, s := range sideSuffixes {
		names = append(names, name+s)
	}
	return names
}

// scalerOf returns the first of list that targets one of the Deployments
// names, and the name it targets; nil when none does.
func scalerOf(list []*autoscalingv2.HorizontalPodAutoscaler, names []string) (*autoscalingv2.HorizontalPodAutoscaler, string) {
	for _, h := range list {
		for _, name := range names {
			if targets(h, name) {
				return h, name
			}
		}
	}
	return nil, ""
}

// targets reports whether h scales the apps/v1 Deployment name.
func targets(h *autoscalingv2.HorizontalPodAutoscaler, name string) bool {
	ref := h.Spec.ScaleTargetRef
	return ref.Kind == "Deployment" && ref.Name == name && (ref.APIVersion == "" || ref.APIVersion == "apps/v1")
}

// lookUpAutoscalers reads from the API server, for a blue-green workload
// that a one-shot sync (once mode) has just handed off, the
// HorizontalPodAutoscalers the caches do not show it: one the sync
// created a moment ago, naming <name> as Git writes it, may not have
// reached the informer yet, and the swap's retarget onto the active color
// would wait for the next run, the HPA meanwhile scaling a Deployment
// that does not exist. The daemon needs no such look: the HPA's add
// event queues the workload again. One list of the namespace's HPAs,
// only when the caches hold none of the workload's.
func (c *Controller) lookUpAutoscalers(ctx context.Context, w *workload, annotations map[string]string) {
	if !c.once.Load() || annotations[contract.AnnotationStrategy] != contract.StrategyBlueGreen || len(w.autoscalers) > 0 {
		return
	}
	list, err := c.listAutoscalers(ctx, w.ns)
	if err != nil {
		c.log.Warn("read the autoscalers of a workload handed off", "workload", w.ns+"/"+w.name, "error", err)
		return
	}
	w.autoscalers = ofWorkload(list, w.name)
}

// listAutoscalers lists the HorizontalPodAutoscalers of namespace ns from
// the API server.
func (c *Controller) listAutoscalers(ctx context.Context, ns string) ([]*autoscalingv2.HorizontalPodAutoscaler, error) {
	list, err := c.client.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the HorizontalPodAutoscalers of namespace %s: %w", ns, err)
	}
	all := make([]*autoscalingv2.HorizontalPodAutoscaler, len(list.Items))
	for i := range list.Items {
		all[i] = &list.Items[i]
	}
	return all, nil
}

// retarget points HPA h at Deployment to, as a blue-green swap hands the
// traffic over.
func (c *Controller) retarget(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler, to string) error {
	patch := fmt.Appendf(nil, `{"spec":{"scaleTargetRef":{"name":%q}}}`, to)
	if _, err := c.writerOf(h).AutoscalingV2().HorizontalPodAutoscalers(h.Namespace).Patch(ctx, h.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("point HorizontalPodAutoscaler %s at Deployment %s: %w", h.Name, to, err)
	}
	c.log.Info("pointed the autoscaler at the active color", "namespace", h.Namespace, "autoscaler", h.Name,
		"from", h.Spec.ScaleTargetRef.Name, "deployment", to)
	return nil
}

// enqueueAutoscaled queues the workload whose Deployment an HPA targets:
// an HPA created, edited or deleted changes who owns the count.
func (c *Controller) enqueueAutoscaled(obj any) {
	if c.once.Load() {
		return
	}
	h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return
	}
	name := h.Spec.ScaleTargetRef.Name
	if v, found := c.viewOf(h.Namespace); found {
		if d, err := v.deploys.Deployments(h.Namespace).Get(name); err == nil && d.Labels[contract.LabelWorkload] != "" {
			name = d.Labels[contract.LabelWorkload]
		}
	}
	c.queue.Add(h.Namespace + "/" + name)
}

// autoscaledLive reports whether an HPA scales the live Deployment named
// live.
func (c *Controller) autoscaledLive(ctx context.Context, ns, live string) (bool, error) {
	target, err := c.liveScaleTarget(ctx, ns, live)
	return target != "", err
}

// liveScaleTarget returns which of the Deployments names an HPA of
// namespace ns targets, "" for none: from the caches when the controller
// runs, else from the API server (plimsoll diff).
func (c *Controller) liveScaleTarget(ctx context.Context, ns string, names ...string) (string, error) {
	if c.running() {
		_, target := c.autoscalerOf(ns, names...)
		return target, nil
	}
	all, err := c.listAutoscalers(ctx, ns)
	if err != nil {
		return "", err
	}
	_, target := scalerOf(all, names)
	return target, nil
}
