package strategies

import (
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// TestPlanHandOver walks a promotion of revision 4 (4 replicas, steps
// "50%, 100%") through each state of the hand-over of the canary's pods
// to the stable Deployment, as a restarted controller finds it: each plan
// asks for the next step, and none for the one done.
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
	stableAt := func(n int32) *appsv1.Deployment { return stableDeploy(podtemplate.Stamp(v3), sized(n)) }
	handed := deployment(canaryTmpl, sized(4)) // the stable on the canary's template
	ownRS := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-canary-7d9c556656",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pausedCanary, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Template: withHashLabel(pausedCanary.Spec.Template, "7d9c556656")}}
	deletingRS := ownRS.DeepCopy()
	deletingRS.DeletionTimestamp = &metav1.Time{Time: t0}
	olderRS := ownRS.DeepCopy()
	olderRS.Name, olderRS.Spec.Template = "web-canary-64d88b9c4c", withHashLabel(deployment(podtemplate.Stamp(v3)).Spec.Template, "64d88b9c4c")
	olderDeleting := olderRS.DeepCopy()
	olderDeleting.DeletionTimestamp = &metav1.Time{Time: t0}
	owned := []Pod{serving("c0"), serving("c1"), serving("c2"), serving("c3")}
	orphaned := []Pod{{Name: "c0", Ready: true, Serving: true, Orphan: true}, {Name: "c1", Ready: true, Serving: true, Orphan: true},
		{Name: "c2", Ready: true, Serving: true, Orphan: true}, {Name: "c3", Ready: true, Serving: true, Orphan: true}}
	four, zero := int32(4), int32(0)
	type want struct {
		canaryReplicas, stableReplicas *int32
		paused                         *bool
		orphan                         string
		stable                         StableTemplate
		deleteCanary                   bool
		deletePods, deleteReplicaSets  []string
		phase                          Phase
	}
	yes := true
	for _, tt := range []struct {
		name   string
		stable *appsv1.Deployment
		canary *appsv1.Deployment
		rsets  []*appsv1.ReplicaSet
		pods   []Pod
		ready  []string // the Service's ready endpoints
		want   want
	}{
		{name: "1. the canary at 2 of 4: it grows", stable: stableAt(2), canary: canary(2), pods: owned[:2],
			want: want{canaryReplicas: &four, phase: PhaseProgressing}},
		{name: "1. the canary at 4, one pod starting: it waits", stable: stableAt(2), canary: canary(4, withPods(4, 4, 3, 3)),
			pods: append(slices.Clone(owned[:3]), starting("c3")), want: want{canaryReplicas: &four, phase: PhaseProgressing}},
		{name: "2. 4 canary pods serve: the canary is paused, the stable goes to 0", stable: stableAt(2), canary: canary(4), pods: owned,
			want: want{canaryReplicas: &four, paused: &yes, stableReplicas: &zero, phase: PhaseProgressing}},
		{name: "2. paused, the stable still up (a restart between the writes): it goes to 0", stable: stableAt(2), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{ownRS}, pods: owned, want: want{stableReplicas: &zero, orphan: ownRS.Name, phase: PhaseProgressing}},
		{name: "3. paused, the stable at 0: the canary's ReplicaSet goes, leaving its pods", stable: stableAt(0), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{ownRS}, pods: owned, want: want{orphan: ownRS.Name, phase: PhaseProgressing}},
		{name: "3. the canary's ReplicaSet of an earlier revision goes first", stable: stableAt(0), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{ownRS, olderRS}, pods: owned, want: want{deleteReplicaSets: []string{olderRS.Name}, phase: PhaseProgressing}},
		{name: "3. and is gone before the canary's own goes", stable: stableAt(0), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{ownRS, olderDeleting}, pods: owned, want: want{phase: PhaseProgressing}},
		{name: "3. the ReplicaSet being deleted: it waits for the garbage collector", stable: stableAt(0), canary: pausedCanary,
			rsets: []*appsv1.ReplicaSet{deletingRS}, pods: owned, want: want{phase: PhaseProgressing}},
		{name: "3. the ReplicaSet gone, pods still owned: it waits", stable: stableAt(0), canary: pausedCanary,
			pods: append(slices.Clone(orphaned[:3]), serving("c3")), want: want{phase: PhaseProgressing}},
		{name: "4. every pod an orphan: the stable takes the canary's template at 4", stable: stableAt(0), canary: pausedCanary,
			pods: orphaned, want: want{stable: StableHandOver, stableReplicas: &four, phase: PhaseProgressing}},
		{name: "5. the stable on the canary's template: the emptied canary goes", stable: handed, canary: pausedCanary,
			want: want{stableReplicas: &four, deleteCanary: true, phase: PhaseHealthy}},
		{name: "orphans nobody adopted, the stable available: they go", stable: handed, pods: orphaned,
			ready: []string{"c0", "c1", "c2", "c3", "web-4-a", "web-4-b", "web-4-c", "web-4-d"},
			want:  want{stableReplicas: &four, deletePods: []string{"c0", "c1", "c2", "c3"}, phase: PhaseProgressing}},
		{name: "orphans read before their adoption reached the cache, the stable available with them: they stay", stable: handed, pods: orphaned,
			ready: []string{"c0", "c1", "c2", "c3"},
			want:  want{stableReplicas: &four, phase: PhaseProgressing}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := CanaryObserved{Stable: tt.stable, Canary: tt.canary, Pods: tt.pods, ReplicaSets: tt.rsets, ServiceReady: tt.ready,
				ServiceSelectsServing: true, Step: 2, StepSince: t0, Now: t0}
			plan := PlanCanary(desired, recorded, o)
			got := want{canaryReplicas: plan.CanaryReplicas, stableReplicas: plan.StableReplicas, paused: plan.CanaryPaused,
				orphan: plan.Orphan, stable: plan.Stable, deleteCanary: plan.DeleteCanary, deletePods: plan.DeletePods,
				deleteReplicaSets: plan.DeleteReplicaSets, phase: plan.Status.Phase}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("plan %+v\nwant %+v\nmessage %q, actions %+v", got, tt.want, plan.Status.Message, plan.Actions)
			}
		})
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
