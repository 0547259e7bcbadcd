package sync

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/source"
)

// countingSink is a rollout controller that counts what a sync asks of
// it, and refuses the Deployments named in refuse.
type countingSink struct {
	checks, takes int
	got           Handoff
	refuse        string
}

func (s *countingSink) Check(_ context.Context, h Handoff) (Checked, error) {
	s.checks++
	s.got = h
	var err error
	for _, d := range h.Deployments {
		if d.Name == s.refuse {
			err = errors.Join(err, &DeploymentError{Namespace: d.Namespace, Name: d.Name, Err: errors.New("bad steps")})
		}
	}
	return (*countingHandover)(s), err
}

type countingHandover countingSink

func (h *countingHandover) Steered(_, _ *unstructured.Unstructured) {}
func (h *countingHandover) Refuse()                                 {}
func (h *countingHandover) Take(context.Context, []types.NamespacedName) error {
	h.takes++
	return nil
}

// TestOneCallPerCommit: a sync asks the rollout controller once per
// commit, with every Deployment of it labelled as the sync's and the
// commit's Services by namespace; a refusal names the file and document
// of the Deployment; the checked commit is taken once per commit, not again
// while the same commit is synced.
func TestOneCallPerCommit(t *testing.T) {
	ctx := context.Background()
	sink := &countingSink{refuse: "api"}
	s := New(Config{Name: "root", Deployments: sink})
	deploy := func(name string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + ", namespace: shop}\n"
	}
	objs := objectsOf(t, deploy("web"), deploy("api"), "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n")
	commit := source.Commit{Hash: "c0ffee1c0ffee1", Subject: "three objects"}

	h, err := s.checkDeployments(ctx, objs, commit)
	if sink.checks != 1 {
		t.Fatalf("%d checks of one commit, want 1", sink.checks)
	}
	if err == nil || !strings.Contains(err.Error(), "deploy.yaml") || !strings.Contains(err.Error(), "bad steps") {
		t.Errorf("check error %v, want the refusal of deploy.yaml's Deployment", err)
	}
	var names []string
	for _, d := range sink.got.Deployments {
		names = append(names, d.Name+"@"+d.Labels["plimsoll.dev/sync"])
	}
	if want := []string{"web@root", "api@root"}; !slices.Equal(names, want) || sink.got.Commit != commit.Hash {
		t.Errorf("handed %v of %s, want %v of %s", names, sink.got.Commit, want, commit.Hash)
	}
	if got := sink.got.Services["shop"]; !slices.Equal(got, []string{"web"}) {
		t.Errorf("the commit's Services in shop %v, want [web]", got)
	}

	plan := &apply.Plan{}
	for _, obj := range objs {
		plan.Items = append(plan.Items, &apply.Item{Object: obj, Hash: "h"})
	}
	for range 2 {
		if _, err := s.handOff(ctx, h, plan, inventory.Inventory{}, commit); err != nil {
			t.Fatal(err)
		}
	}
	if sink.takes != 1 || sink.checks != 1 {
		t.Errorf("two syncs of one commit: %d takes and %d checks, want 1 and 1", sink.takes, sink.checks)
	}
	if _, err := s.handOff(ctx, h, plan, inventory.Inventory{}, source.Commit{Hash: "decade2"}); err != nil || sink.takes != 2 {
		t.Errorf("a new commit: %d takes (%v), want 2", sink.takes, err)
	}
}
