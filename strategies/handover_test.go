package strategies

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// TestPlanHandOver walks a promotion of revision 4 (4 replicas, steps
// "50%, 100%") through each state of the hand-over of the canary's
// ReplicaSet to the stable Deployment, as a restarted controller finds it:
// each plan asks for the next step, and none for the one done.
func TestPlanHandOver(t *testing.T) {
	desired := canaryDesired(4, "50%, 100%")
	recorded := withMessage(progressing4, "revision 4 (commit def5678): promoting: the canary's pods become the stable's")
	canaryTmpl := podtemplate.Stamp(v4)
	canaryTmpl.Labels = map[string]string{"app": "web", contract.LabelTrack: contract.TrackCanary, contract.LabelServing: "true"}
	canary := func(replicas int32, fs ...func(*appsv1.Deployment)) *appsv1.Deployment {
		d := deployment(canaryTmpl, append([]func(*appsv1.Deployment){named("web-canary"), sized(replicas)}, fs...)...)
		d.UID = "canary-uid"
		return d
	}
	pausedCanary := canary(4, paused)
	laggingCanary := canary(4, paused, withGeneration(4, 3), withPods(4, 4, 3, 3))
	deletingCanary := canary(4, paused, func(d *appsv1.Deployment) { d.DeletionTimestamp = &metav1.Time{Time: t0} })
	selects := func(d *appsv1.Deployment) {
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", contract.LabelWorkload: "web"}}
	}
	stableAt := func(n int32, fs ...func(*appsv1.Deployment)) *appsv1.Deployment {
		return stableDeploy(podtemplate.Stamp(v3), append([]func(*appsv1.Deployment){sized(n), selects}, fs...)...)
	}
	handed := deployment(canaryTmpl, sized(4), selects, paused) // the stable on the canary's template
	resumed := deployment(canaryTmpl, sized(4), selects)
	rs := func(name string, owner *appsv1.Deployment, tmpl corev1.PodTemplateSpec, fs ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: appsv1.ReplicaSetSpec{Template: withHashLabel(tmpl, name[len(name)-10:])}}
		if owner != nil {
			r.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
		}
		for _, f := range fs {
			f(r)
		}
		return r
	}
	heldOutRS := func(r *appsv1.ReplicaSet) {
		delete(r.Labels, "app")
		r.Annotations = map[string]string{contract.AnnotationHeldOut: "app=web"}
	}
	deleting := func(r *appsv1.ReplicaSet) { r.DeletionTimestamp = &metav1.Time{Time: t0} }
	workloadRS := func(r *appsv1.ReplicaSet) { r.Labels[contract.LabelWorkload] = "web" }
	canaryRS := rs("web-canary-7d9c556656", pausedCanary, pausedCanary.Spec.Template)
	orphanRS := rs("web-canary-7d9c556656", nil, pausedCanary.Spec.Template)
	adoptedRS := rs("web-canary-7d9c556656", handed, pausedCanary.Spec.Template)
	olderCanaryRS := rs("web-canary-64d88b9c4c", pausedCanary, deployment(podtemplate.Stamp(v3)).Spec.Template)
	stableRS := rs("web-5f6d7c8b9a", stableAt(0), stableAt(0).Spec.Template)
	stableHeld := rs("web-5f6d7c8b9a", stableAt(0), stableAt(0).Spec.Template, heldOutRS)
	stableReleased := rs("web-5f6d7c8b9a", nil, stableAt(0).Spec.Template, heldOutRS)
	// stableRSAt is the stable's ReplicaSet asking for spec pods and
	// running replicas, as the ReplicaSet controller reported after
	// observing generation observed of 3.
	stableRSAt := func(spec, replicas int32, observed int64) *appsv1.ReplicaSet {
		r := ownRS(stableAt(0), stableRS.Name, spec, replicas, replicas)
		r.Labels, r.Status.ObservedGeneration = map[string]string{"app": "web"}, observed
		return r
	}
	rolledBackTo := rs("web-canary-1a2b3c4d5e", nil, pausedCanary.Spec.Template, heldOutRS) // an earlier revision of the same template
	owned := []Pod{serving("c0"), serving("c1"), serving("c2"), serving("c3")}
	four, zero, yes, no := int32(4), int32(0), true, false
	type want struct {
		canaryReplicas, stableReplicas *int32
		canaryPaused, stablePaused     *bool
		stable                         StableTemplate
		holdOut, restore               []HeldOut
		orphanCanary                   bool
		handOver                       string
		deleteReplicaSets              []string
		phase                          Phase
	}
	held := []HeldOut{{ReplicaSet: stableRS.Name, Key: "app", Value: "web"}}
	for _, tt := range []struct {
		name       string
		stable     *appsv1.Deployment
		canary     *appsv1.Deployment
		rsets      []*appsv1.ReplicaSet
		pods       []Pod
		stablePods []Pod
		want       want
	}{
		{name: "1. the canary at 2 of 4, all of its template: it grows, paused in the same write", stable: stableAt(2), canary: canary(2),
			pods: owned[:2], want: want{canaryReplicas: &four, canaryPaused: &yes, phase: PhaseProgressing}},
		{name: "1. the canary at 2 of 4 with a pod of an earlier template: it grows, not paused", stable: stableAt(2),
			canary: canary(2, withPods(3, 2, 3, 3)), pods: owned[:2], want: want{canaryReplicas: &four, phase: PhaseProgressing}},
		{name: "1. the canary not caught up with its spec: it grows, not paused", stable: stableAt(2),
			canary: canary(2, func(d *appsv1.Deployment) { d.Generation = 3; d.Status.ObservedGeneration = 2 }), pods: owned[:2],
			want: want{canaryReplicas: &four, phase: PhaseProgressing}},
		{name: "1. the canary at 4, one pod starting: paused, it waits", stable: stableAt(2), canary: canary(4, withPods(4, 4, 3, 3)),
			pods: append(slices.Clone(owned[:3]), starting("c3")), want: want{canaryReplicas: &four, canaryPaused: &yes, phase: PhaseProgressing}},
		{name: "1. the canary paused at 4, one pod starting: the stable is left as it is", stable: stableAt(2),
			canary: canary(4, paused, withPods(4, 4, 3, 3)), rsets: []*appsv1.ReplicaSet{canaryRS, stableRS},
			pods: append(slices.Clone(owned[:3]), starting("c3")), want: want{canaryReplicas: &four, phase: PhaseProgressing}},
		{name: "1. 4 canary pods serve: the canary is paused", stable: stableAt(2), canary: canary(4), pods: owned,
			want: want{canaryReplicas: &four, canaryPaused: &yes, phase: PhaseProgressing}},
		{name: "1. the canary paused at 4, its status not yet caught up, its ReplicaSet reporting 4 of 4: the stable is paused at 0",
			stable: stableAt(2), canary: laggingCanary, rsets: []*appsv1.ReplicaSet{ownRS(laggingCanary, "web-canary-7d9c556656", 4, 4, 4), stableRS},
			pods: owned, want: want{stableReplicas: &zero, stablePaused: &yes, phase: PhaseProgressing}},
		{name: "1. the canary paused at 4, its status not yet caught up, its ReplicaSet reporting 3 available: the stable is left as it is",
			stable: stableAt(2), canary: laggingCanary, rsets: []*appsv1.ReplicaSet{ownRS(laggingCanary, "web-canary-7d9c556656", 4, 4, 3), stableRS},
			pods: owned, want: want{canaryReplicas: &four, phase: PhaseProgressing}},
		{name: "2. the canary paused: the stable is paused at 0", stable: stableAt(2), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableRS}, pods: owned, want: want{stableReplicas: &zero, stablePaused: &yes, phase: PhaseProgressing}},
		{name: "2. the stable paused, a canary pod restarting: the hand-over goes on", stable: stableAt(0, paused),
			canary: canary(4, paused, withPods(4, 4, 3, 3)), rsets: []*appsv1.ReplicaSet{canaryRS, stableRS},
			pods: append(slices.Clone(owned[:3]), starting("c3")), want: want{holdOut: held, phase: PhaseProgressing}},
		{name: "2. the stable paused, its pods going: it waits", stable: stableAt(0, paused, withPods(2, 2, 2, 2)), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableRS}, pods: owned, want: want{phase: PhaseProgressing}},
		{name: "2. the stable paused, its status not caught up, its ReplicaSet at 0 of 0: its ReplicaSets are held out",
			stable: stableAt(0, paused, withGeneration(5, 4), withPods(2, 2, 2, 2)), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableRSAt(0, 0, 3)}, pods: owned,
			want: want{holdOut: held, phase: PhaseProgressing}},
		{name: "2. the stable paused, its status not caught up, its ReplicaSet at 0 still running 1: it waits",
			stable: stableAt(0, paused, withGeneration(5, 4), withPods(2, 2, 2, 2)), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableRSAt(0, 1, 3)}, pods: owned, stablePods: []Pod{serving("s0")},
			want: want{phase: PhaseProgressing}},
		{name: "2. the stable paused, its ReplicaSet at 0 reporting the pod it deleted, the pod gone from the caches: held out",
			stable: stableAt(0, paused, withGeneration(5, 4), withPods(2, 2, 2, 2)), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableRSAt(0, 1, 3)}, pods: owned,
			want: want{holdOut: held, phase: PhaseProgressing}},
		{name: "2. the stable paused, its ReplicaSet at 0 reporting the pod it deleted, the pod terminating: held out",
			stable: stableAt(0, paused, withGeneration(5, 4), withPods(2, 2, 2, 2)), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableRSAt(0, 1, 3)}, pods: owned, stablePods: []Pod{servingDeleting("s0")},
			want: want{holdOut: held, phase: PhaseProgressing}},
		{name: "2. the stable paused, its ReplicaSet at 0 not yet observed by the ReplicaSet controller: it waits",
			stable: stableAt(0, paused, withGeneration(5, 4), withPods(2, 2, 2, 2)), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableRSAt(0, 0, 2)}, pods: owned, want: want{phase: PhaseProgressing}},
		{name: "2. the stable paused, its ReplicaSet at 0 not yet observed, its pods gone from the caches: it waits",
			stable: stableAt(0, paused, withGeneration(5, 4), withPods(2, 2, 2, 2)), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableRSAt(0, 2, 2)}, pods: owned, want: want{phase: PhaseProgressing}},
		{name: "3. the stable runs none: its ReplicaSets are held out, the canary's earlier ones deleted", stable: stableAt(0, paused), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, olderCanaryRS, stableRS}, pods: owned,
			want: want{holdOut: held, deleteReplicaSets: []string{olderCanaryRS.Name}, phase: PhaseProgressing}},
		{name: "3. held out, not let go yet: it waits", stable: stableAt(0, paused), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableHeld}, pods: owned, want: want{phase: PhaseProgressing}},
		{name: "4. the stable controls none: it takes the canary's template at 4, paused", stable: stableAt(0, paused), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableReleased}, pods: owned, want: want{stable: StableHandOver, stableReplicas: &four, phase: PhaseProgressing}},
		{name: "4. the stable controls none, the Deployment controller not having reported it at 0: it takes the canary's template",
			stable: stableAt(0, paused, withGeneration(5, 4), withPods(2, 2, 2, 2)), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableReleased}, pods: owned, want: want{stable: StableHandOver, stableReplicas: &four, phase: PhaseProgressing}},
		{name: "5. the stable on the canary's template: the canary's ReplicaSet is handed to it, and the canary goes", stable: handed,
			canary: pausedCanary, rsets: []*appsv1.ReplicaSet{canaryRS, stableReleased}, pods: owned,
			want: want{orphanCanary: true, handOver: canaryRS.Name, phase: PhaseProgressing}},
		{name: "5. the stable on the canary's template, not yet read by the Deployment controller: it waits",
			stable: deployment(canaryTmpl, sized(4), selects, paused, withGeneration(6, 5)), canary: pausedCanary, rsets: []*appsv1.ReplicaSet{canaryRS, stableReleased},
			pods: owned, want: want{phase: PhaseProgressing}},
		{name: "5. the ReplicaSet the stable's already (a restart in between): the canary goes", stable: handed, canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{adoptedRS, stableReleased}, pods: owned, want: want{orphanCanary: true, phase: PhaseProgressing}},
		{name: "5. the canary being deleted: it waits", stable: handed, canary: deletingCanary,
			rsets: []*appsv1.ReplicaSet{canaryRS, stableReleased}, pods: owned, want: want{phase: PhaseProgressing}},
		{name: "5. the ReplicaSet the stable's, the canary being deleted: it waits for the canary to go", stable: handed,
			canary: deletingCanary, rsets: []*appsv1.ReplicaSet{adoptedRS, stableReleased}, pods: owned, want: want{phase: PhaseProgressing}},
		{name: "5. the canary gone, its ReplicaSet not adopted yet: it waits", stable: handed,
			rsets: []*appsv1.ReplicaSet{orphanRS, stableReleased}, pods: owned, want: want{phase: PhaseProgressing}},
		{name: "6. adopted: the stable is resumed, its history given back", stable: handed,
			rsets: []*appsv1.ReplicaSet{adoptedRS, stableReleased}, want: want{stablePaused: &no, restore: held, phase: PhaseProgressing}},
		{name: "6. adopted, a held-out one of the same template: it goes", stable: handed,
			rsets: []*appsv1.ReplicaSet{adoptedRS, stableReleased, rolledBackTo},
			want:  want{stablePaused: &no, restore: held, deleteReplicaSets: []string{rolledBackTo.Name}, phase: PhaseProgressing}},
		{name: "6. nothing to adopt (deleted by hand): the stable is resumed to make its own", stable: handed,
			rsets: []*appsv1.ReplicaSet{stableReleased}, want: want{stablePaused: &no, phase: PhaseProgressing}},
		{name: "6. resumed before the history came back (a restart): it comes back, not Healthy yet", stable: resumed,
			rsets: []*appsv1.ReplicaSet{adoptedRS, stableReleased}, want: want{stableReplicas: &four, restore: held, phase: PhaseProgressing}},
		{name: "6. the history given back, not adopted yet: not Healthy yet", stable: resumed,
			rsets: []*appsv1.ReplicaSet{adoptedRS, rs("web-5f6d7c8b9a", nil, stableAt(0).Spec.Template, workloadRS)},
			want:  want{stableReplicas: &four, phase: PhaseProgressing}},
		{name: "6. the history adopted again: Healthy", stable: resumed,
			rsets: []*appsv1.ReplicaSet{adoptedRS, rs("web-5f6d7c8b9a", resumed, stableAt(0).Spec.Template, workloadRS)},
			want:  want{stableReplicas: &four, phase: PhaseHealthy}},
		{name: "a ReplicaSet being deleted is no history to give back", stable: resumed,
			rsets: []*appsv1.ReplicaSet{adoptedRS, rs("web-5f6d7c8b9a", nil, stableAt(0).Spec.Template, heldOutRS, deleting)},
			want:  want{stableReplicas: &four, phase: PhaseHealthy}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := CanaryObserved{Stable: tt.stable, Canary: tt.canary, Pods: tt.pods, StablePods: tt.stablePods, ReplicaSets: tt.rsets,
				ServiceReady:          []string{"c0", "c1", "c2", "c3"},
				ServiceSelectsServing: true, Step: 2, StepSince: t0, Now: t0}
			plan := PlanCanary(desired, recorded, o)
			got := want{canaryReplicas: plan.CanaryReplicas, stableReplicas: plan.StableReplicas, canaryPaused: plan.CanaryPaused,
				stablePaused: plan.StablePaused, stable: plan.Stable, holdOut: plan.HoldOut, restore: plan.Restore,
				orphanCanary: plan.OrphanCanary, handOver: plan.HandOver, deleteReplicaSets: plan.DeleteReplicaSets, phase: plan.Status.Phase}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("plan %+v\nwant %+v\nmessage %q, actions %+v", got, tt.want, plan.Status.Message, plan.Actions)
			}
			checkHandOverCommands(t, desired, recorded, o, plan)
		})
	}
}

