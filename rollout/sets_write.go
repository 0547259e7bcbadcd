package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// writeSetStatus records plan's status, since, step and the pause on the
// set and clears the command acted on, in one merge patch of its
// annotations, when they differ from what it holds; with the Events of
// what changed. A patch that clears a command holds the version read, so
// that a command given since is not lost.
func (c *Controller) writeSetStatus(ctx context.Context, s *set, plan strategies.SetPlan, cmd strategies.Commanded) error {
	live := s.meta.GetAnnotations()
	want := plan.Status.Annotations()
	if !plan.Since.IsZero() {
		want[contract.AnnotationStepSince] = plan.Since.UTC().Format(time.RFC3339)
	}
	if plan.Step > 0 {
		want[contract.AnnotationStep] = strconv.Itoa(plan.Step)
	}
	if cmd.Held.Paused {
		want[contract.AnnotationPaused] = "true"
	}
	patch := map[string]any{}
	for _, k := range append(slices.Clone(contract.StatusKeys), contract.AnnotationStepSince, contract.AnnotationStep,
		contract.AnnotationPaused, contract.AnnotationCommand) {
		switch v, ok := want[k]; {
		case ok && live[k] != v:
			patch[k] = v
		case !ok && live[k] != "":
			patch[k] = nil
		}
	}
	if len(patch) == 0 {
		return nil
	}
	meta := map[string]any{"annotations": patch}
	if _, clears := live[contract.AnnotationCommand]; clears {
		meta["resourceVersion"] = s.version
	}
	body, _ := json.Marshal(map[string]any{"metadata": meta})
	// The status is the daemon's bookkeeping, written to the status
	// subresource as a Deployment's is (docs/syncs.md).
	if err := c.patchSet(ctx, c.client, s, types.MergePatchType, body, statusSubresource); err != nil {
		return fmt.Errorf("write the status of %s %s/%s: %w", s.kind, s.meta.GetNamespace(), s.meta.GetName(), err)
	}
	if cmd.Name != "" {
		c.metrics.command(cmd.Name)
		c.events.Event(ctx, s.obj, corev1.EventTypeNormal, ReasonCommand, fmt.Sprintf("%s: %s", cmd.Name, cmd.Describe(plan.Acted)))
	}
	c.reportSet(ctx, s, plan)
	return nil
}

// reportSet tells of a status written on a set as report does of a
// Deployment's: a log line, the metrics, one Event for the change
// (RolledBack, RolloutFailed or PhaseChanged), then the notifier.
func (c *Controller) reportSet(ctx context.Context, s *set, plan strategies.SetPlan) {
	recorded, _ := strategies.ReadStatus(s.meta.GetAnnotations())
	ns, name, status := s.meta.GetNamespace(), s.meta.GetName(), plan.Status
	strategy := contract.StrategyRolling
	if canaryOf(s) != nil {
		strategy = contract.StrategyCanary
	}
	c.log.Info("workload status", "kind", s.kind, "workload", ns+"/"+name, "strategy", strategy,
		"revision", status.Revision, "phase", string(status.Phase), "message", status.Message)
	c.metrics.observe(ns, name, strategy, status, c.clock.Now())
	switch {
	case plan.Failed && plan.Rollback:
		c.metrics.rolledBack(strategy)
		c.events.Event(ctx, s.obj, corev1.EventTypeWarning, ReasonRolledBack, status.Message)
	case plan.Failed:
		c.events.Event(ctx, s.obj, corev1.EventTypeWarning, ReasonRolloutFailed, status.Message)
	case status.Phase != recorded.Phase:
		c.events.Event(ctx, s.obj, corev1.EventTypeNormal, ReasonPhase, fmt.Sprintf("%s: %s", status.Phase, status.Message))
	}
	if c.notifier != nil {
		c.notifier.Notify(StatusReport{Namespace: ns, Workload: name, Kind: s.kind, Strategy: strategy,
			Recorded: recorded, Status: status, RolledBack: plan.Failed && plan.Rollback})
	}
}

// patchSet patches the set (or its subresources) as the rollout
// controller.
func (c *Controller) patchSet(ctx context.Context, client kubernetes.Interface, s *set, pt types.PatchType, body []byte, subresources ...string) error {
	ns, name, opts := s.meta.GetNamespace(), s.meta.GetName(), metav1.PatchOptions{FieldManager: FieldManager}
	var out metav1.Object
	var err error
	switch s.kind {
	case kindStatefulSet:
		out, err = client.AppsV1().StatefulSets(ns).Patch(ctx, name, pt, body, opts, subresources...)
	case kindDaemonSet:
		out, err = client.AppsV1().DaemonSets(ns).Patch(ctx, name, pt, body, opts, subresources...)
	}
	if err == nil {
		s.version = out.GetResourceVersion()
	}
	return err
}

// setHold is what a write of a set's template or hold sets beside it: a
// StatefulSet's partition, a DaemonSet's update strategy (whole).
type setHold struct {
	partition *int32
	strategy  map[string]any
}

// ops are the JSON patch operations of hold.
func (h setHold) ops() []map[string]any {
	var ops []map[string]any
	if h.partition != nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/updateStrategy/rollingUpdate/partition", "value": *h.partition})
	}
	if h.strategy != nil {
		ops = append(ops, map[string]any{"op": "replace", "path": "/spec/updateStrategy", "value": h.strategy})
	}
	return ops
}

// writeSetTemplate writes template t over the set's: the whole of it, as
// a JSON patch replaces it, on the version the controller read; with
// hold in the same write.
func (c *Controller) writeSetTemplate(ctx context.Context, client kubernetes.Interface, s *set, t corev1.PodTemplateSpec, hold setHold) error {
	ops := append([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": s.version},
		{"op": "replace", "path": "/spec/template", "value": t},
	}, hold.ops()...)
	body, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encode the template of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	if err := c.patchSet(ctx, client, s, types.JSONPatchType, body); err != nil {
		return fmt.Errorf("write the template of %s %s/%s: %w", s.kind, s.meta.GetNamespace(), s.meta.GetName(), err)
	}
	return nil
}

// writeHold writes what holds a canary set's update back, or lets it go:
// a StatefulSet's partition (the ordinals from it up run its template),
// a DaemonSet's update strategy.
func (c *Controller) writeHold(ctx context.Context, client kubernetes.Interface, s *set, hold setHold) error {
	body, err := json.Marshal(hold.ops())
	if err != nil {
		return fmt.Errorf("encode the update strategy of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	if err := c.patchSet(ctx, client, s, types.JSONPatchType, body); err != nil {
		return fmt.Errorf("write the update strategy of %s %s/%s: %w", s.kind, s.meta.GetNamespace(), s.meta.GetName(), err)
	}
	return nil
}
