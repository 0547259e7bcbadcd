package rollout

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
)

// TestCheckSelector: a Git Deployment whose selector is not the one its
// workload's live Deployments run with (less a color or a track) is
// refused before anything is applied, naming the field and the way to
// change it; the same selector, or a workload with no live Deployment,
// passes.
func TestCheckSelector(t *testing.T) {
	live := func(name, workload string, selector map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team",
			Labels: map[string]string{contract.LabelWorkload: workload}},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}}}
	}
	git := func(name, strategy string, selector map[string]string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}}}
		if strategy != "" {
			d.Annotations = map[string]string{contract.AnnotationStrategy: strategy, contract.AnnotationActiveService: name,
				contract.AnnotationService: name}
		}
		return d
	}
	c := New(Config{Client: fake.NewClientset(
		live("shop-blue", "shop", map[string]string{"app": "shop", contract.LabelColor: "blue"}),
		live("shop-green", "shop", map[string]string{"app": "shop", contract.LabelColor: "green"}),
		live("api", "api", map[string]string{"app": "api"}),
		live("api-canary", "api", map[string]string{"app": "api", contract.LabelTrack: contract.TrackCanary}),
	)})
	for _, tt := range []struct {
		name    string
		git     *appsv1.Deployment
		refused bool
	}{
		{"blue-green, the same selector", git("shop", "blue-green", map[string]string{"app": "shop"}), false},
		{"blue-green, a key added", git("shop", "blue-green", map[string]string{"app": "shop", "tier": "front"}), true},
		{"canary, the same selector", git("api", "canary", map[string]string{"app": "api"}), false},
		{"canary, a value changed", git("api", "canary", map[string]string{"app": "api-v2"}), true},
		{"a new workload", git("cart", "", map[string]string{"app": "cart"}), false},
	} {
		err := c.CheckDeployment(context.Background(), tt.git, []string{tt.git.Name})
		switch {
		case !tt.refused && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.refused && err == nil:
			t.Errorf("%s: passed, want a refusal", tt.name)
		case tt.refused:
			for _, want := range []string{"field spec.selector", "immutable", "under another name"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: refusal %q does not say %q", tt.name, err, want)
				}
			}
			if !isInputError(err) {
				t.Errorf("%s: refusal %v is no input error", tt.name, err)
			}
		}
	}
}
