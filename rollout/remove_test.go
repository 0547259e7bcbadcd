package rollout

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
)

// TestRetireLeaving: a handoff that names blue-green workloads leaving
// Git deletes the colors of those its sync's prune may take, and keeps
// every color of one whose active color the prune keeps (prune disabled,
// another sync's label), since a blue-green workload has no namesake to
// keep and retiring its colors would take it down.
func TestRetireLeaving(t *testing.T) {
	color := func(workload, suffix, role, sync string, annotations map[string]string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: workload + suffix, Namespace: "team",
			Labels:      map[string]string{contract.LabelWorkload: workload, contract.LabelSync: sync},
			Annotations: map[string]string{contract.AnnotationRole: role}}}
		for k, v := range annotations {
			d.Annotations[k] = v
		}
		return d
	}
	disabled := map[string]string{contract.AnnotationPrune: contract.PruneDisabled}
	client := fake.NewClientset(
		color("shop", contract.SuffixBlue, contract.RoleIdle, "apps", nil),
		color("shop", contract.SuffixGreen, contract.RoleActive, "apps", nil),
		color("kept", contract.SuffixBlue, contract.RoleActive, "apps", disabled),
		color("kept", contract.SuffixGreen, contract.RoleIdle, "apps", nil),
		color("moved", contract.SuffixBlue, contract.RoleActive, "infra", nil),
		color("moved", contract.SuffixGreen, contract.RoleIdle, "infra", nil),
	)
	c := New(Config{Client: client, SyncName: "apps"})
	leaving := []types.NamespacedName{{Namespace: "team", Name: "shop"}, {Namespace: "team", Name: "kept"}, {Namespace: "team", Name: "moved"}}
	if err := c.handOff(context.Background(), "", "c0ffee1", "workloads leave", nil, leaving); err != nil {
		t.Fatalf("handOff: %v", err)
	}
	list, err := client.AppsV1().Deployments("team").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, d := range list.Items {
		left = append(left, d.Name)
	}
	slices.Sort(left)
	if want := []string{"kept-blue", "kept-green", "moved-blue", "moved-green"}; !slices.Equal(left, want) {
		t.Errorf("Deployments left %v, want %v", left, want)
	}
	if !c.intents.isLeaving("team/shop") || c.intents.isLeaving("team/kept") {
		t.Errorf("leaving: shop %v, kept %v; want only shop marked", c.intents.isLeaving("team/shop"), c.intents.isLeaving("team/kept"))
	}
}

// TestRemovalWritesAsTheSync: a workload leaving Git has no intent any
// more, and a one-shot sync no caches, yet its colors are deleted with
// its sync's identity (Config.ClientFor), told by their plimsoll.dev/sync
// label, never with the controller's own.
func TestRemovalWritesAsTheSync(t *testing.T) {
	color := func(suffix, role string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop" + suffix, Namespace: "team",
			Labels:      map[string]string{contract.LabelWorkload: "shop", contract.LabelSync: "apps"},
			Annotations: map[string]string{contract.AnnotationRole: role}}}
	}
	objs := []runtime.Object{color(contract.SuffixBlue, contract.RoleIdle), color(contract.SuffixGreen, contract.RoleActive)}
	own, apps := fake.NewClientset(objs...), fake.NewClientset(objs...)
	c := New(Config{Client: own, SyncName: "apps", ClientFor: func(name string) kubernetes.Interface {
		if name == "apps" {
			return apps
		}
		return nil
	}})
	leaving := []types.NamespacedName{{Namespace: "team", Name: "shop"}}
	if err := c.handOff(context.Background(), "", "c0ffee1", "shop leaves", nil, leaving); err != nil {
		t.Fatalf("handOff: %v", err)
	}
	deletes := func(client *fake.Clientset) (names []string) {
		for _, a := range client.Actions() {
			if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "deployments" {
				names = append(names, d.GetName())
			}
		}
		slices.Sort(names)
		return names
	}
	if got, want := deletes(apps), []string{"shop-blue", "shop-green"}; !slices.Equal(got, want) {
		t.Errorf("the sync's identity deleted %v, want %v", got, want)
	}
	if got := deletes(own); len(got) > 0 {
		t.Errorf("the controller's own identity deleted %v, want nothing", got)
	}
}
