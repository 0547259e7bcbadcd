package workload

import (
	"context"
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
)

// dep is a Deployment of workload web named name, with a role, a
// revision, a phase, and a color label when color is set.
func dep(name, role, revision, phase, color string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		Labels: map[string]string{contract.LabelWorkload: "web"},
		Annotations: map[string]string{contract.AnnotationRole: role, contract.AnnotationRevision: revision,
			contract.AnnotationPhase: phase}}}
	if color != "" {
		d.Spec.Template.Labels = map[string]string{contract.LabelColor: color}
	}
	return d
}

// TestDescribe tells the strategy and the primary Deployment from the
// roles the controller records.
func TestDescribe(t *testing.T) {
	tests := []struct {
		name            string
		deploys         []*appsv1.Deployment
		strategy, prime string
	}{
		{"rolling", []*appsv1.Deployment{dep("web", "primary", "3", "Healthy", "")}, contract.StrategyRolling, "web"},
		{"rolling before roles", []*appsv1.Deployment{dep("web", "", "3", "Healthy", "")}, contract.StrategyRolling, "web"},
		{"canary", []*appsv1.Deployment{dep("web-canary", "canary", "4", "Paused", ""), dep("web", "stable", "4", "Paused", "")}, contract.StrategyCanary, "web"},
		{"blue-green, green active", []*appsv1.Deployment{dep("web-blue", "idle", "4", "Progressing", "blue"),
			dep("web-green", "active", "4", "Progressing", "green")}, contract.StrategyBlueGreen, "web-green"},
		{"blue-green, first revision going out", []*appsv1.Deployment{dep("web-blue", "preview", "1", "Progressing", "blue")}, contract.StrategyBlueGreen, "web-blue"},
		{"back to rolling, colors not retired yet", []*appsv1.Deployment{dep("web-blue", "active", "4", "Healthy", "blue"),
			dep("web", "primary", "5", "Progressing", "")}, contract.StrategyRolling, "web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, ok := Describe("ns", "web", tt.deploys)
			if !ok || w.Strategy != tt.strategy || w.Primary != tt.prime {
				t.Errorf("got strategy %s, primary %s (ok %v); want %s, %s", w.Strategy, w.Primary, ok, tt.strategy, tt.prime)
			}
		})
	}
	if _, ok := Describe("ns", "web", nil); ok {
		t.Error("a workload without Deployments was described")
	}
}

// TestList groups the Deployments by namespace and workload label, sorts
// the workloads, and leaves out Deployments plimsoll does not manage.
func TestList(t *testing.T) {
	api, apiCanary := dep("api", "stable", "2", "Paused", ""), dep("api-canary", "canary", "2", "Paused", "")
	api.Labels[contract.LabelWorkload], apiCanary.Labels[contract.LabelWorkload] = "api", "api"
	other := dep("web", "primary", "1", "Healthy", "")
	other.Namespace = "other"
	unmanaged := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}}
	client := fake.NewClientset(dep("web-blue", "idle", "4", "Healthy", "blue"), dep("web-green", "active", "4", "Healthy", "green"),
		api, apiCanary, other, unmanaged)

	got, err := List(context.Background(), client, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range got {
		names = append(names, w.Namespace+"/"+w.Name+" "+w.Strategy+" "+w.Primary+" "+w.Phase)
	}
	want := []string{"ns/api canary api Paused", "ns/web blue-green web-green Healthy", "other/web rolling web Healthy"}
	if !slices.Equal(names, want) {
		t.Errorf("List = %q, want %q", names, want)
	}
	if !slices.Equal(got[0].Deployments, []string{"api", "api-canary"}) || !slices.Equal(got[1].Deployments, []string{"web-blue", "web-green"}) {
		t.Errorf("Deployments = %q and %q, want api, api-canary and web-blue, web-green", got[0].Deployments, got[1].Deployments)
	}

	inNs, err := List(context.Background(), client, "other")
	if err != nil || len(inNs) != 1 || inNs[0].Name != "web" {
		t.Errorf("List of namespace other = %+v, %v; want web alone", inNs, err)
	}
}

// TestGet reads one workload and tells a missing one by ErrNotFound.
func TestGet(t *testing.T) {
	client := fake.NewClientset(dep("web", "primary", "3", "Healthy", ""))
	w, err := Get(context.Background(), client, "ns", "web")
	if err != nil || w.Primary != "web" || w.Revision != 3 {
		t.Errorf("Get web = %+v, %v; want primary web at revision 3", w, err)
	}
	if _, err := Get(context.Background(), client, "ns", "api"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get api: error %v, want ErrNotFound", err)
	}
}
