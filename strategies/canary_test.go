package strategies

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
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

// canaryCases walks revision 4 of web through the canary steps with
// N = 4: at 25% one canary pod serves and stable runs 3, at 50% two and 2.
func canaryCases() []canaryCase {
	manual := canaryDesired(4, "25%, pause, 50%, pause, 100%") // the planner's worked example
	short := canaryDesired(4, "25%, pause 30s")
	lowered := canaryDesired(4, "50%, 25%, pause")
	// ofCanary is p made from the canary's template, as the pods of a
	// ReplicaSet that shrinks are.
	ofCanary := func(p Pod) Pod {
		p.Hash = hashOf(canaryDeploy(v4))
		return p
	}
	noRollback := canaryDesired(4, DefaultSteps)
	noRollback.AutoRollback = false
	healthy3 := Status{Phase: PhaseHealthy, Revision: 3, Hash: h3, Commit: commitV3, Message: "4/4 available"}
	healthy5 := Status{Phase: PhaseHealthy, Revision: 5, Hash: h5, FailedHash: h4, Commit: commitV5}

	st := func(n int32) *appsv1.Deployment { return stableDeploy(v3, sized(n)) }
	lagging3 := stableDeploy(v3, sized(3), withGeneration(3, 2), withPods(4, 4, 4, 4))
	cy := func(n int32) *appsv1.Deployment { return canaryDeploy(v4, sized(n)) }
	promoted := stableDeploy(v4, sized(4))
	surged := stableDeploy(v4, sized(4), func(d *appsv1.Deployment) {
		all, none := intstr.FromString("100%"), intstr.FromInt32(0)
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &all, MaxUnavailable: &none}
	})
	four, two, zero := ptrTo(int32(4)), ptrTo(int32(2)), ptrTo(int32(0))
	one, three := ptrTo(int32(1)), ptrTo(int32(3))

	return []canaryCase{
		{
			name:     "25%: the canary scales to ceil(25*4/100) = 1; its pod is not Ready, so stable stays at 4",
			recorded: progressing4, stable: st(4), canary: canaryDeploy(v4, withSpecReplicas(1), withPods(1, 1, 0, 0), rolling),
			pods: []Pod{starting("c0")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 1/5: going to 25% (1/4 pods)"}, stable: four, canary: one},
		},
		{
			name:     "25%: the Ready canary pod gets the serving label, and stable goes to 4-1 = 3",
			recorded: progressing4, stable: st(4), canary: cy(1), pods: []Pod{ready("c0")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 1/5: going to 25% (1/4 pods)"}, stable: three, canary: one, label: []string{"c0"}},
		},
		{
			name:     "25%: a Ready pod being deleted is not labelled",
			recorded: progressing4, stable: st(4), canary: cy(1), pods: []Pod{{Name: "c0", Ready: true, Deleting: true}},
			want: canaryWant{phase: PhaseProgressing, words: []string{"going to 25% (1/4 pods)"}, stable: four, canary: one},
		},
		{
			name:     "25%: a serving pod that is not Ready counts for nothing; a Ready one is labelled",
			recorded: progressing4, stable: st(4), canary: cy(1), pods: []Pod{servingNotReady("c0"), ready("c1")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"going to 25% (1/4 pods)"}, stable: three, canary: one, label: []string{"c1"}},
		},
		{
			name:     "25%: a serving pod being deleted counts for nothing; a Ready one is labelled",
			recorded: progressing4, stable: st(4), canary: cy(1), pods: []Pod{servingDeleting("c0"), ready("c1")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"going to 25% (1/4 pods)"}, stable: three, canary: one, label: []string{"c1"}},
		},
		{
			name:     "25%: the serving pod lost readiness and no other is Ready: stable back to 4",
			recorded: progressing4, stable: st(3), canary: cy(1), pods: []Pod{servingNotReady("c0"), starting("c1")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"going to 25% (1/4 pods)"}, stable: four, canary: one},
		},
		{
			name:    "25% after 50%: the stable goes to its share, 3, first; both canary pods serve on",
			desired: &lowered, recorded: progressing4, stable: st(2), canary: cy(2), pods: []Pod{ofCanary(serving("c1")), ofCanary(serving("c0"))}, step: 1,
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 2/3: going to 25% (1/4 pods)"}, stable: three, canary: two, step: 1},
		},
		{
			name:    "25% after 50%, the stable's 3 available: the last by name is taken out, the canary kept at 2 until it is out; the wait for promote begins",
			desired: &lowered, recorded: progressing4, stable: st(3), canary: cy(2), pods: []Pod{ofCanary(serving("c1")), ofCanary(serving("c0"))}, step: 1,
			want: canaryWant{phase: PhasePaused, words: []string{"canary step 3/3: 25% (1/4 pods serving); waiting for promote"}, stable: three, canary: two,
				unlabel: []string{"c1"}, step: 2, since: sinceNow},
		},
		{
			name:    "25% after 50%, the pod taken out is out: the canary goes to 1, and its ReplicaSet deletes that pod",
			desired: &lowered, recorded: waiting(progressing4, "canary step 3/3: 25% (1/4 pods serving); waiting for promote"),
			stable: st(3), canary: cy(2), pods: []Pod{ofCanary(ready("c1")), ofCanary(serving("c0"))}, step: 2,
			want: canaryWant{phase: PhasePaused, words: []string{"canary step 3/3: 25% (1/4 pods serving); waiting for promote"}, stable: three, canary: one, step: 2},
		},
		{
			name:     "25% done: 1 canary pod serves and stable has 3 available: step 2, the pause, in the same plan",
			recorded: progressing4, stable: st(3), canary: cy(1), pods: []Pod{serving("c0")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 2/5: 25% (1/4 pods serving); paused until 12:00:30"}, stable: three, canary: one,
				step: 1, since: sinceNow, requeue: 30 * time.Second},
		},
		{
			name:    "25% done, a wait for promote next: Paused at step 2 once both Deployments are reported at the step's counts",
			desired: &manual, recorded: progressing4, stable: st(3), canary: cy(1), pods: []Pod{serving("c0")},
			want: canaryWant{phase: PhasePaused, words: []string{"canary step 2/5: 25% (1/4 pods serving); waiting for promote"},
				stable: three, canary: one, step: 1, since: sinceNow},
		},
		{
			name:    "25% done, a wait for promote next: the stable's fourth pod is still counted: not done",
			desired: &manual, recorded: progressing4, stable: stableDeploy(v3, withSpecReplicas(3), withPods(4, 4, 4, 4)), canary: cy(1), pods: []Pod{serving("c0")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 1/5: going to 25% (1/4 pods)"}, stable: three, canary: one},
		},
		{
			name:    "25% done, a wait for promote next: the canary's pod serves but is not yet reported available: not done",
			desired: &manual, recorded: progressing4, stable: st(3), canary: canaryDeploy(v4, withSpecReplicas(1), withPods(1, 1, 0, 0)), pods: []Pod{serving("c0")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 1/5: going to 25% (1/4 pods)"}, stable: three, canary: one},
		},
		{
			name:     "25%: stable asks for 3 but the Deployment controller has not observed it: not done, the recorded message stands",
			recorded: withMessage(progressing4, "canary step 1/5: going to 25% (1/4 pods)"),
			stable:   stableDeploy(v3, sized(3), withGeneration(3, 2)), canary: cy(1), pods: []Pod{serving("c0")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"going to 25% (1/4 pods)"}, stable: three, canary: one},
		},
		{
			name:     "25%: the Deployment controller has not observed the stable's 3, its ReplicaSet runs 3 of 3: done, step 2 in the same plan, its message with it",
			recorded: withMessage(progressing4, "canary step 1/5: going to 25% (1/4 pods)"),
			stable:   lagging3, canary: cy(1), pods: []Pod{serving("c0")}, rsets: []*appsv1.ReplicaSet{ownRS(lagging3, "web-5f6d7c8b9a", 3, 3, 3)},
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 2/5", "(1/4 pods serving)"}, stable: three, canary: one,
				step: 1, since: sinceNow, requeue: 30 * time.Second},
		},
		{
			name:     "25%: the Deployment controller has not observed the stable's 3, its ReplicaSet still runs 4: not done",
			recorded: withMessage(progressing4, "canary step 1/5: going to 25% (1/4 pods)"),
			stable:   lagging3, canary: cy(1), pods: []Pod{serving("c0")}, rsets: []*appsv1.ReplicaSet{ownRS(lagging3, "web-5f6d7c8b9a", 3, 4, 4)},
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 1/5: going to 25% (1/4 pods)"}, stable: three, canary: one},
		},
		{
			name:     "25%: the stable fails on its own (none of its pods Ready) and runs 3: done, the canary is judged on its own pods",
			recorded: progressing4, stable: stableDeploy(v3, withSpecReplicas(3), withPods(3, 3, 0, 0)), canary: cy(1), pods: []Pod{serving("c0")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 2/5", "(1/4 pods serving)"}, stable: three, canary: one,
				step: 1, since: sinceNow, requeue: 30 * time.Second},
		},
		{
			name:     "25%: the failing stable still runs 4 of the 3 it asks for: not done",
			recorded: progressing4, stable: stableDeploy(v3, withSpecReplicas(3), withPods(4, 4, 0, 0)), canary: cy(1), pods: []Pod{serving("c0")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"going to 25% (1/4 pods)"}, stable: three, canary: one},
		},
		{
			name:     "25%: stable asks for 3 with 2 available: not done",
			recorded: progressing4, stable: stableDeploy(v3, withSpecReplicas(3), withPods(3, 3, 2, 2)), canary: cy(1), pods: []Pod{serving("c0")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"going to 25% (1/4 pods)"}, stable: three, canary: one},
		},
		{
			name:    "pause without a duration: Paused until promote, the weight held",
			desired: &manual, recorded: progressing4, stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, step: 1, now: time.Hour,
			want: canaryWant{phase: PhasePaused, words: []string{"canary step 2/5: 25% (1/4 pods serving)", "waiting for promote"},
				stable: three, canary: one, step: 1},
			rests: true,
		},
		{
			name:     "pause 30s, 10s in: plan again in the 20s left",
			recorded: progressing4, stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, step: 1, now: 10 * time.Second,
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 2/5", "paused until 12:00:30"},
				stable: three, canary: one, step: 1, requeue: 20 * time.Second},
			rests: true,
		},
		{
			name:     "pause 30s, at its end: step 3, 50%, in the same plan",
			recorded: progressing4, stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, step: 1, now: 30 * time.Second,
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 3/5: going to 50% (2/4 pods)"}, stable: three, canary: two,
				step: 2, since: sinceNow},
		},
		{
			// The message docs/reference.md gives, word for word.
			name:    "promote during a pause: on to step 3, 50%, in the same plan",
			desired: &manual, recorded: progressing4, stable: st(3), canary: cy(2), pods: []Pod{serving("c0"), ready("c1")}, step: 1, promote: true,
			want: canaryWant{phase: PhaseProgressing, words: []string{"canary step 3/5: going to 50% (2/4 pods)"},
				stable: two, canary: two, label: []string{"c1"}, step: 2, since: sinceNow, acted: "moved on"},
		},
		{
			name:    "promote during a weight step: full promotion",
			desired: &manual, recorded: progressing4, stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, promote: true,
			want: canaryWant{phase: PhaseProgressing, words: []string{"promoting the stable Deployment"}, stable: four, template: StablePromote,
				step: 5, since: sinceNow, acted: "promoted"},
		},
		{
			name:     "step 5, 100%: stable takes the canary template at 4 while the canary pods keep serving",
			recorded: progressing4, stable: st(2), canary: cy(2), pods: []Pod{serving("c0"), serving("c1")}, step: 4,
			want: canaryWant{phase: PhaseProgressing, words: []string{"promoting the stable Deployment"}, stable: four, template: StablePromote, step: 4},
		},
		{
			name:    "past the last step, no 100% step: stable takes the canary template",
			desired: &short, recorded: progressing4, stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, step: 2,
			want: canaryWant{phase: PhaseProgressing, words: []string{"promoting"}, stable: four, template: StablePromote, step: 2},
		},
		{
			name:     "promoted, stable 3/4 updated: the canary pods keep serving",
			recorded: progressing4, stable: stableDeploy(v4, withPods(5, 3, 3, 3), rolling), canary: cy(2), pods: []Pod{serving("c0"), serving("c1")}, step: 4,
			want: canaryWant{phase: PhaseProgressing, words: []string{"revision 4 (commit def5678): promoting the stable Deployment"}, stable: four, step: 4},
		},
		{
			name:     "promoted, stable 4/4 available: every serving canary pod is unlabelled, the canary goes to 0",
			recorded: progressing4, stable: promoted, canary: cy(3), pods: []Pod{serving("c0"), servingNotReady("c1"), ready("c2")}, step: 4,
			serviceReady: []string{"c0", "s0", "s1", "s2", "s3"},
			want: canaryWant{phase: PhaseProgressing, words: []string{"promoted", "scaling the canary down"}, stable: four, canary: zero,
				unlabel: []string{"c0", "c1"}, since: sinceCleared},
		},
		{
			name:     "promoted, stable 4/4 available but its pods not yet ready endpoints: the serving canary pods stay",
			recorded: progressing4, stable: promoted, canary: cy(3), pods: []Pod{serving("c0"), servingNotReady("c1"), ready("c2")}, step: 4,
			serviceReady: []string{"c0", "s0", "s1"},
			want: canaryWant{phase: PhaseProgressing, words: []string{"promoted", "scaling the canary down"}, stable: four, canary: zero,
				since: sinceCleared},
		},
		{
			name:     "promoted, stable 4/4 available with one of its pods taken out by hand: the serving canary pods leave once its 3 others are ready endpoints",
			recorded: progressing4, stable: promoted, canary: cy(3), pods: []Pod{serving("c0"), servingNotReady("c1"), ready("c2")}, step: 4,
			stablePods:   []Pod{serving("s0"), serving("s1"), serving("s2"), ready("s3")},
			serviceReady: []string{"c0", "s0", "s1", "s2"},
			want: canaryWant{phase: PhaseProgressing, words: []string{"promoted", "scaling the canary down"}, stable: four, canary: zero,
				unlabel: []string{"c0", "c1"}, since: sinceCleared},
		},
		{
			name:     "promoted, stable 4/4 available with one of its pods taken out by hand, the 3 others not yet ready endpoints: the serving canary pods stay",
			recorded: progressing4, stable: promoted, canary: cy(3), pods: []Pod{serving("c0"), servingNotReady("c1"), ready("c2")}, step: 4,
			stablePods:   []Pod{serving("s0"), serving("s1"), serving("s2"), ready("s3")},
			serviceReady: []string{"c0", "s0", "s1"},
			want: canaryWant{phase: PhaseProgressing, words: []string{"promoted", "scaling the canary down"}, stable: four, canary: zero,
				since: sinceCleared},
		},
		{
			name:     "promoted with a surge, stable 4/4 available: Git's strategy back on the stable, with the canary going to 0",
			recorded: progressing4, stable: surged, canary: cy(2), pods: []Pod{serving("c0"), serving("c1")}, step: 4,
			serviceReady: []string{"c0", "c1", "s0", "s1", "s2", "s3"},
			want: canaryWant{phase: PhaseProgressing, words: []string{"promoted", "scaling the canary down"}, stable: four, canary: zero,
				template: StableSettle, unlabel: []string{"c0", "c1"}, since: sinceCleared},
		},
		{
			name:     "promoted with a surge, canary already gone: the strategy settles before Healthy",
			recorded: progressing4, stable: surged, canary: cy(0),
			want: canaryWant{phase: PhaseProgressing, words: []string{"promoted"}, stable: four, canary: zero, template: StableSettle, since: sinceCleared},
		},
		{
			name:     "promoted, canary asks for 0 and its last pods, none serving, are ending: not Healthy until they are gone",
			recorded: progressing4, stable: promoted, canary: canaryDeploy(v4, sized(0), withPods(2, 2, 2, 2)), pods: []Pod{ready("c0"), ready("c1")},
			want: canaryWant{phase: PhaseProgressing, words: []string{"promoted", "scaling the canary down"}, stable: four, canary: zero, since: sinceCleared},
		},
		{
			name:     "promoted, canary at 0 with no pods: Healthy",
			recorded: progressing4, stable: promoted, canary: cy(0),
			want:  canaryWant{phase: PhaseHealthy, words: []string{"revision 4 (commit def5678)", "4/4 available"}, stable: four, canary: zero, since: sinceCleared},
			rests: true,
		},
		{
			name:     "abort at 50%: every serving canary pod is unlabelled at once, canary 0, stable 4",
			recorded: progressing4, stable: st(2), canary: cy(3), pods: []Pod{serving("c0"), serving("c1"), starting("c2")}, step: 2, abort: true,
			want: canaryWant{phase: PhaseDegraded, words: []string{"aborted revision 4"}, failed: h4, stable: four, canary: zero,
				unlabel: []string{"c0", "c1"}, since: sinceCleared, acted: "aborted revision 4"},
			rests: true,
		},
		{
			name:     "abort with the canary's pods the Service's only ready endpoints: they serve on, the canary kept, the stable back to 4",
			recorded: progressing4, stable: stableDeploy(v3, sized(2), withPods(2, 2, 0, 0)), canary: cy(2),
			pods: []Pod{serving("c0"), serving("c1")}, serviceReady: []string{"c0", "c1"}, step: 2, abort: true,
			want: canaryWant{phase: PhaseDegraded, words: []string{"aborted revision 4", "canary pods serve until a stable pod is ready"},
				failed: h4, stable: four, since: sinceCleared, acted: "aborted revision 4"},
			rests: true,
		},
		{
			name: "aborted, the canary's pods serving alone, a stable pod ready: they go, and the line says the stable serves",
			recorded: Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4,
				Message: "aborted revision 4; " + keptMessage(h4)},
			stable: stableDeploy(v3, sized(4), withPods(4, 4, 1, 1)), canary: cy(2),
			pods: []Pod{serving("c0"), serving("c1")}, serviceReady: []string{"c0", "c1", "s0"},
			want: canaryWant{phase: PhaseDegraded, words: []string{"aborted revision 4", "stable serves"}, failed: h4, stable: four, canary: zero,
				unlabel: []string{"c0", "c1"}, since: sinceCleared},
			rests: true,
		},
		{
			name:     "the canary misses its progress deadline with its ready pod the Service's only endpoint: it serves on",
			recorded: progressing4, stable: stableDeploy(v3, sized(3), withPods(3, 3, 0, 0)),
			canary: canaryDeploy(v4, withSpecReplicas(2), withPods(2, 2, 1, 1), timedOut),
			pods:   []Pod{serving("c0"), starting("c1")}, serviceReady: []string{"c0"}, step: 2,
			want: canaryWant{phase: PhaseDegraded, words: []string{"revision 4 failed on the canary", "canary pods serve until a stable pod is ready"},
				failed: h4, stable: four, since: sinceCleared},
			rests: true,
		},
		{
			name:     "abort of revision 4 before its status was recorded: recorded as revision 4, not 3",
			recorded: healthy3, stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, abort: true,
			want: canaryWant{phase: PhaseDegraded, words: []string{"aborted revision 4"}, failed: h4, stable: four, canary: zero,
				unlabel: []string{"c0"}, since: sinceCleared, acted: "aborted"},
			rests: true,
		},
		{
			name:     "abort after the stable took revision 4: too late, and the Event says how to go back",
			recorded: progressing4, stable: promoted, canary: cy(0), abort: true,
			want: canaryWant{phase: PhaseHealthy, words: []string{"4/4 available"}, stable: four, canary: zero, since: sinceCleared,
				acted: "too late to abort: revision 4 is promoted; commit the previous revision to Git to go back"},
		},
		{
			name:     "promote after the stable took revision 4: nothing to promote, and why",
			recorded: progressing4, stable: promoted, canary: cy(0), promote: true,
			want: canaryWant{phase: PhaseHealthy, words: []string{"4/4 available"}, stable: four, canary: zero, since: sinceCleared,
				acted: "nothing to promote: revision 4 is promoted"},
		},
		{
			name:     "the canary misses its progress deadline, auto-rollback on: undone as by an abort",
			recorded: progressing4, stable: st(3), canary: canaryDeploy(v4, withSpecReplicas(2), withPods(2, 2, 1, 1), timedOut),
			pods: []Pod{serving("c0"), starting("c1")}, step: 2,
			want: canaryWant{phase: PhaseDegraded, words: []string{"revision 4 failed on the canary", "progress deadline exceeded after 10s"},
				failed: h4, stable: four, canary: zero, unlabel: []string{"c0"}, since: sinceCleared},
			rests: true,
		},
		{
			name:    "the canary misses its progress deadline, auto-rollback off: Degraded, nothing scaled or unlabelled",
			desired: &noRollback, recorded: progressing4, stable: st(3), canary: canaryDeploy(v4, withSpecReplicas(2), withPods(2, 2, 1, 1), timedOut),
			pods: []Pod{serving("c0"), starting("c1")}, step: 2,
			want:  canaryWant{phase: PhaseDegraded, words: []string{"progress deadline exceeded", "auto-rollback is off"}, failed: h4, step: 2},
			rests: true,
		},
		{
			name:    "a failure held with auto-rollback off is undone by an abort",
			desired: &noRollback, recorded: degraded4, stable: st(3), canary: canaryDeploy(v4, withSpecReplicas(2), withPods(2, 2, 1, 1), timedOut),
			pods: []Pod{serving("c0"), starting("c1")}, step: 2, abort: true,
			want: canaryWant{phase: PhaseDegraded, words: []string{"aborted revision 4"}, failed: h4, stable: four, canary: zero,
				unlabel: []string{"c0"}, since: sinceCleared, acted: "aborted revision 4"},
			rests: true,
		},
		{
			name:     "Git asks for the failed template: not started, the recorded message stays",
			recorded: degraded4, stable: st(4), canary: canaryDeploy(v4, sized(0), timedOut),
			want:  canaryWant{phase: PhaseDegraded, words: []string{degraded4.Message}, failed: h4, stable: four, canary: zero, since: sinceCleared},
			rests: true,
		},
		{
			name:     "Git goes back to a template that failed before: refused at revision 5",
			recorded: healthy5, stable: stableDeploy(v5, sized(4)), canary: canaryDeploy(v5, sized(0)),
			want: canaryWant{phase: PhaseDegraded, words: []string{"template " + h4 + " failed", "not started again"},
				revision: 5, hash: h5, failed: h4, stable: four, canary: zero, since: sinceCleared},
			rests: true,
		},
		{
			name:     "pause command at a finished weight step: the step holds",
			recorded: progressing4, stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, paused: true,
			want:  canaryWant{phase: PhasePaused, words: []string{"canary step 1/5: 25% (1/4 pods serving)", "paused"}, stable: three, canary: one},
			rests: true,
		},
		{
			name:     "pause command past the end of a timed pause: the step holds",
			recorded: progressing4, stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, step: 1, now: time.Minute, paused: true,
			want:  canaryWant{phase: PhasePaused, words: []string{"canary step 2/5", "paused"}, stable: three, canary: one, step: 1},
			rests: true,
		},
		{
			name:     "pause command: a pod turning Ready still serves the current weight",
			recorded: progressing4, stable: st(4), canary: cy(1), pods: []Pod{ready("c0")}, paused: true,
			want: canaryWant{phase: PhasePaused, words: []string{"going to 25% (1/4 pods)"}, stable: three, canary: one, label: []string{"c0"}},
		},
		{
			name:     "pause command at 100%: the stable template is not replaced",
			recorded: progressing4, stable: st(2), canary: cy(2), pods: []Pod{serving("c0"), serving("c1")}, step: 4, paused: true,
			want:  canaryWant{phase: PhasePaused, words: []string{"paused before promoting"}, step: 4},
			rests: true,
		},
		{
			name:     "the Service does not select serving pods yet and stable is 3/4 available: no canary, no selector change",
			recorded: progressing4, stable: stableDeploy(v3, withPods(4, 4, 3, 3), rolling), canary: cy(0), notSelecting: true,
			want:  canaryWant{phase: PhaseProgressing, words: []string{"selecting the serving pods"}},
			rests: true,
		},
		{
			name:     "the Service does not select serving pods yet and none of the stable's pods is Ready: select them, nothing served is lost",
			recorded: progressing4, stable: stableDeploy(v3, withPods(4, 4, 0, 0)), canary: cy(0), notSelecting: true,
			want: canaryWant{phase: PhaseProgressing, words: []string{"selecting the serving pods"}, selectServing: true},
		},
		{
			// Adopted a moment after kubectl created it: its 4 pods serve,
			// the Deployment controller has not counted them Ready yet.
			name:     "the Service does not select serving pods yet, the stable reads 0 Ready but its pods serve: no selector change",
			recorded: progressing4, stable: stableDeploy(v3, withPods(4, 4, 0, 0)), canary: cy(0), notSelecting: true,
			serviceReady: []string{"web-1", "web-2", "web-3", "web-4"},
			want:         canaryWant{phase: PhaseProgressing, words: []string{"selecting the serving pods"}},
		},
		{
			name:     "the Service does not select serving pods yet and none of the stable's pods is Ready, its last write not observed: wait",
			recorded: progressing4, stable: stableDeploy(v3, withPods(4, 4, 0, 0), withGeneration(3, 2)), canary: cy(0), notSelecting: true,
			want:  canaryWant{phase: PhaseProgressing},
			rests: true,
		},
		{
			name:     "the Service does not select serving pods yet and stable is fully available: select them",
			recorded: progressing4, stable: st(4), canary: cy(0), notSelecting: true,
			want: canaryWant{phase: PhaseProgressing, words: []string{"selecting the serving pods"}, selectServing: true},
		},
		{
			// 4 pods at maxUnavailable 25%: 5 keep 4 available while they
			// are replaced.
			name:     "the stable template lacks the serving label (the workload was rolling): label it first, one pod more",
			recorded: progressing4, stable: deployment(v3), canary: cy(0), notSelecting: true,
			want: canaryWant{phase: PhaseProgressing, words: []string{"labelling the stable pods serving"}, template: StableServing, stable: new(int32(5))},
		},
		{
			name:     "no stable Deployment yet: wait for it",
			recorded: progressing4,
			want:     canaryWant{phase: PhaseProgressing, words: []string{"creating the stable Deployment"}},
		},
		{
			name:     "the canary does not carry revision 4 yet: nothing moves",
			recorded: progressing4, stable: st(3), canary: canaryDeploy(v3, sized(1)), pods: []Pod{serving("c0")}, step: 2,
			want: canaryWant{phase: PhaseProgressing, words: []string{"writing the template to the canary"}, step: 2},
		},
		{
			name:     "retried, the canary still reports its old deadline: Degraded until it makes progress",
			recorded: Retry(degraded4), stable: st(4), canary: canaryDeploy(v4, withSpecReplicas(1), withPods(1, 1, 0, 0), timedOut),
			want:  canaryWant{phase: PhaseDegraded, words: []string{"waiting for the canary to make progress"}},
			rests: true,
		},
	}
}

