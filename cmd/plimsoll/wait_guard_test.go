package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/workload"
)

// fakeAncestor answers relate from a table by applied commit, as
// noRepository does for a commit not in it.
type fakeAncestor map[string]ancestry

func (f fakeAncestor) relate(ctx context.Context, awaited, applied string) (ancestry, error) {
	if a, ok := f[applied]; ok {
		return a, nil
	}
	return noRepository{}.relate(ctx, awaited, applied)
}

// guardCluster is sync platform's record in namespace shop, at commit
// applied with web in its inventory (and the Deployments named in
// listed), and web's Deployment.
func guardCluster(applied string, listed ...string) *fake.Clientset {
	inv := "h1 apps/v1 Deployment shop web\n"
	for _, name := range listed {
		inv += "h2 apps/v1 Deployment shop " + name + "\n"
	}
	record := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: contract.NamePrefix + "platform",
			Labels:      map[string]string{contract.LabelSync: "platform"},
			Annotations: map[string]string{contract.AnnotationSyncStatus: contract.SyncSynced, contract.AnnotationCommit: applied}},
		Data: map[string]string{inventory.DataInventory: inv},
	}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
		Labels: map[string]string{contract.LabelWorkload: "web", contract.LabelSync: "platform"}}}
	return fake.NewClientset(record, web)
}

// TestGuardLook follows the guard's verdict at one look over the record
// of sync platform, which applied commit a1 (or another) with web.
func TestGuardLook(t *testing.T) {
	for _, tc := range []struct {
		name    string
		applied string
		listed  []string
		anc     fakeAncestor
		cfg     workload.WaitConfig
		// code is the exit code of the error, 0 for none; want is in
		// its text.
		code   int
		want   []string
		follow string
	}{
		{name: "a typo, no --commit", applied: a1, cfg: workload.WaitConfig{Names: []string{"wbe"}},
			code: exitWaitNotFound, want: []string{`workload "wbe" not found in namespace shop`, "commit a1a1a1a applied by sync platform"}},
		{name: "a typo beside a workload that exists", applied: a1, cfg: workload.WaitConfig{Names: []string{"web", "wbe"}, Commit: a1[:7]},
			code: exitWaitNotFound, want: []string{`workload "wbe"`}},
		{name: "a workload the awaited commit adds, not applied yet", applied: a1, cfg: workload.WaitConfig{Names: []string{"api"}, Commit: x2}},
		{name: "a workload the record lists, being created", applied: x2, listed: []string{"api"}, cfg: workload.WaitConfig{Names: []string{"api"}, Commit: x2}},
		{name: "a typo, the commit replaced by a descendant", applied: y3, anc: fakeAncestor{y3: {rel: relContains, by: y3}},
			cfg: workload.WaitConfig{Names: []string{"wbe"}, Commit: x2}, code: exitWaitNotFound, want: []string{"commit c3c3c3c applied by sync platform (it contains b2b2b2b)"}},
		{name: "replaced by a descendant", applied: y3, anc: fakeAncestor{y3: {rel: relContains, by: y3}},
			cfg: workload.WaitConfig{Names: []string{"web"}, Commit: x2}, follow: y3},
		{name: "replaced by another history", applied: z2, anc: fakeAncestor{z2: {rel: relReplaced, by: z2}},
			cfg: workload.WaitConfig{Names: []string{"web"}, Commit: x2}, code: exitWaitReplaced, want: []string{"commit b2b2b2b was replaced by d2d2d2d"}},
		{name: "--all, replaced by a descendant", applied: y3, anc: fakeAncestor{y3: {rel: relContains, by: y3}},
			cfg: workload.WaitConfig{All: true, SyncName: "platform", Commit: x2}, follow: y3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Namespace = "shop"
			var out strings.Builder
			g := newGuard(guardCluster(tc.applied, tc.listed...), tc.cfg, tc.anc, &out)
			follow, err := g.look(context.Background())
			var exit *exitError
			switch {
			case tc.code == 0 && err != nil:
				t.Fatalf("look = %v, want the wait to go on", err)
			case tc.code != 0 && (!errors.As(err, &exit) || exit.code != tc.code):
				t.Fatalf("look = %v, want exit %d", err, tc.code)
			}
			for _, part := range tc.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("look = %q, want it to say %q", err, part)
				}
			}
			if follow != (tc.follow != "") || (follow && g.commit() != tc.follow) {
				t.Errorf("look follows %v to %s, want %s", follow, revision.Short(g.commit()), revision.Short(tc.follow))
			}
			if follow && !strings.Contains(g.replacement(), "commit b2b2b2b was replaced by its descendant c3c3c3c; c3c3c3c is Healthy") {
				t.Errorf("the last line is %q, want it to say that y3 replaced x2", g.replacement())
			}
		})
	}
}

// TestGuardOneLookForEachSync checks that the guard resolves the commit
// of a wait without --commit from the record once, and passes it on.
func TestGuardOneLookForEachSync(t *testing.T) {
	g := newGuard(guardCluster(a1), workload.WaitConfig{Namespace: "shop", Names: []string{"web"}}, noRepository{}, io.Discard)
	if _, err := g.look(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := g.commit(); got != a1 {
		t.Errorf("the commit waited for is %q, want the applied a1", got)
	}
}
