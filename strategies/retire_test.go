package strategies

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// annotated is Deployment name with annotations, given as key, value,
// key, value...
func annotated(name string, annotations ...string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
	for i := 0; i+1 < len(annotations); i += 2 {
		d.Annotations[annotations[i]] = annotations[i+1]
	}
	return d
}

// TestPlanRetirement: what a switch of strategy retires, and when, for
// each target: nothing before the new strategy carries the traffic; then
// the previous strategy's key out of every other Service its Deployments
// steered, the canary pods out of traffic for rolling, and each
// Deployment deleted once its Service's endpoints no longer need its
// pods.
func TestPlanRetirement(t *testing.T) {
	blue := annotated("web-blue", contract.AnnotationActiveService, "web", contract.AnnotationPreviewService, "web-preview")
	green := annotated("web-green", contract.AnnotationActiveService, "web", contract.AnnotationPreviewService, "web-preview")
	canary := annotated("web-canary", contract.AnnotationService, "web")
	colorSelectors := map[string]map[string]string{"web": {"app": "web", contract.LabelColor: "green"},
		"web-preview": {"app": "web", contract.LabelColor: "green"}}
	// The ready endpoints of web: 4 of web's pods beside 4 of web-green's
	// (web-blue's are gone): web-blue and web-green may go at 4.
	ready := map[string][]string{"web": {"web-7d9c5-a", "web-7d9c5-b", "web-7d9c5-c", "web-7d9c5-d",
		"web-green-5f6b7-a", "web-green-5f6b7-b", "web-green-5f6b7-c", "web-green-5f6b7-d"}}
	tests := []struct {
		name string
		r    Retiring
		want []string
		done bool
	}{
		{name: "to rolling, not Healthy yet: nothing",
			r: Retiring{Target: contract.StrategyRolling, Left: []*appsv1.Deployment{blue, green}, Selectors: colorSelectors, Ready: ready, Keep: 4}},
		{name: "to rolling, primary but still Progressing: nothing",
			r: Retiring{Target: contract.StrategyRolling, Primary: true, Phase: PhaseProgressing, Left: []*appsv1.Deployment{blue, green},
				Selectors: colorSelectors, Ready: ready, Keep: 4}},
		{name: "to rolling, Healthy on a Deployment that is not the primary yet: nothing",
			r: Retiring{Target: contract.StrategyRolling, Phase: PhaseHealthy, Left: []*appsv1.Deployment{blue, green},
				Selectors: colorSelectors, Ready: ready, Keep: 4}},
		{name: "to rolling, Healthy: both Services lose the color, then the colors go",
			r: Retiring{Target: contract.StrategyRolling, Primary: true, Phase: PhaseHealthy, Left: []*appsv1.Deployment{blue, green}, Selectors: colorSelectors,
				Ready: ready, Keep: 4},
			want: []string{"select web -plimsoll.dev/color", "select web-preview -plimsoll.dev/color", "delete -blue", "delete -green"}, done: true},
		{name: "to rolling, Healthy, too few of web's pods ready: the colors wait",
			r: Retiring{Target: contract.StrategyRolling, Primary: true, Phase: PhaseHealthy, Left: []*appsv1.Deployment{green},
				Selectors: map[string]map[string]string{"web": {"app": "web"}}, Ready: ready, Keep: 5},
			want: []string{}},
		{name: "to rolling from canary: the serving key out, the canary pods out of traffic, then the canary goes",
			r: Retiring{Target: contract.StrategyRolling, Primary: true, Phase: PhaseHealthy, Left: []*appsv1.Deployment{canary},
				Selectors: map[string]map[string]string{"web": {"app": "web", contract.LabelServing: "true"}},
				Ready:     map[string][]string{"web": {"web-7d9c5-a"}}, Keep: 1, Serving: []string{"web-canary-6c8d9-a"}},
			want: []string{"select web -plimsoll.dev/serving", "unlabel pod web-canary-6c8d9-a", "delete -canary"}, done: true},
		{name: "to canary, its Service not moved over yet: nothing",
			r: Retiring{Target: contract.StrategyCanary, Carrier: "web", CarrierSelector: map[string]string{"app": "web", contract.LabelColor: "green"},
				Left: []*appsv1.Deployment{blue, green}, Selectors: colorSelectors, Ready: ready, Keep: 4}},
		{name: "to canary, moved over: the preview loses the color, the carrier is the canary's own, the colors go",
			r: Retiring{Target: contract.StrategyCanary, Carrier: "web", CarrierSelector: map[string]string{"app": "web", contract.LabelServing: "true"},
				Left: []*appsv1.Deployment{blue, green}, Selectors: colorSelectors, Ready: ready, Keep: 4},
			want: []string{"select web-preview -plimsoll.dev/color", "delete -blue", "delete -green"}, done: true},
		{name: "to blue-green, moved over: the canary goes, no Service left to change",
			r: Retiring{Target: contract.StrategyBlueGreen, Carrier: "web", CarrierSelector: map[string]string{"app": "web", contract.LabelColor: "blue"},
				Left: []*appsv1.Deployment{canary}, Selectors: map[string]map[string]string{"web": {"app": "web", contract.LabelColor: "blue"}},
				Ready: map[string][]string{"web": {"web-blue-5f6b7-a"}}, Keep: 1, Serving: []string{"web-canary-6c8d9-a"}},
			want: []string{"delete -canary"}, done: true},
		{name: "nothing left", r: Retiring{Target: contract.StrategyRolling, Primary: true, Phase: PhaseHealthy}},
	}
	for _, tt := range tests {
		tt.r.Workload = "web"
		actions, done := PlanRetirement(tt.r)
		var got []string
		for _, a := range actions {
			got = append(got, a.String())
		}
		if tt.want == nil {
			tt.want = []string{}
		}
		if got == nil {
			got = []string{}
		}
		if !slices.Equal(got, tt.want) || done != tt.done {
			t.Errorf("%s:\n got %q (done %v)\nwant %q (done %v)", tt.name, got, done, tt.want, tt.done)
		}
	}
}

// TestPlanRemoval: a workload leaving Git has every Service it steered
// that still holds a strategy's key lose both keys, each once, then
// every Deployment but <name> deleted.
func TestPlanRemoval(t *testing.T) {
	l := Leaving{Workload: "web", Deployments: []*appsv1.Deployment{
		annotated("web", contract.AnnotationService, "web"),
		annotated("web-blue", contract.AnnotationActiveService, "web", contract.AnnotationPreviewService, "web-preview"),
		annotated("web-green", contract.AnnotationActiveService, "web", contract.AnnotationPreviewService, "web-preview"),
		annotated("web-canary", contract.AnnotationService, "web-gone"),
	}, Selectors: map[string]map[string]string{
		"web":         {"app": "web", contract.LabelColor: "green"},
		"web-preview": {"app": "web"}, // holds no key: nothing to write
	}}
	var got []string
	for _, a := range PlanRemoval(l) {
		got = append(got, a.String())
	}
	want := []string{"select web -plimsoll.dev/color -plimsoll.dev/serving", "delete -blue", "delete -green", "delete -canary"}
	if !slices.Equal(got, want) {
		t.Errorf("removal\n got %q\nwant %q", got, want)
	}
}
