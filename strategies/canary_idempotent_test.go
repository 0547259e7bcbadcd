package strategies

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestPlanCanaryIsIdempotent executes each resting plan of canaryCases the
// way the controller does and plans again from what it left, as a
// restarted controller would: the second plan records the same status and
// step, and asks for no label, no count and no template that is not
// already there, whether the Deployment controller has observed the write
// of the first plan yet or not.
func TestPlanCanaryIsIdempotent(t *testing.T) {
	for _, tt := range canaryCases() {
		if !tt.rests {
			continue
		}
		for _, caughtUp := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, Deployment controller caught up %v", tt.name, caughtUp), func(t *testing.T) {
				desired, recorded, o := tt.inputs()
				first := PlanCanary(desired, recorded, o)
				again := PlanCanary(desired, recorded, o)
				if !reflect.DeepEqual(again, first) {
					t.Fatalf("the same inputs planned twice differ:\n %+v\n %+v", first, again)
				}
				o = executeCanary(first, recorded, o, caughtUp)
				second := PlanCanary(desired, first.Status, o)
				if !caughtUp && second.RequeueAfter == 0 {
					// The step waits for the Deployment controller, whose
					// report of the write wakes the workload through the watch.
					first.RequeueAfter = 0
				}
				if second.Status != first.Status {
					t.Errorf("second plan records\n %+v\nafter\n %+v", second.Status, first.Status)
				}
				if second.Step != first.Step || !second.StepSince.Equal(first.StepSince) || second.RequeueAfter != first.RequeueAfter {
					t.Errorf("second plan: step %d since %s, requeue %s; first: step %d since %s, requeue %s",
						second.Step, second.StepSince, second.RequeueAfter, first.Step, first.StepSince, first.RequeueAfter)
				}
				if len(second.Label)+len(second.Unlabel) > 0 || second.Stable != StableKeep || second.SelectServing || second.Acted != "" {
					t.Errorf("second plan acts again: label %v, unlabel %v, stable template %d, select %v, acted %q",
						second.Label, second.Unlabel, second.Stable, second.SelectServing, second.Acted)
				}
				for _, c := range []struct {
					what string
					plan *int32
					live *appsv1.Deployment
				}{{"stable", second.StableReplicas, o.Stable}, {"canary", second.CanaryReplicas, o.Canary}} {
					if c.plan != nil && (c.live == nil || *c.plan != liveReplicas(c.live)) {
						t.Errorf("second plan scales the %s to %d", c.what, *c.plan)
					}
				}
			})
		}
	}
}

// executeCanary returns o after the controller executed plan on top of
// recorded: labels set and removed, counts written, the step recorded and
// the commands cleared. Every write bumps a Deployment's generation (status
// and step are annotations of both). With caughtUp, the Deployment
// controller has observed them all and every pod asked for is available (a
// canary at 0 has no pods left); without, each Deployment's status stays
// as it was. Templates are not changed: no resting plan replaces one.
func executeCanary(plan CanaryPlan, recorded Status, o CanaryObserved, caughtUp bool) CanaryObserved {
	pods := slices.Clone(o.Pods)
	for i, p := range pods {
		switch {
		case slices.Contains(plan.Label, p.Name):
			pods[i].Serving = true
		case slices.Contains(plan.Unlabel, p.Name):
			pods[i].Serving = false
		}
	}
	annotated := plan.Status != recorded || plan.Step != o.Step || !plan.StepSince.Equal(o.StepSince)
	write := func(d *appsv1.Deployment, n *int32) *appsv1.Deployment {
		if d == nil || (!annotated && (n == nil || *n == liveReplicas(d))) {
			return d
		}
		d = d.DeepCopy()
		d.Generation++
		if n != nil {
			withSpecReplicas(*n)(d)
		}
		if caughtUp {
			withPods(liveReplicas(d), liveReplicas(d), liveReplicas(d), liveReplicas(d))(d)
			d.Status.ObservedGeneration = d.Generation
		}
		return d
	}
	o.Stable, o.Canary = write(o.Stable, plan.StableReplicas), write(o.Canary, plan.CanaryReplicas)
	if caughtUp && plan.CanaryReplicas != nil && *plan.CanaryReplicas == 0 {
		pods = nil
	}
	o.Pods, o.Step, o.StepSince = pods, plan.Step, plan.StepSince
	o.Promote, o.Abort = false, false
	return o
}
