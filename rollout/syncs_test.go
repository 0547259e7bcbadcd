package rollout

import (
	"context"
	"log/slog"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
)

// TestQueueSyncForgetsEarlierIntents: a replica that comes to own a sync
// again holds no intent of its workloads from the time it owned it
// before, and keeps those of other syncs.
func TestQueueSyncForgetsEarlierIntents(t *testing.T) {
	ctx := context.Background()
	c := New(Config{Client: fake.NewClientset(), Log: slog.New(slog.DiscardHandler),
		Owns: func(string) (func(), bool) { return func() {}, true }})
	if err := c.handOff(ctx, "team-a", "c1", "one", []*appsv1.Deployment{deploymentOf("team-a", "web")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.handOff(ctx, "team-b", "c2", "two", []*appsv1.Deployment{deploymentOf("team-b", "api")}, nil); err != nil {
		t.Fatal(err)
	}
	c.QueueSync("team-a")
	if _, ok := c.intents.get("shop/web"); ok {
		t.Error("team-a's workload web keeps the intent of commit c1 after team-a was gained again")
	}
	if _, ok := c.intents.get("shop/api"); !ok {
		t.Error("team-b's workload api lost its intent when team-a was gained")
	}
}

// deploymentOf is Git's Deployment name of sync syncName.
func deploymentOf(syncName, name string) *appsv1.Deployment {
	d := gitDeployment("v1", nil)
	d.Name, d.Labels[contract.LabelSync] = name, syncName
	return d
}

// TestSyncSinksForgetOnlyTheirOwn: each sync hands its Deployments over
// through its own sink; a sync whose commit has no Deployment left
// forgets its own workloads, not another sync's, and a workload is
// reconciled only while Owns says its sync is this replica's.
func TestSyncSinksForgetOnlyTheirOwn(t *testing.T) {
	ctx := context.Background()
	owned := map[string]bool{"team-a": true}
	held := 0
	c := New(Config{Client: fake.NewClientset(), Log: slog.New(slog.DiscardHandler), Once: false,
		Owns: func(name string) (func(), bool) {
			if !owned[name] {
				return nil, false
			}
			held++
			return func() { held-- }, true
		}})
	a, b := c.ForSync("team-a"), c.ForSync("team-b")
	if err := a.handOff(ctx, a.sync, "c1", "one", []*appsv1.Deployment{deploymentOf("team-a", "web")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.handOff(ctx, b.sync, "c2", "two", []*appsv1.Deployment{deploymentOf("team-b", "api")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.handOff(ctx, a.sync, "c3", "three", nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.intents.get("shop/web"); ok {
		t.Error("team-a's workload web is still held after it left team-a's Git")
	}
	if _, ok := c.intents.get("shop/api"); !ok {
		t.Error("team-b's workload api was forgotten by team-a's handoff")
	}
	if got := c.syncOf("shop/api"); got != "team-b" {
		t.Errorf("syncOf(shop/api) = %q, want team-b", got)
	}
	if _, ok := c.own("shop/api"); ok {
		t.Error("a workload of team-b, which this replica does not own, was owned")
	}
	owned["team-b"] = true
	release, ok := c.own("shop/api")
	if !ok || held != 1 {
		t.Fatalf("own(shop/api) = %v with %d holds, want owned and held once", ok, held)
	}
	release()
	if held != 0 {
		t.Errorf("%d holds after release, want 0", held)
	}
	if got := c.writer("shop/api"); got != c.client {
		t.Error("without ClientFor, a workload is not written with the controller's own client")
	}
	teamB := fake.NewClientset()
	c.clientFor = func(name string) kubernetes.Interface {
		if name == "team-b" {
			return teamB
		}
		return nil
	}
	if c.writer("shop/api") != teamB || c.writerOf(deploymentOf("team-b", "api-canary")) != teamB {
		t.Error("a workload of team-b is not written with team-b's client")
	}
	if c.writerOf(deploymentOf("root", "site")) != c.client {
		t.Error("a sync ClientFor gives no client for is not written with the controller's own")
	}
}

// TestStatusWritesAreTheDaemons: a patch of a team's Deployment that
// carries its status alone (plimsoll.dev/ annotations) goes to the status
// subresource with the controller's own client, which Kubernetes' admin
// and edit roles would refuse the team's identity; a write of its spec
// goes out as the team's.
func TestStatusWritesAreTheDaemons(t *testing.T) {
	ctx := context.Background()
	live := deploymentOf("team-b", "api")
	own, teamB := fake.NewClientset(live.DeepCopy()), fake.NewClientset(live.DeepCopy())
	c := New(Config{Client: own, Log: slog.New(slog.DiscardHandler),
		ClientFor: func(name string) kubernetes.Interface {
			if name == "team-b" {
				return teamB
			}
			return nil
		}})
	status := live.DeepCopy()
	status.Annotations = map[string]string{contract.AnnotationPhase: "Progressing"}
	if _, err := c.patchDeployment(ctx, live, status, false); err != nil {
		t.Fatal(err)
	}
	spec := live.DeepCopy()
	spec.Spec.Template.Spec.Containers[0].Image = "web:v2"
	if _, err := c.patchDeployment(ctx, live, spec, true); err != nil {
		t.Fatal(err)
	}
	if got := patches(own); len(got) != 1 || got[0] != "status" {
		t.Errorf("the controller's own client patched %q, want the status write alone", got)
	}
	if got := patches(teamB); len(got) != 1 || got[0] != "" {
		t.Errorf("team-b's client patched %q, want the spec write alone", got)
	}
}

// patches lists the subresource of every patch client was sent.
func patches(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" {
			out = append(out, a.GetSubresource())
		}
	}
	return out
}
