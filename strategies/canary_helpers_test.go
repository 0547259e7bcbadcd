package strategies

import (
	"cmp"
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/contract"
)

// stepsOf parses a steps string the test knows to be good.
func stepsOf(s string) []Step {
	steps, err := ParseSteps(s)
	if err != nil {
		panic(err)
	}
	return steps
}

// canaryDesired is revision 4 of web with n replicas and the given steps.
func canaryDesired(n int32, steps string) CanaryDesired {
	return CanaryDesired{Desired: desiredN(n), Steps: stepsOf(steps)}
}

// stableDeploy is the stable Deployment web running tmpl, its template
// labelled serving as plimsoll writes it.
func stableDeploy(tmpl corev1.PodTemplateSpec, fs ...func(*appsv1.Deployment)) *appsv1.Deployment {
	return deployment(tmpl, append([]func(*appsv1.Deployment){withTemplateLabel(contract.LabelServing, "true")}, fs...)...)
}

// canaryDeploy is the Deployment web-canary running tmpl.
func canaryDeploy(tmpl corev1.PodTemplateSpec, fs ...func(*appsv1.Deployment)) *appsv1.Deployment {
	return deployment(tmpl, append([]func(*appsv1.Deployment){
		named("web-canary"), withTemplateLabel(contract.LabelTrack, contract.TrackCanary)}, fs...)...)
}

// Canary pods by state: starting (not Ready), ready (Ready, no label),
// serving (Ready and labelled), and the two that serve for nothing.
func starting(name string) Pod { return Pod{Name: name} }
func ready(name string) Pod    { return Pod{Name: name, Ready: true} }
func serving(name string) Pod  { return Pod{Name: name, Ready: true, Serving: true} }
func servingNotReady(name string) Pod {
	return Pod{Name: name, Serving: true}
}
func servingDeleting(name string) Pod {
	return Pod{Name: name, Ready: true, Serving: true, Deleting: true}
}

// since says what a plan does with the step clock.
type since int

const (
	sinceKept    since = iota // the observed StepSince stays
	sinceNow                  // the step changed at Now
	sinceCleared              // no step: the rollout ended or was undone
)

// canaryCase is one PlanCanary input: revision 4 of web, 4 replicas and
// the default steps unless desired says otherwise, observed at step since
// t0, planned at t0+now, the Service selecting serving pods unless
// notSelecting.
type canaryCase struct {
	name                   string
	desired                *CanaryDesired
	recorded               Status
	stable, canary         *appsv1.Deployment
	pods                   []Pod
	step                   int
	now                    time.Duration
	notSelecting           bool
	rsets                  []*appsv1.ReplicaSet
	serviceReady           []string
	stablePods             []Pod
	promote, abort, paused bool
	want                   canaryWant
	// rests says that the plan, once executed, is where the workload
	// stays until something changes: planning again changes nothing.
	rests bool
}

// canaryWant is the outcome of a plan. Revision 0 and hash "" stand for
// revision 4 and h4.
type canaryWant struct {
	phase          Phase
	words          []string
	revision       int64
	hash, failed   string
	stable, canary *int32
	template       StableTemplate
	label, unlabel []string
	selectServing  bool
	step           int
	since          since
	requeue        time.Duration
	acted          string
}

// inputs returns the planner's arguments for c.
func (c canaryCase) inputs() (CanaryDesired, Status, CanaryObserved) {
	desired := canaryDesired(4, DefaultSteps)
	if c.desired != nil {
		desired = *c.desired
	}
	return desired, c.recorded, CanaryObserved{
		Stable: c.stable, Canary: c.canary, Pods: c.pods, ServiceSelectsServing: !c.notSelecting, ServiceReady: c.serviceReady,
		StablePods: c.stablePods, Step: c.step, StepSince: t0, Paused: c.paused, Promote: c.promote, Abort: c.abort, Now: at(c.now),
		ReplicaSets: c.rsets,
	}
}

// checkCanary compares plan with want, for the observed state o.
func checkCanary(t *testing.T, plan CanaryPlan, desired CanaryDesired, o CanaryObserved, want canaryWant) {
	t.Helper()
	revision, hash := cmp.Or(want.revision, 4), cmp.Or(want.hash, h4)
	checkStatus(t, plan.Status, desired.Desired, want.phase, revision, hash, want.failed, want.words)
	if !reflect.DeepEqual(plan.StableReplicas, want.stable) || !reflect.DeepEqual(plan.CanaryReplicas, want.canary) {
		t.Errorf("replicas: stable %v, canary %v; want stable %v, canary %v", replicasOrNil(plan.StableReplicas),
			replicasOrNil(plan.CanaryReplicas), replicasOrNil(want.stable), replicasOrNil(want.canary))
	}
	if plan.Stable != want.template {
		t.Errorf("stable template %d, want %d", plan.Stable, want.template)
	}
	if !slices.Equal(plan.Label, want.label) || !slices.Equal(plan.Unlabel, want.unlabel) {
		t.Errorf("label %v, unlabel %v; want label %v, unlabel %v", plan.Label, plan.Unlabel, want.label, want.unlabel)
	}
	if plan.SelectServing != want.selectServing {
		t.Errorf("select serving %v, want %v", plan.SelectServing, want.selectServing)
	}
	wantSince := map[since]time.Time{sinceKept: o.StepSince, sinceNow: o.Now, sinceCleared: {}}[want.since]
	if plan.Step != want.step || !plan.StepSince.Equal(wantSince) {
		t.Errorf("step %d since %s, want step %d since %s", plan.Step, plan.StepSince, want.step, wantSince)
	}
	if plan.RequeueAfter != want.requeue {
		t.Errorf("requeue after %s, want %s", plan.RequeueAfter, want.requeue)
	}
	if want.acted == "" && plan.Acted != "" {
		t.Errorf("acted %q, want nothing", plan.Acted)
	}
	checkMessage(t, plan.Acted, []string{want.acted})
}

// atOnce is the requeue of a finished step: plan the next one at once.
const atOnce = time.Millisecond
