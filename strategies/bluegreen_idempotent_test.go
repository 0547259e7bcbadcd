package strategies

import (
	"fmt"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestPlanBlueGreenIsIdempotent executes each resting plan of
// blueGreenCases the way the controller does and plans again from what it
// left, as a restarted controller would: the second plan records the same
// status and scale-down time, keeps the Service where it is and scales
// nothing, whether the Deployment controller has observed the write of the
// first plan yet or not.
func TestPlanBlueGreenIsIdempotent(t *testing.T) {
	for _, tt := range blueGreenCases() {
		if !tt.rests {
			continue
		}
		for _, caughtUp := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, Deployment controller caught up %v", tt.name, caughtUp), func(t *testing.T) {
				desired, recorded, o := tt.inputs()
				first := PlanBlueGreen(desired, recorded, o)
				if again := PlanBlueGreen(desired, recorded, o); !reflect.DeepEqual(again, first) {
					t.Fatalf("the same inputs planned twice differ:\n %+v\n %+v", first, again)
				}
				o = executeBlueGreen(first, recorded, o, caughtUp)
				second := PlanBlueGreen(desired, first.Status, o)
				if first.RequeueAfter == waitForEndpoints {
					// executeBlueGreen made the scale-down the first plan held
					// back until after the swap: nothing is left to wait for.
					first.RequeueAfter = 0
				}
				if second.Status != first.Status {
					t.Errorf("second plan records\n %+v\nafter\n %+v", second.Status, first.Status)
				}
				if (second.Active != "" && second.Active != o.Active) || !second.ScaleDownAt.Equal(first.ScaleDownAt) ||
					second.RequeueAfter != first.RequeueAfter || second.Acted != "" {
					t.Errorf("second plan: active %q, scale down at %s, requeue %s, acted %q; after active %q, %s, %s",
						second.Active, second.ScaleDownAt, second.RequeueAfter, second.Acted, o.Active, first.ScaleDownAt, first.RequeueAfter)
				}
				for c, n := range existing(second.Replicas, o) {
					if n != liveReplicas(o.Deployment(c)) {
						t.Errorf("second plan scales %s from %d to %d", c, liveReplicas(o.Deployment(c)), n)
					}
				}
				if l := second.LegacyReplicas; l != nil && (o.Legacy == nil || *l != liveReplicas(o.Legacy)) {
					t.Errorf("second plan scales the legacy Deployment to %d", *l)
				}
			})
		}
	}
}

// executeBlueGreen returns o after the controller executed plan on top of
// recorded: counts written, the Service swapped, the scale-down time
// recorded and the commands cleared. Every write bumps a color's
// generation (status and scale-down time are annotations of every color).
// With caughtUp, the Deployment controller has observed them all and every
// pod asked for is available; without, each color's status stays as it
// was. A color's progress condition stays as it was.
func executeBlueGreen(plan BlueGreenPlan, recorded Status, o BlueGreenObserved, caughtUp bool) BlueGreenObserved {
	annotated := plan.Status != recorded || !plan.ScaleDownAt.Equal(o.ScaleDownAt)
	write := func(d *appsv1.Deployment, n int32, scales, stamped bool) *appsv1.Deployment {
		if d == nil || (!stamped && (!scales || n == liveReplicas(d))) {
			return d
		}
		d = d.DeepCopy()
		d.Generation++
		if scales {
			withSpecReplicas(n)(d)
		}
		if caughtUp {
			withPods(liveReplicas(d), liveReplicas(d), liveReplicas(d), liveReplicas(d))(d)
			d.Status.ObservedGeneration = d.Generation
		}
		return d
	}
	b, okB := plan.Replicas[ColorBlue]
	g, okG := plan.Replicas[ColorGreen]
	o.Blue, o.Green = write(o.Blue, b, okB, annotated), write(o.Green, g, okG, annotated)
	if plan.LegacyReplicas != nil {
		o.Legacy = write(o.Legacy, *plan.LegacyReplicas, true, false)
	}
	if plan.Active != "" {
		o.Active = plan.Active
	}
	o.ScaleDownAt = plan.ScaleDownAt
	o.Promote, o.Abort = false, false
	return o
}
