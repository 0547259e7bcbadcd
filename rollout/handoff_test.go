package rollout

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	gosync "sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
	psync "plimsoll.dev/plimsoll/sync"
	"plimsoll.dev/plimsoll/sync/apply"
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
		err := c.checkDeployment(context.Background(), "", tt.git, []string{tt.git.Name})
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

// ofSync is Git Deployment name of 4 replicas at image version, as sync
// hands it over (labelled plimsoll.dev/sync=<sync>).
func ofSync(name, version, sync string) *appsv1.Deployment {
	d := gitDeployment(version, nil)
	d.Name, d.Labels[contract.LabelSync] = name, sync
	return d
}

// TestHandOffOneSyncPerWorkload: a workload that one sync handed over
// is not taken by another's handoff, which is refused whole with an
// *apply.OwnerError naming both syncs; once the first sync's Deployment
// leaves Git, the second may take it.
func TestHandOffOneSyncPerWorkload(t *testing.T) {
	ctx := context.Background()
	c := New(Config{Client: fake.NewClientset(), Log: slog.New(slog.DiscardHandler)})
	a, b := c.ForSync("team-a"), c.ForSync("team-b")
	if err := a.handOff(ctx, a.sync, "aaaaaaa", "team a", []*appsv1.Deployment{ofSync("web", "v1", "team-a")}, nil); err != nil {
		t.Fatalf("team a's handoff: %v", err)
	}
	err := b.handOff(ctx, b.sync, "bbbbbbb", "team b", []*appsv1.Deployment{ofSync("web", "v2", "team-b"), ofSync("cart", "v2", "team-b")}, nil)
	var owned *apply.OwnerError
	want := `Deployment shop/web belongs to sync "team-a"; sync "team-b" does not take it over`
	if !errors.As(err, &owned) || err.Error() != want {
		t.Errorf("team b's handoff: %v, want the *apply.OwnerError %q", err, want)
	}
	if in, _ := c.intents.get("shop/web"); in.holder() != "team-a" || in.commit != "aaaaaaa" {
		t.Errorf("web's intent is %s's of %s, want team-a's of aaaaaaa", in.holder(), in.commit)
	}
	if _, ok := c.intents.get("shop/cart"); ok {
		t.Error("the refused handoff took cart")
	}

	if err := a.handOff(ctx, a.sync, "ccccccc", "web leaves", nil, nil); err != nil {
		t.Fatalf("team a's handoff without web: %v", err)
	}
	if err := b.handOff(ctx, b.sync, "ddddddd", "team b", []*appsv1.Deployment{ofSync("web", "v2", "team-b")}, nil); err != nil {
		t.Errorf("team b's handoff once team a let web go: %v", err)
	}
}

// TestHandOffRace: two syncs hand one workload over at the same moment;
// one holds it, the other is refused naming it.
func TestHandOffRace(t *testing.T) {
	ctx := context.Background()
	syncs := []string{"team-a", "team-b"}
	for round := range 50 {
		c := New(Config{Client: fake.NewClientset(), Log: slog.New(slog.DiscardHandler)})
		errs := make([]error, len(syncs))
		var wg gosync.WaitGroup
		for i, name := range syncs {
			sink, d := c.ForSync(name), ofSync("web", "v1", name)
			wg.Go(func() { errs[i] = sink.handOff(ctx, sink.sync, "c0ffee1", name, []*appsv1.Deployment{d}, nil) })
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: the handoffs ended with %v and %v, want one refused", round, errs[0], errs[1])
		}
		winner, loser := syncs[0], syncs[1]
		if errs[0] != nil {
			winner, loser = loser, winner
		}
		var owned *apply.OwnerError
		if err := errors.Join(errs...); !errors.As(err, &owned) || owned.Owner != winner || owned.Sync != loser {
			t.Errorf("round %d: %s refused with %v, want an *apply.OwnerError naming %s", round, loser, err, winner)
		}
		if in, _ := c.intents.get("shop/web"); in.holder() != winner {
			t.Errorf("round %d: web's intent is %s's, want %s's", round, in.holder(), winner)
		}
	}
}

