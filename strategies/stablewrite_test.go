package strategies

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"plimsoll.dev/plimsoll/contract"
)

// TestStableWrite: the planner, not the executor, works out the stable
// Deployment's template, strategy and change cause for each thing a
// canary plan makes of it.
func TestStableWrite(t *testing.T) {
	quarter := intstr.FromString("25%")
	gitStrategy := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter}}
	stable := deployment(webTemplate("web:3"))
	stable.Spec.Strategy = gitStrategy
	canaryTpl := webTemplate("web:4")
	canaryTpl.Labels[contract.LabelTrack] = contract.TrackCanary
	canaryTpl.Labels[contract.LabelServing] = "true"
	canary := deployment(canaryTpl, func(d *appsv1.Deployment) {
		d.Name = "web-canary"
		d.Annotations = map[string]string{AnnotationChangeCause: "def5678 v4"}
		d.Spec.Strategy = gitStrategy
	})
	o := CanaryObserved{Stable: stable, Canary: canary}
	base := Action{Kind: ActionWrite, Status: true, Role: RoleStable}

	t.Run("serving", func(t *testing.T) {
		a := stableWrite(base, StableServing, o)
		if a.Template == nil || a.Template.Labels[contract.LabelServing] != "true" || a.Template.Labels[contract.LabelWorkload] != "web" ||
			a.Template.Spec.Containers[0].Image != "web:3" {
			t.Errorf("template %+v, want the stable's own, labelled serving and web", a.Template)
		}
		if a.Strategy != nil || a.ChangeCause != "" {
			t.Errorf("strategy %v, change cause %q: want neither", a.Strategy, a.ChangeCause)
		}
		if stable.Spec.Template.Labels[contract.LabelServing] != "" {
			t.Error("the observed stable Deployment was changed")
		}
	})
	t.Run("promote", func(t *testing.T) {
		a := stableWrite(base, StablePromote, o)
		if a.Template == nil || a.Template.Spec.Containers[0].Image != "web:4" || a.Template.Labels[contract.LabelTrack] != "" ||
			a.Template.Labels[contract.LabelServing] != "true" || a.Template.Annotations[contract.AnnotationTemplateHash] == "" {
			t.Errorf("template %+v, want the canary's, stamped, without its track", a.Template)
		}
		if a.Strategy == nil || a.Strategy.RollingUpdate.MaxSurge.String() != "100%" || a.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
			t.Errorf("strategy %+v, want a surge", a.Strategy)
		}
		if a.ChangeCause != "def5678 v4" {
			t.Errorf("change cause %q, want the canary's", a.ChangeCause)
		}
	})
	t.Run("hand-over", func(t *testing.T) {
		a := stableWrite(base, StableHandOver, o)
		if a.Template == nil || a.Template.Labels[contract.LabelTrack] != contract.TrackCanary || a.Template.Spec.Containers[0].Image != "web:4" {
			t.Errorf("template %+v, want the canary's very template", a.Template)
		}
		if a.Strategy != nil || a.ChangeCause != "def5678 v4" {
			t.Errorf("strategy %v, change cause %q: want none, the canary's", a.Strategy, a.ChangeCause)
		}
	})
	t.Run("settle", func(t *testing.T) {
		a := stableWrite(base, StableSettle, o)
		if a.Template != nil || a.Strategy == nil || a.Strategy.RollingUpdate.MaxSurge.String() != "25%" {
			t.Errorf("template %v, strategy %+v: want Git's strategy back and the template left", a.Template, a.Strategy)
		}
	})
	t.Run("no canary", func(t *testing.T) {
		a := stableWrite(base, StableHandOver, CanaryObserved{Stable: stable})
		if a.Template != nil || a.Strategy != nil || a.ChangeCause != "" {
			t.Errorf("got %+v, want the write as it was", a)
		}
	})
}
