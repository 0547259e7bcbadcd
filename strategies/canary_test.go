package strategies

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

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