func TestPlanCanary(t *testing.T) {
	for _, tt := range canaryCases() {
		t.Run(tt.name, func(t *testing.T) {
			desired, recorded, o := tt.inputs()
			checkCanary(t, PlanCanary(desired, recorded, o), desired, o, tt.want)
		})
	}
}

// TestPlanCanaryWeights works the canary arithmetic at every size: at weight
// w of N replicas, ceil(w*N/100) canary pods (at least 1 for w > 0); each
// gets the serving label once Ready, and the stable gives up a pod for
// each, down to its own share rounded up, ceil((100-w)*N/100): below 100%
// the stable always serves (at 25% of 1, one pod of each). 100% is the
// full promotion instead.
func TestPlanCanaryWeights(t *testing.T) {
	tests := []struct {
		n, weight, canary, stable int32
	}{
		// canary ceil(0.01), ceil(0.25), ceil(0.5), ceil(0.99); stable ceil(0.99), ceil(0.75), ceil(0.5), ceil(0.01)
		{1, 0, 0, 1}, {1, 1, 1, 1}, {1, 25, 1, 1}, {1, 50, 1, 1}, {1, 99, 1, 1},
		// canary ceil(0.02), ceil(0.5), 1, ceil(1.98); stable ceil(1.98), ceil(1.5), 1, ceil(0.02)
		{2, 0, 0, 2}, {2, 1, 1, 2}, {2, 25, 1, 2}, {2, 50, 1, 1}, {2, 99, 2, 1},
		// canary ceil(0.03), ceil(0.75), ceil(1.5), ceil(2.97); stable ceil(2.97), ceil(2.25), ceil(1.5), ceil(0.03)
		{3, 0, 0, 3}, {3, 1, 1, 3}, {3, 25, 1, 3}, {3, 50, 2, 2}, {3, 99, 3, 1},
		// canary ceil(0.04), 1, 2, ceil(3.96); stable ceil(3.96), 3, 2, ceil(0.04)
		{4, 0, 0, 4}, {4, 1, 1, 4}, {4, 25, 1, 3}, {4, 50, 2, 2}, {4, 99, 4, 1},
		// canary ceil(0.1), ceil(2.5), 5, ceil(9.9); stable ceil(9.9), ceil(7.5), 5, ceil(0.1)
		{10, 0, 0, 10}, {10, 1, 1, 10}, {10, 25, 3, 8}, {10, 50, 5, 5}, {10, 99, 10, 1},
		{100, 0, 0, 100}, {100, 1, 1, 99}, {100, 25, 25, 75}, {100, 50, 50, 50}, {100, 99, 99, 1},
		{1, 100, 1, 0}, {2, 100, 2, 0}, {3, 100, 3, 0}, {4, 100, 4, 0}, {10, 100, 10, 0}, {100, 100, 100, 0},
	}
	for _, tt := range tests {
		for _, podsReady := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d%% of %d, pods Ready %v", tt.weight, tt.n, podsReady), func(t *testing.T) {
				desired := canaryDesired(tt.n, fmt.Sprintf("%d%%, pause", tt.weight))
				var pods []Pod
				var labelled []string
				for i := range tt.canary {
					name := fmt.Sprintf("c%03d", i)
					if !podsReady {
						pods = append(pods, starting(name))
						continue
					}
					pods, labelled = append(pods, ready(name)), append(labelled, name)
				}
				o := CanaryObserved{
					Stable: stableDeploy(v3, sized(tt.n)), Canary: canaryDeploy(v4, sized(tt.canary)), Pods: pods,
					ServiceSelectsServing: true, StepSince: t0, Now: at(time.Second),
				}
				plan := PlanCanary(desired, progressing4, o)

				stable := tt.n
				if podsReady {
					stable = tt.stable
				}
				want := canaryWant{phase: PhaseProgressing, stable: ptrTo(stable), canary: ptrTo(tt.canary), label: labelled}
				switch {
				case tt.weight == 100:
					want = canaryWant{phase: PhaseProgressing, words: []string{"promoting"}, stable: ptrTo(tt.n), template: StablePromote}
				case tt.canary == 0 || podsReady && stable == tt.n:
					// Nothing to bring up, or the stable's share is all
					// of it (1% of 10: ceil(9.9) = 10), the stable
					// already at N: done once the canary serves, and on
					// to the pause in the same plan.
					want.phase, want.step, want.since = PhasePaused, 1, sinceNow
					want.words = []string{fmt.Sprintf("canary step 2/2: %d%% (%d/%d pods serving); waiting for promote", tt.weight, tt.canary, tt.n)}
				default:
					// Not there yet, the stable being still at N: the
					// step's counts, the same line until it is.
					want.words = []string{fmt.Sprintf("canary step 1/2: going to %d%% (%d/%d pods)", tt.weight, tt.canary, tt.n)}
				}
				checkCanary(t, plan, desired, o, want)
			})
		}
	}
}

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

