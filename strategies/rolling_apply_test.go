package strategies

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// TestPlanRollingApply: the one write of a rolling plan, for each case
// the controller observes: which template goes out, whether stamped,
// with which change cause, whether written when the live Deployment holds
// it already, with a kubectl take-over first, with a surge strategy, and
// at which count.
func TestPlanRollingApply(t *testing.T) {
	template := func(image string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}
	}
	git := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Template: template("web:v2"),
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}}}
	live := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web",
		Annotations: map[string]string{AnnotationChangeCause: "aaaaaaa v1"}}, Spec: appsv1.DeploymentSpec{Template: template("web:v1")}}
	undone := live.DeepCopy()
	undone.Spec.Template.Annotations = map[string]string{contract.AnnotationTemplateHash: "h1"}
	rollback := &Rollback{Template: template("web:v0")}
	// stable is a canary's stable Deployment, with the canary's inputs and
	// state, its pods labelled serving.
	stable := live.DeepCopy()
	stable.Annotations[contract.AnnotationStrategy] = contract.StrategyCanary
	stable.Annotations[contract.AnnotationService] = "web"
	stable.Annotations[contract.AnnotationSteps] = "50%, 100%"
	stable.Annotations[contract.AnnotationStep] = "2"
	stable.Spec.Template.Labels = map[string]string{contract.LabelServing: "true"}
	// primary has run with the serving label since such a switch.
	primary := stable.DeepCopy()
	primary.Annotations = map[string]string{AnnotationChangeCause: "aaaaaaa v1"}
	held := func(change func(*RollingHeld)) RollingHeld {
		h := RollingHeld{Git: git, Live: live, Recorded: Status{Phase: PhaseHealthy, Revision: 2, Hash: "h2"},
			Primary: true, Cause: "bbbbbbb v2", RecordedCause: "ccccccc v2"}
		if change != nil {
			change(&h)
		}
		return h
	}
	git2 := RollingPlan{Template: TemplateGit, Status: Status{Hash: "h2", Revision: 2}}
	tests := []struct {
		name  string
		plan  RollingPlan
		held  RollingHeld
		image string // "" for no action
		stamp bool
		cause string
		// meta are the annotations an ActionMetadata before the apply
		// drops; nil for none.
		meta  []string
		check func(*RollingWrite) string
	}{
		{name: "Git dropped metadata the controller wrote: a write of its own first", plan: git2,
			held: held(func(h *RollingHeld) { h.GitDropped = true }), image: "web:v2", stamp: true, cause: "bbbbbbb v2", meta: []string{}},
		{name: "the serving label stays on a template that runs", plan: git2,
			held: held(func(h *RollingHeld) { h.Live, h.RunsGit = primary, true }), image: "web:v1", cause: "aaaaaaa v1",
			check: func(w *RollingWrite) string {
				if w.Template.Labels[contract.LabelServing] != "true" {
					return "want the serving label kept on the running template"
				}
				return ""
			}},
		{name: "the serving label goes with the next revision", plan: git2, held: held(func(h *RollingHeld) { h.Live = primary }),
			image: "web:v2", stamp: true, cause: "bbbbbbb v2",
			check: func(w *RollingWrite) string {
				if _, ok := w.Template.Labels[contract.LabelServing]; ok {
					return "want Git's template without the serving label"
				}
				return ""
			}},
		{name: "a new revision: Git's template, stamped, the commit its cause", plan: git2, held: held(nil),
			image: "web:v2", stamp: true, cause: "bbbbbbb v2"},
		{name: "Git's template runs already: as it runs, its cause kept", plan: git2, held: held(func(h *RollingHeld) { h.RunsGit = true }),
			image: "web:v1", cause: "aaaaaaa v1"},
		{name: "Git's revision changed by hand: Git's again, always, kubectl's fields taken over",
			plan: git2, held: held(func(h *RollingHeld) { h.Stamped = true }), image: "web:v2", stamp: true, cause: "aaaaaaa v1",
			check: func(w *RollingWrite) string {
				if !w.Always || !w.TakeOver || w.Undone {
					return "want Always and TakeOver"
				}
				return ""
			}},
		{name: "kubectl rollout undo: Git's again, always, the revision's recorded cause",
			plan: git2, held: held(func(h *RollingHeld) { h.Live = undone }), image: "web:v2", stamp: true, cause: "ccccccc v2",
			check: func(w *RollingWrite) string {
				if !w.Always || !w.Undone || w.TakeOver {
					return "want Always and Undone"
				}
				return ""
			}},
		{name: "undone, but the Deployment keeps hand edits: a new write of Git's",
			plan: git2, held: held(func(h *RollingHeld) { h.Live, h.KeepsHandEdits = undone, true }), image: "web:v2", stamp: true,
			cause: "bbbbbbb v2"},
		{name: "a refused template: the live one as it runs", plan: RollingPlan{Template: TemplateLive}, held: held(nil),
			image: "web:v1", cause: "aaaaaaa v1"},
		{name: "a refused template and nothing runs: nothing created", plan: RollingPlan{Template: TemplateLive},
			held: held(func(h *RollingHeld) { h.Live = nil })},
		{name: "a rollback: its template, stamped, the live cause kept", plan: RollingPlan{Template: TemplateRollback, Rollback: rollback},
			held: held(nil), image: "web:v0", stamp: true, cause: "aaaaaaa v1"},
		{name: "nothing runs: created, always", plan: git2, held: held(func(h *RollingHeld) { h.Live = nil }), image: "web:v2", stamp: true,
			cause: "bbbbbbb v2", check: func(w *RollingWrite) string {
				if !w.Always || w.Replicas != nil || w.Strategy != nil {
					return "want Always, Git's count and strategy"
				}
				return ""
			}},
		{name: "switching from canary: a surge, the serving label kept, at the autoscaler's count, quiet in once mode",
			plan: git2, held: held(func(h *RollingHeld) {
				h.Switching, h.Autoscaled, h.Count, h.Once = true, true, 7, true
				h.Primary, h.Live = false, stable
			}), image: "web:v2", stamp: true, cause: "bbbbbbb v2",
			meta: []string{contract.AnnotationStrategy, contract.AnnotationService, contract.AnnotationSteps, contract.AnnotationStep},
			check: func(w *RollingWrite) string {
				switch {
				case w.Strategy == nil || w.Strategy.RollingUpdate == nil || w.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0:
					return "want a surge strategy, no pod unavailable"
				case w.Replicas == nil || *w.Replicas != 7:
					return "want the autoscaler's 7"
				case w.Template.Labels[contract.LabelServing] != "true":
					return "want the serving label kept"
				case !w.QuietStatus || w.Always:
					return "want QuietStatus, not Always"
				}
				return ""
			}},
	}
	for _, tt := range tests {
		actions := PlanRollingApply(tt.plan, tt.held)
		if tt.image == "" {
			if len(actions) != 0 {
				t.Errorf("%s: %d actions, want none", tt.name, len(actions))
			}
			continue
		}
		if tt.meta != nil {
			if len(actions) == 0 || actions[0].Kind != ActionMetadata || actions[0].Deployment != "" ||
				!slices.Equal(actions[0].Drop, tt.meta) && len(actions[0].Drop)+len(tt.meta) > 0 {
				t.Fatalf("%s: actions %+v, want an ActionMetadata of <name> dropping %v first", tt.name, actions, tt.meta)
			}
			actions = actions[1:]
		}
		if len(actions) != 1 || actions[0].Kind != ActionApply || actions[0].Apply == nil || actions[0].Role != RolePrimary {
			t.Fatalf("%s: actions %+v, want one ActionApply of the primary", tt.name, actions)
		}
		w := actions[0].Apply
		if got := w.Template.Spec.Containers[0].Image; got != tt.image || w.Stamp != tt.stamp || w.ChangeCause != tt.cause {
			t.Errorf("%s: template %s (stamp %v), cause %q; want %s (stamp %v), %q", tt.name, got, w.Stamp, w.ChangeCause,
				tt.image, tt.stamp, tt.cause)
		}
		if tt.check != nil {
			if msg := tt.check(w); msg != "" {
				t.Errorf("%s: %s; got %+v", tt.name, msg, w)
			}
		}
	}
	if live.Spec.Template.Labels != nil || len(stable.Spec.Template.Labels) != 1 {
		t.Error("keeping a label changed the live Deployment's template")
	}
}