// checkHandOverCommands plans o again with each command pending. Once
// the canary is paused at its full count, the hand-over goes through
// every one (its canary pods serve and the stable runs none of its own,
// so an abort would leave the Service empty), and the Event says why (a
// pause holds the next revision, once this one is promoted); before
// that, an abort undoes the revision as at any step.
func checkHandOverCommands(t *testing.T, desired CanaryDesired, recorded Status, o CanaryObserved, plan CanaryPlan) {
	t.Helper()
	being := handingOver(o) || handedOver(o) || adopting(o)
	through := being || hashOf(o.Stable) == desired.Hash
	pauseActed := "" // promoted: the pause holds the next revision
	if being {
		pauseActed = "revision 4 is being promoted: its hand-over finishes first"
	}
	for _, cmd := range []struct {
		name  string
		set   func(*CanaryObserved)
		acted string
	}{
		{"abort", func(o *CanaryObserved) { o.Abort = true }, "too late to abort: revision 4 is "},
		{"promote", func(o *CanaryObserved) { o.Promote = true }, "nothing to promote: revision 4 is "},
		{"pause", func(o *CanaryObserved) { o.Paused = true }, pauseActed},
	} {
		commanded := o
		cmd.set(&commanded)
		got := PlanCanary(desired, recorded, commanded)
		switch {
		case through && (!reflect.DeepEqual(got.Actions, plan.Actions) || got.Status != plan.Status):
			t.Errorf("%s: the hand-over did not go through it: actions %+v, status %+v; want %+v, %+v", cmd.name, got.Actions, got.Status, plan.Actions, plan.Status)
		case through && (!strings.HasPrefix(got.Acted, cmd.acted) || cmd.name == "pause" && got.Acted != cmd.acted):
			t.Errorf("%s: acted %q, want it to start %q", cmd.name, got.Acted, cmd.acted)
		case !through && cmd.name == "abort" && (got.Acted != "aborted revision 4" || got.Status.FailedHash != desired.Hash || got.Status.Phase != PhaseDegraded):
			t.Errorf("abort before the canary is paused at its full count: acted %q, status %+v; want revision 4 aborted", got.Acted, got.Status)
		}
	}
}

