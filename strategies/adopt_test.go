package strategies

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

func TestPlanAdoption(t *testing.T) {
	found := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Labels: map[string]string{"app": "api"}}}
	git := func(labels map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Labels: labels}}
	}
	tests := []struct {
		name       string
		git, found *appsv1.Deployment
		want       []Action
	}{
		{name: "nothing found", git: git(nil)},
		{name: "no Git Deployment", found: found},
		{name: "the workload's label", git: git(map[string]string{"app": "api"}), found: found,
			want: []Action{{Kind: ActionAdopt, Labels: map[string]string{contract.LabelWorkload: "api"}}}},
		{name: "and the sync's", git: git(map[string]string{contract.LabelSync: "platform"}), found: found,
			want: []Action{{Kind: ActionAdopt, Labels: map[string]string{contract.LabelWorkload: "api", contract.LabelSync: "platform"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlanAdoption("api", tt.git, tt.found); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PlanAdoption = %+v, want %+v", got, tt.want)
			}
		})
	}
}