// TestReconcileLeavesAnotherSyncsWorkload: a workload handed over whose
// Deployment another sync's replica created meanwhile (its create came
// first) is not written: its reconcile drops the hand-over, the handoff
// waiting for it hears an *apply.OwnerError, and the next handoff of it
// is refused at once.
func TestReconcileLeavesAnotherSyncsWorkload(t *testing.T) {
	k := newCluster(t)
	if err := k.c.handOff(k.ctx, "", "c0ffee1", "ours", []*appsv1.Deployment{ofSync("api", "v1", "default")}, nil); err != nil {
		t.Fatalf("handoff: %v", err)
	}
	theirs := ofSync("api", "v2", "team-a")
	theirs.Labels[contract.LabelWorkload] = "api"
	if _, err := k.client.AppsV1().Deployments("shop").Create(k.ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v, _ := k.c.viewOf("shop")
	for _, err := v.deploys.Deployments("shop").Get("api"); err != nil; _, err = v.deploys.Deployments("shop").Get("api") {
		time.Sleep(10 * time.Millisecond)
	}
	waiting := k.c.intents.wait("shop/api")
	requests(k.client)
	k.c.queue.Add("shop/api")
	k.c.processNext(k.ctx)
	if r := requests(k.client); len(r) > 0 {
		t.Errorf("the reconcile wrote team a's workload: %v", r)
	}
	want := `Deployment shop/api belongs to sync "team-a"; sync "default" does not take it over`
	select {
	case err := <-waiting:
		var owned *apply.OwnerError
		if !errors.As(err, &owned) || err.Error() != want {
			t.Errorf("the waiting handoff heard %v, want %q", err, want)
		}
	default:
		t.Error("the waiting handoff heard nothing")
	}
	if _, ok := k.c.intents.get("shop/api"); ok {
		t.Error("the hand-over of team a's workload is kept")
	}
	err := k.c.handOff(k.ctx, "", "decade2", "ours again", []*appsv1.Deployment{ofSync("api", "v3", "default")}, nil)
	if err == nil || err.Error() != want {
		t.Errorf("the next handoff: %v, want %q", err, want)
	}
	if img := k.deployment("api").Spec.Template.Spec.Containers[0].Image; img != "registry.example/api:v2" {
		t.Errorf("team a's Deployment runs %s, want registry.example/api:v2", img)
	}
}

// TestCheckRecordsNothing: the check of a commit records no intent and
// queues nothing, neither for the Deployments it passes nor for those it
// refuses, and keeps a refusal an earlier commit left; once the sync has
// refused the commit, only the workload the check itself refused is
// recorded (to be marked Degraded) and queued, and the hand-over takes
// nothing.
func TestCheckRecordsNothing(t *testing.T) {
	ctx := context.Background()
	c := New(Config{Client: fake.NewClientset(), SyncName: "default", Log: slog.New(slog.DiscardHandler)})
	close(c.started) // a running controller: refusals are recorded
	earlier := errors.New("an earlier commit's refusal")
	c.intents.refuse("shop/old", ofSync("old", "v1", "default"), earlier)
	bad := ofSync("api", "v2", "default")
	bad.Annotations = map[string]string{contract.AnnotationStrategy: contract.StrategyCanary, contract.AnnotationService: "api",
		contract.AnnotationSteps: "banana"}
	h, err := c.Check(ctx, psync.Handoff{Commit: "c0ffee1", Subject: "two good, one bad",
		Deployments: []*appsv1.Deployment{ofSync("web", "v2", "default"), bad, ofSync("old", "v2", "default")}})
	var refused *psync.DeploymentError
	if !errors.As(err, &refused) || refused.Name != "api" || !strings.Contains(err.Error(), "banana") {
		t.Fatalf("Check: %v, want Deployment api refused for its steps", err)
	}
	if keys := c.intents.keys(); len(keys) != 1 || keys[0] != "shop/old" {
		t.Errorf("intents after the check %v, want only shop/old's earlier refusal", keys)
	}
	if in, _ := c.intents.get("shop/old"); in.refused != earlier {
		t.Errorf("shop/old's refusal after the check %v, want the earlier one kept", in.refused)
	}
	if n := c.queue.Len(); n != 0 {
		t.Errorf("%d workloads queued by the check, want none", n)
	}

	h.Refuse()
	if in, _ := c.intents.get("shop/api"); in.refused == nil || in.git != nil {
		t.Errorf("shop/api after the refusal: %+v, want its refusal alone", in)
	}
	if _, ok := c.intents.get("shop/web"); ok {
		t.Error("shop/web, which passed the check of a refused commit, has an intent")
	}
	if key, _ := c.queue.Get(); c.queue.Len() != 0 || key != "shop/api" {
		t.Errorf("queued after the refusal: %q and %d more, want shop/api alone", key, c.queue.Len())
	}
	if err := h.Take(ctx, nil); err == nil {
		t.Error("the hand-over of a refused commit was taken")
	}
	if _, ok := c.intents.get("shop/web"); ok {
		t.Error("the take of a refused commit recorded shop/web")
	}
}