// TestSequenceHandOver: the actions of a hand-over's plans, in order. The
// stable's write comes before the held-out ReplicaSets come back (a
// paused stable would scale one it adopts back up), and the canary goes
// with the orphan policy once its ReplicaSet is the stable's.
func TestSequenceHandOver(t *testing.T) {
	no := false
	stable := stableDeploy(podtemplate.Stamp(v3), sized(4), paused)
	canary := canaryDeploy(podtemplate.Stamp(v4), sized(4), paused)
	restore := []HeldOut{{ReplicaSet: "web-5f6d7c8b9a", Key: "app", Value: "web"}}
	actions := sequenceCanary(CanaryPlan{StablePaused: &no, Restore: restore}, CanaryObserved{Stable: stable}, 4)
	if len(actions) != 2 || actions[0].Kind != ActionWrite || actions[0].Paused == nil || *actions[0].Paused ||
		!reflect.DeepEqual(actions[1], Action{Kind: ActionRestore, ReplicaSet: "web-5f6d7c8b9a", Key: "app", Value: "web"}) {
		t.Errorf("resume: %+v, want the stable resumed, then the label given back", actions)
	}
	actions = sequenceCanary(CanaryPlan{OrphanCanary: true, HandOver: "web-canary-7d9c556656"}, CanaryObserved{Stable: stable, Canary: canary}, 4)
	if len(actions) != 3 || !reflect.DeepEqual(actions[1], Action{Kind: ActionHandOver, ReplicaSet: "web-canary-7d9c556656"}) ||
		!reflect.DeepEqual(actions[2], Action{Kind: ActionDelete, Deployment: contract.SuffixCanary, Orphan: true}) {
		t.Errorf("orphan: %+v, want the stable's write, the canary's ReplicaSet handed to it, then the canary deleted leaving it", actions)
	}
}

