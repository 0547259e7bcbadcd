package strategies

import (
	"math"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// notReadySince is a canary pod that has not been Ready since t0+d.
func notReadySince(name string, d time.Duration) Pod {
	return Pod{Name: name, NotReadySince: at(d)}
}

// TestStalled works the pod deadline through with progressDeadlineSeconds
// 10 (the helpers' deadline) and planning at t0+10s: a pod not Ready since
// t0 stalls exactly then, one since t0+1s does not yet.
func TestStalled(t *testing.T) {
	withDeadline := func(seconds *int32) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = seconds }
	}
	tests := []struct {
		name string
		d    *appsv1.Deployment
		pods []Pod
		want bool
	}{
		{"not Ready for 10s of 10s", deployment(v4), []Pod{notReadySince("a", 0)}, true},
		{"not Ready for 9s of 10s", deployment(v4), []Pod{notReadySince("a", time.Second)}, false},
		{"one of two stalled", deployment(v4), []Pod{ready("a"), notReadySince("b", -time.Minute)}, true},
		{"Ready", deployment(v4), []Pod{{Name: "a", Ready: true}}, false},
		{"deleting", deployment(v4), []Pod{{Name: "a", Deleting: true, NotReadySince: at(-time.Hour)}}, false},
		{"no time known", deployment(v4), []Pod{{Name: "a"}}, false},
		{"no pods", deployment(v4), nil, false},
		{"no deadline set", deployment(v4, withDeadline(nil)), []Pod{notReadySince("a", -time.Hour)}, false},
		{"deadline off (MaxInt32)", deployment(v4, withDeadline(ptrTo(int32(math.MaxInt32)))), []Pod{notReadySince("a", -time.Hour)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stalled(tt.d, tt.pods, at(10*time.Second)); got != tt.want {
				t.Errorf("stalled = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPlanCanaryStalledPod: a canary scaled up without a new template
// never gets ProgressDeadlineExceeded from the Deployment controller (its
// condition still reads NewReplicaSetAvailable), so a canary pod not Ready
// for the 10s deadline fails the revision: with 4 replicas at 50%, the
// serving canary pod loses its label, stable goes back to 4, the canary to
// 0, and the hash is recorded as failed.
func TestPlanCanaryStalledPod(t *testing.T) {
	desired := canaryDesired(4, "25%, pause, 50%, pause, 100%")
	recorded := progressing4
	o := CanaryObserved{
		Stable: stableDeploy(v3, sized(3)),
		Canary: canaryDeploy(v4, withSpecReplicas(2), withPods(2, 2, 1, 1)), // complete condition, as after a scale-up
		Pods:   []Pod{serving("c1"), notReadySince("c2", -10*time.Second)},
		Step:   2, StepSince: at(-time.Minute), ServiceSelectsServing: true, Now: t0,
	}
	plan := PlanCanary(desired, recorded, o)
	checkStatus(t, plan.Status, desired.Desired, PhaseDegraded, 4, h4, h4, []string{"progress deadline exceeded after 10s"})
	if !slices.Equal(plan.Unlabel, []string{"c1"}) || len(plan.Label) != 0 {
		t.Errorf("label %v, unlabel %v; want c1 unlabelled", plan.Label, plan.Unlabel)
	}
	if plan.StableReplicas == nil || *plan.StableReplicas != 4 || plan.CanaryReplicas == nil || *plan.CanaryReplicas != 0 {
		t.Errorf("replicas: stable %v, canary %v; want 4 and 0", replicasOrNil(plan.StableReplicas), replicasOrNil(plan.CanaryReplicas))
	}

	// 9s into the 10s deadline nothing a watch reports will change: the
	// plan asks to be made again in 1s, when c2 stalls.
	o.Pods[1] = notReadySince("c2", -9*time.Second)
	plan = PlanCanary(desired, recorded, o)
	if plan.Status.Phase == PhaseDegraded || plan.RequeueAfter != time.Second {
		t.Errorf("9s into a 10s deadline: %+v, requeue %v; want the rollout going on, requeue 1s", plan.Status, plan.RequeueAfter)
	}
}

// TestPlanBlueGreenStalledPod: green, scaled from 0 to 4 with the template
// it already had, has a pod not Ready for the 10s deadline: the revision
// fails, green goes back to 0 and traffic stays on blue.
func TestPlanBlueGreenStalledPod(t *testing.T) {
	desired := blueGreenDesired(4, true)
	o := BlueGreenObserved{
		Blue:   colorDeploy(ColorBlue, v3, sized(4)),
		Green:  colorDeploy(ColorGreen, v4, withSpecReplicas(4), withPods(4, 4, 3, 3)),
		Active: ColorBlue,
		Pods:   map[Color][]Pod{ColorGreen: {ready("g1"), ready("g2"), ready("g3"), notReadySince("g4", -10*time.Second)}},
		Now:    t0,
	}
	plan := PlanBlueGreen(desired, progressing4, o)
	checkStatus(t, plan.Status, desired.Desired, PhaseDegraded, 4, h4, h4, []string{"failed on green", "traffic stays on blue"})
	if plan.Replicas[ColorGreen] != 0 || plan.Active != ColorBlue {
		t.Errorf("green replicas %d, active %q; want 0 and blue", plan.Replicas[ColorGreen], plan.Active)
	}

	// 7s in, g4 stalls 3s later, g3 (not Ready for 2s) 8s later.
	o.Pods[ColorGreen][2], o.Pods[ColorGreen][3] = notReadySince("g3", -2*time.Second), notReadySince("g4", -7*time.Second)
	plan = PlanBlueGreen(desired, progressing4, o)
	if plan.Status.Phase == PhaseDegraded || plan.RequeueAfter != 3*time.Second {
		t.Errorf("7s into a 10s deadline: %+v, requeue %v; want green still coming up, requeue 3s", plan.Status, plan.RequeueAfter)
	}
}

// TestPlanCanaryFirstTimedPause: a rollout whose first step is "pause 30s"
// starts its clock at the first plan (no start is recorded yet), and moves
// on 30s later.
func TestPlanCanaryFirstTimedPause(t *testing.T) {
	desired := canaryDesired(4, "pause 30s, 25%, 100%")
	o := CanaryObserved{
		Stable: stableDeploy(v3, sized(4)), Canary: canaryDeploy(v4, sized(0)),
		ServiceSelectsServing: true, Now: t0,
	}
	plan := PlanCanary(desired, progressing4, o)
	if plan.Step != 0 || !plan.StepSince.Equal(t0) || plan.RequeueAfter != 30*time.Second {
		t.Errorf("first plan: step %d since %v, requeue %v; want step 0 since %v, requeue 30s", plan.Step, plan.StepSince, plan.RequeueAfter, t0)
	}
	o.StepSince, o.Now = plan.StepSince, at(30*time.Second)
	if plan := PlanCanary(desired, progressing4, o); plan.Step != 1 {
		t.Errorf("30s later: step %d, want 1", plan.Step)
	}
}

// TestPlanCanaryUnlabelledByHand: at 25% of 4 (1 canary pod), the serving
// canary pod c1 has its label removed by hand. It stays out: it is not
// labelled again, stable goes back to 4, and the canary grows to 2 pods so
// that another one is labelled in its place once Ready.
func TestPlanCanaryUnlabelledByHand(t *testing.T) {
	desired := canaryDesired(4, "25%, pause, 100%")
	c1 := Pod{Name: "c1", Ready: true, Unlabelled: true}
	tests := []struct {
		name           string
		pods           []Pod
		label          []string
		canary, stable int32
	}{
		{"c1 out, no other pod yet", []Pod{c1}, nil, 2, 4},
		{"c1 out, c2 starting", []Pod{c1, starting("c2")}, nil, 2, 4},
		{"c1 out, c2 Ready", []Pod{c1, ready("c2")}, []string{"c2"}, 2, 3},
		{"c1 out, c2 serving", []Pod{c1, serving("c2")}, nil, 2, 3},
		{"c1 out and deleting", []Pod{{Name: "c1", Unlabelled: true, Deleting: true}, serving("c2")}, nil, 1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := CanaryObserved{
				Stable: stableDeploy(v3, sized(4)), Canary: canaryDeploy(v4, sized(int32(len(tt.pods)))),
				Pods: tt.pods, ServiceSelectsServing: true, StepSince: t0, Now: t0,
			}
			plan := PlanCanary(desired, progressing4, o)
			if !slices.Equal(plan.Label, tt.label) || len(plan.Unlabel) != 0 {
				t.Errorf("label %v, unlabel %v; want label %v", plan.Label, plan.Unlabel, tt.label)
			}
			if *plan.CanaryReplicas != tt.canary || *plan.StableReplicas != tt.stable {
				t.Errorf("canary %d, stable %d; want %d and %d", *plan.CanaryReplicas, *plan.StableReplicas, tt.canary, tt.stable)
			}
		})
	}
}

// TestLabelKeepsTheCanarysTemplate: a new commit's canary pod comes up
// beside a serving pod of the template before it (the canary Deployment
// replaces its pods). The earlier one serves until the new one can take
// its place, then loses the label, whatever the names; the new one,
// unlabelled, would count as taken out by hand and never serve.
func TestLabelKeepsTheCanarysTemplate(t *testing.T) {
	pods := []Pod{{Name: "a-old", Ready: true, Serving: true, Hash: "h3"}, {Name: "z-new", Hash: "h4", Serving: true}}
	var plan CanaryPlan
	if n := label(&plan, pods, 1, "h4"); n != 1 || len(plan.Unlabel) != 0 {
		t.Errorf("the new pod starting: %d serve, unlabel %v; want 1, the earlier pod serving on", n, plan.Unlabel)
	}
	pods[1].Ready = true
	plan = CanaryPlan{}
	if n := label(&plan, pods, 1, "h4"); n != 1 || !slices.Equal(plan.Unlabel, []string{"a-old"}) {
		t.Errorf("the new pod Ready: %d serve, unlabel %v; want 1, the earlier pod unlabelled", n, plan.Unlabel)
	}
	plan = CanaryPlan{}
	if n := label(&plan, pods, 2, "h4"); n != 2 || len(plan.Unlabel) != 0 {
		t.Errorf("two to serve: %d serve, unlabel %v; want both serving", n, plan.Unlabel)
	}
}