// TestPlanRollingFollow: a rolling workload followed from what it records
// writes its status, and a rollback's template labelled with the
// workload and stamped; after `kubectl rollout undo`, the recorded
// revision's template from its ReplicaSet, unless hand edits are kept,
// the ReplicaSet runs another template or the revision was Degraded; a
// command's write carries the pause and clears the command.
func TestPlanRollingFollow(t *testing.T) {
	rollback := &Rollback{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:v0"}}}}}
	status := PlanRollingFollow(RollingPlan{Template: TemplateGit}, "web", Followed{})
	if len(status) != 1 || status[0].Kind != ActionWrite || !status[0].Status || status[0].Template != nil {
		t.Errorf("following: %+v, want one write of the status alone", status)
	}
	back := PlanRollingFollow(RollingPlan{Template: TemplateRollback, Rollback: rollback}, "web", Followed{})
	if len(back) != 1 || back[0].Template == nil {
		t.Fatalf("rolling back: %+v, want one write with a template", back)
	}
	if tpl := back[0].Template; tpl.Labels[contract.LabelWorkload] != "web" || tpl.Annotations[contract.AnnotationTemplateHash] == "" ||
		tpl.Spec.Containers[0].Image != "web:v0" {
		t.Errorf("rollback template %+v, want web:v0 labelled with the workload and stamped", tpl)
	}
	if rollback.Template.Labels != nil {
		t.Error("the plan changed the rollback's template")
	}
	// `kubectl rollout undo` put revision 1's template (v1) back over
	// revision 2's (v2), recorded Healthy on v2's ReplicaSet.
	v1 := podtemplate.Stamp(corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{contract.LabelWorkload: "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:v1"}}}})
	v2 := podtemplate.Stamp(corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{contract.LabelWorkload: "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "web:v2"}}}})
	h2 := podtemplate.LiveHash(v2)
	undone := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: v1}}
	rs2 := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-h2"}, Spec: appsv1.ReplicaSetSpec{Template: *v2.DeepCopy()}}
	rs2.Spec.Template.Labels[LabelPodTemplateHash] = "h2"
	other := rs2.DeepCopy()
	other.Spec.Template.Spec.Containers[0].Image = "web:v3"
	recorded := Status{Revision: 2, Hash: h2, Phase: PhaseHealthy}
	plan := RollingPlan{Template: TemplateGit, Status: recorded}
	for _, tt := range []struct {
		name string
		f    Followed
		want string // the image written back, "" for the status alone
	}{
		{"undone: v2 written back from its ReplicaSet", Followed{Live: undone, Recorded: recorded, Rewound: rs2}, "web:v2"},
		{"undone, hand edits kept: left as it runs", Followed{Live: undone, Recorded: recorded, Rewound: rs2, KeepsHandEdits: true}, ""},
		{"undone, the ReplicaSet runs another template: left", Followed{Live: undone, Recorded: recorded, Rewound: other}, ""},
		{"undone from a Degraded revision: left", Followed{Live: undone, Recorded: Status{Revision: 2, Hash: h2, Phase: PhaseDegraded}, Rewound: rs2}, ""},
		{"not undone: the status alone", Followed{Live: undone, Recorded: recorded}, ""},
	} {
		got := PlanRollingFollow(plan, "web", tt.f)
		switch {
		case len(got) != 1 || got[0].Kind != ActionWrite || !got[0].Status:
			t.Errorf("%s: %+v, want one write of the status", tt.name, got)
		case tt.want == "" && got[0].Template != nil:
			t.Errorf("%s: writes template %s, want the status alone", tt.name, got[0].Template.Spec.Containers[0].Image)
		case tt.want != "" && (got[0].Template == nil || got[0].Template.Spec.Containers[0].Image != tt.want):
			t.Errorf("%s: template %+v, want %s", tt.name, got[0].Template, tt.want)
		case tt.want != "" && (got[0].Template.Labels[LabelPodTemplateHash] != "" || podtemplate.LiveHash(*got[0].Template) != h2):
			t.Errorf("%s: template labels %v, want v2's as stamped, without %s", tt.name, got[0].Template.Labels, LabelPodTemplateHash)
		}
	}
	if rs2.Spec.Template.Labels[LabelPodTemplateHash] != "h2" {
		t.Error("the plan changed the ReplicaSet's template")
	}
	pause := PlanRollingCommand(Commanded{Name: "pause", Held: Held{Paused: true}})
	if len(pause) != 1 || pause[0].Paused == nil || !*pause[0].Paused || !pause[0].ClearCommand || !pause[0].Status {
		t.Errorf("pause: %+v, want one write of the status, paused, clearing the command", pause)
	}
}