// TestPlanHandOverNotTaken: a promotion hands the canary's pods over only
// where it can; else the stable takes the template and surges, as before.
func TestPlanHandOverNotTaken(t *testing.T) {
	oldStyle := deployment(podtemplate.Stamp(v4), named("web-canary"), sized(2), withTemplateLabel(contract.LabelTrack, contract.TrackCanary))
	o := CanaryObserved{Stable: stableDeploy(podtemplate.Stamp(v3), sized(2)), Canary: oldStyle, Pods: []Pod{serving("c0"), serving("c1")},
		ServiceSelectsServing: true, Step: 2, StepSince: t0, Now: t0}
	for name, desired := range map[string]CanaryDesired{
		"a canary made before its template carried the serving label": canaryDesired(4, "50%, 100%"),
		"an HPA owns the count": {Desired: desiredN(4), Steps: stepsOf("50%, 100%"), Autoscaled: true},
	} {
		t.Run(name, func(t *testing.T) {
			o := o
			if desired.Autoscaled {
				o.Canary = oldStyle.DeepCopy()
				o.Canary.Spec.Template.Labels[contract.LabelServing] = "true"
			}
			if plan := PlanCanary(desired, progressing4, o); plan.Stable != StablePromote || plan.CanaryPaused != nil {
				t.Errorf("stable %v, canary paused %v; want the promotion as before (StablePromote)", plan.Stable, plan.CanaryPaused)
			}
		})
	}
}

