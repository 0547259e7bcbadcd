package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/strategies"
)

// errSelectorRefused is the error of a refused selector write (see
// steer): the reconcile fails and is retried, the old selector stays.
var errSelectorRefused = errors.New("selector refused")

// selectorChange is one write of a Service's selector: entries to set
// and keys to remove, in one merge patch, with the fewest ready endpoints
// the Service must keep under the new selector.
type selectorChange struct {
	set  map[string]string
	drop []string
	keep int32
	// repair says the write puts back what the workload's recorded state
	// says the selector held, changed outside the controller: it is
	// reported as a repair.
	repair bool
}

// next is the selector current becomes under ch.
func (ch selectorChange) next(current map[string]string) map[string]string {
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	for _, k := range ch.drop {
		delete(next, k)
	}
	maps.Copy(next, ch.set)
	return next
}

// steer writes ch into the selector of Service svc, a Service workload w
// steers, in one merge patch that the endpoints follow at once. Every
// selector write of the controller goes through here, and none goes out
// unchecked: the new selector must select at least as many ready pods of
// the workload (from the caches) as ch keeps, or as serve now if fewer
// (see strategies.GuardSelector), whatever the plan asked. A refused
// write is logged, counted and recorded as a Warning Event on the Service,
// the selector stays as it is, and errSelectorRefused is returned: the
// plan is not executed further and is made again. A selector that holds
// ch already, or no Service (nil), is nothing to do; nor is a Service gone
// before a removal.
func (c *Controller) steer(ctx context.Context, w *workload, svc *corev1.Service, ch selectorChange) error {
	if svc == nil {
		return nil
	}
	current := svc.Spec.Selector
	next := ch.next(current)
	if maps.Equal(current, next) {
		return nil
	}
	var endpoints []string
	var pods []*corev1.Pod
	if w != nil {
		endpoints, pods = w.ready[svc.Name], w.pods
	}
	if check := strategies.GuardSelector(current, next, endpoints, pods, ch.keep); !check.Safe() {
		msg := fmt.Sprintf("kept the selector %s: %s %s", selectorString(current), selectorString(next), check)
		c.log.Warn("refused a Service selector", "namespace", svc.Namespace, "service", svc.Name,
			"selector", selectorString(current), "refused", selectorString(next), "have", check.Have, "would", check.Would, "need", check.Need)
		c.metrics.selectorRefused(svc.Namespace, svc.Name)
		c.eventFor(ctx, svc, corev1.EventTypeWarning, ReasonSelectorRefused, msg)
		return fmt.Errorf("set the selector of Service %s to %s: %w: %s", svc.Name, selectorString(next), errSelectorRefused, check)
	}
	patch, err := selectorPatch(ch)
	if err != nil {
		return err
	}
	out, err := c.writerFor(w, svc).CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case len(ch.set) == 0 && apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("set the selector of Service %s to %s: %w", svc.Name, selectorString(next), err)
	}
	c.steered.wrote(out)
	if ch.repair {
		c.log.Info("repaired a Service selector changed outside Git", "namespace", svc.Namespace, "service", svc.Name,
			"from", selectorString(current), "to", selectorString(next))
		c.eventFor(ctx, out, corev1.EventTypeWarning, ReasonSelectorRepaired,
			fmt.Sprintf("the selector was changed outside the rollout controller: %s put back as %s", selectorString(current), selectorString(next)))
	}
	return nil
}

// selectorPatch is the merge patch of ch: its entries set, its dropped
// keys null.
func selectorPatch(ch selectorChange) ([]byte, error) {
	sel := map[string]any{}
	for _, k := range ch.drop {
		sel[k] = nil
	}
	for k, v := range ch.set {
		sel[k] = v
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"selector": sel}})
	if err != nil {
		return nil, fmt.Errorf("encode the selector patch: %w", err)
	}
	return patch, nil
}

// selectorString is a selector as kubectl shows one: "app=web,plimsoll.dev/color=blue".
func selectorString(sel map[string]string) string {
	keys := slices.Sorted(maps.Keys(sel))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + sel[k]
	}
	if len(parts) == 0 {
		return "{}"
	}
	return strings.Join(parts, ",")
}