// TestPlanCanaryStableAloneFails: a revision that runs on the stable
// Deployment alone (the workload's first, created on the stable) fails at
// its progress deadline, as a rolling or blue-green revision does; while
// a canary pod still serves, the promotion waits for the stable.
func TestPlanCanaryStableAloneFails(t *testing.T) {
	desired := canaryDesired(4, DefaultSteps)
	recorded := Status{Phase: PhaseProgressing, Revision: 4, Hash: h4, Commit: commitV4, Message: "revision 4 (commit def5678): promoting the stable Deployment"}
	stuck := func(since time.Duration) []Pod {
		var pods []Pod
		for i := range 4 {
			pods = append(pods, Pod{Name: fmt.Sprintf("web-abc-%d", i), NotReadySince: at(since), Hash: h4})
		}
		return pods
	}
	for _, tt := range []struct {
		name    string
		stable  *appsv1.Deployment
		pods    []Pod
		stables []Pod
		phase   Phase
		failed  string
		words   string
		requeue time.Duration
	}{
		{name: "the Deployment controller gave up", stable: stableDeploy(podtemplate.Stamp(v4), withPods(4, 4, 0, 0), timedOut), stables: stuck(-5 * time.Second),
			phase: PhaseDegraded, failed: h4, words: "revision 4 failed on the stable Deployment: progress deadline exceeded after 10s"},
		{name: "its pods stalled", stable: stableDeploy(podtemplate.Stamp(v4), withPods(4, 4, 0, 0), withCondition(corev1.ConditionTrue, "ReplicaSetUpdated")), stables: stuck(-10 * time.Second),
			phase: PhaseDegraded, failed: h4, words: "failed on the stable Deployment"},
		{name: "its pods are starting", stable: stableDeploy(podtemplate.Stamp(v4), withPods(4, 4, 0, 0), withCondition(corev1.ConditionTrue, "ReplicaSetUpdated")), stables: stuck(-4 * time.Second),
			phase: PhaseProgressing, words: "promoting the stable Deployment", requeue: 6 * time.Second},
		{name: "a canary pod serves: the promotion waits", stable: stableDeploy(podtemplate.Stamp(v4), withPods(4, 4, 0, 0), timedOut), stables: stuck(-time.Minute),
			pods: []Pod{serving("web-canary-a")}, phase: PhaseProgressing, words: "promoting the stable Deployment"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanCanary(desired, recorded, CanaryObserved{Stable: tt.stable, Canary: canaryDeploy(podtemplate.Stamp(v4), withSpecReplicas(0), withPods(0, 0, 0, 0)),
				Pods: tt.pods, StablePods: tt.stables, ServiceSelectsServing: true, Now: t0})
			if plan.Status.Phase != tt.phase || plan.Status.FailedHash != tt.failed || !strings.Contains(plan.Status.Message, tt.words) {
				t.Errorf("status %+v, want phase %s, failed hash %q, message with %q", plan.Status, tt.phase, tt.failed, tt.words)
			}
			if plan.RequeueAfter != tt.requeue {
				t.Errorf("requeue after %v, want %v", plan.RequeueAfter, tt.requeue)
			}
		})
	}
}