// TestIdleCanary: a canary Deployment paused at 0 waits for the next
// revision, and is no hand-over: the workload at rest stays Healthy and
// nothing is written to either Deployment; a hand-over's canary is
// paused at its full count. A workload of 0 is promoted, not handed over,
// so that no hand-over's canary is ever paused at 0.
func TestIdleCanary(t *testing.T) {
	// As plimsoll makes it: its template carries the serving label and a
	// track, the other one than the stable pods'.
	idle := canaryDeploy(v4, sized(0), paused, withTemplateLabel(contract.LabelServing, "true"))
	for _, tt := range []struct {
		name string
		d    *appsv1.Deployment
		want bool
	}{
		{"paused at 0", idle, true},
		{"paused at 4 by a hand-over", canaryDeploy(v4, sized(4), paused), false},
		{"at 0, not paused (made before canaries idled paused)", canaryDeploy(v4, sized(0)), false},
		{"absent", nil, false},
	} {
		if got := IdleCanary(tt.d); got != tt.want {
			t.Errorf("%s: IdleCanary = %v, want %v", tt.name, got, tt.want)
		}
	}

	healthy4 := Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4, Message: "revision 4 (commit def5678): 4/4 available"}
	o := CanaryObserved{Stable: stableDeploy(v4, sized(4)), Canary: idle, ServiceSelectsServing: true, Now: t0}
	if handingOver(o) || handedOver(o) || adopting(o) {
		t.Errorf("an idle canary read as a hand-over: handing over %v, handed over %v, adopting %v", handingOver(o), handedOver(o), adopting(o))
	}
	plan := PlanCanary(canaryDesired(4, DefaultSteps), healthy4, o)
	if plan.Status.Phase != PhaseHealthy || plan.CanaryPaused != nil || plan.StablePaused != nil || plan.Stable != StableKeep ||
		len(plan.HoldOut) > 0 || len(plan.DeleteReplicaSets) > 0 {
		t.Errorf("at rest with an idle canary: phase %s, canary paused %v, stable paused %v, stable %v, hold out %v, delete %v; want Healthy and nothing done",
			plan.Status.Phase, plan.CanaryPaused, plan.StablePaused, plan.Stable, plan.HoldOut, plan.DeleteReplicaSets)
	}

	// A workload switched to canary with a new image: its canary was made
	// idle with the revision's template, and its first step lifts the
	// pause as it asks for the step's pod.
	o = CanaryObserved{Stable: stableDeploy(v3, sized(4)), Canary: canaryDeploy(v4, sized(0), paused, withTemplateLabel(contract.LabelServing, "true")),
		ServiceSelectsServing: true, Now: t0}
	first := canaryDesired(4, DefaultSteps)
	first.Hash = hashOf(o.Canary)
	plan = PlanCanary(first, progressing4, o)
	if plan.CanaryReplicas == nil || *plan.CanaryReplicas != 1 || plan.CanaryPaused == nil || *plan.CanaryPaused {
		t.Errorf("the first step on an idle canary: canary at %v, paused %v; want 1, the pause lifted", plan.CanaryReplicas, plan.CanaryPaused)
	}

	zero := canaryDesired(0, "100%")
	o = CanaryObserved{Stable: stableDeploy(v3, sized(0)), Canary: canaryDeploy(v4, sized(0), withTemplateLabel(contract.LabelServing, "true")),
		ServiceSelectsServing: true, Now: t0}
	zero.Hash = hashOf(o.Canary)
	if plan := PlanCanary(zero, progressing4, o); plan.Stable != StablePromote || plan.CanaryPaused != nil {
		t.Errorf("a workload of 0 at 100%%: stable %v, canary paused %v; want StablePromote, the canary left as it is", plan.Stable, plan.CanaryPaused)
	}
}

// TestOtherTrack: a new canary's track is never the stable pods'.
func TestOtherTrack(t *testing.T) {
	for stable, want := range map[string]string{"": contract.TrackCanary, contract.TrackCanary: contract.TrackCanaryNext,
		contract.TrackCanaryNext: contract.TrackCanary} {
		if got := OtherTrack(stable); got != want {
			t.Errorf("OtherTrack(%q) = %q, want %q", stable, got, want)
		}
	}
}

// withHashLabel is t with the pod-template-hash label the Deployment
// controller gives a ReplicaSet's template.
func withHashLabel(t corev1.PodTemplateSpec, hash string) corev1.PodTemplateSpec {
	t = *t.DeepCopy()
	t.Labels[LabelPodTemplateHash] = hash
	return t
}

// TestSameTemplate compares templates as the Deployment controller does
// (EqualIgnoreHash): the pod-template-hash label aside, every label,
// annotation and field counts, and neither argument changes.
func TestSameTemplate(t *testing.T) {
	base := func() corev1.PodTemplateSpec {
		tmpl := podtemplate.Stamp(v4)
		tmpl.Labels = map[string]string{"app": "web", LabelPodTemplateHash: "5d9f8b7c4"}
		return tmpl
	}
	tests := []struct {
		name string
		edit func(*corev1.PodTemplateSpec)
		same bool
	}{
		{"identical", func(*corev1.PodTemplateSpec) {}, true},
		{"another pod-template-hash", func(p *corev1.PodTemplateSpec) { p.Labels[LabelPodTemplateHash] = "7c4d9f8b5" }, true},
		{"no pod-template-hash", func(p *corev1.PodTemplateSpec) { delete(p.Labels, LabelPodTemplateHash) }, true},
		{"no labels but the hash against none", func(p *corev1.PodTemplateSpec) { p.Labels = map[string]string{LabelPodTemplateHash: "x"} }, false},
		{"another label value", func(p *corev1.PodTemplateSpec) { p.Labels["app"] = "api" }, false},
		{"a label more", func(p *corev1.PodTemplateSpec) { p.Labels[contract.LabelServing] = "true" }, false},
		{"a label less", func(p *corev1.PodTemplateSpec) { delete(p.Labels, "app") }, false},
		{"an annotation more", func(p *corev1.PodTemplateSpec) { p.Annotations["team"] = "payments" }, false},
		{"another image", func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Image = "web:5" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := base(), base()
			tt.edit(&b)
			beforeA, beforeB := a.DeepCopy(), b.DeepCopy()
			if got := SameTemplate(a, b); got != tt.same {
				t.Errorf("SameTemplate(a, b) = %v, want %v", got, tt.same)
			}
			if got := SameTemplate(b, a); got != tt.same {
				t.Errorf("SameTemplate(b, a) = %v, want %v", got, tt.same)
			}
			if !reflect.DeepEqual(&a, beforeA) || !reflect.DeepEqual(&b, beforeB) {
				t.Errorf("SameTemplate changed its arguments")
			}
		})
	}
	// Labels holding only the hash are none, as nil and empty maps are
	// equal to the Deployment controller.
	a, b := base(), base()
	a.Labels, b.Labels = map[string]string{LabelPodTemplateHash: "x"}, nil
	if !SameTemplate(a, b) {
		t.Errorf("SameTemplate(hash label only, no labels) = false, want true")
	}
}
