//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// regainCount is how many syncs TestRegainedSyncRunsGitAgain declares.
// With the root sync that declares them, 6 on 2 replicas: the bound of
// ceil(1.25 x 6 / 2) = 4 a replica leaves at least 2 to the second, one
// of them at least of these.
const regainCount = 5

// TestRegainedSyncRunsGitAgain moves syncs away from a replica and back:
// replica A runs every sync, each a rolling Deployment web in a namespace
// of its own; replica B starts and takes some; B is killed, and A gains
// them again while their head is still the commit A handed over before.
// A then runs Git's Deployment again, as at start: a template changed by
// hand on one of them is put back. A replica that kept what it knew of the
// sync from its first ownership would not hand that commit over again,
// and would leave the change in place until the next commit.
func TestRegainedSyncRunsGitAgain(t *testing.T) {
	parallel(t)
	p := newPlatform(t)
	apps := testgit.New(t)
	files := map[string]string{}
	declarations := map[string]string{}
	var syncs, teams []string
	for i := range regainCount {
		name := fmt.Sprintf("g%d", i)
		ns := p.team(t, name)
		syncs, teams = append(syncs, p.sync(name)), append(teams, ns)
		for file, text := range example(t, "rolling", "replicas: 4", "replicas: 1") {
			files[name+"/"+file] = text
		}
		declarations[name+".yaml"] = p.declaration(name, fmt.Sprintf("repository: %s\npath: %s\ninterval: 2s\nnamespace: %s\nserviceAccount: %s/deployer\n",
			apps.URL(), name, ns, ns))
	}
	head := apps.Commit("five syncs", files)
	p.root.Commit("five syncs", declarations)

	t.Log("1. replica A runs every sync")
	a := startReplicas(t, p, 1)
	for i := range syncs {
		p.waitForSynced(t, fmt.Sprintf("g%d", i), head)
		waitForDeployment(t, teams[i], "web", "revision 1 Healthy", phaseIs(1, "Healthy"))
	}

	t.Log("2. replica B starts and takes some of them")
	b := startReplicas(t, p, 1)
	var moved []string
	waitFor(t, "replica B to hold a sync", func(context.Context) (bool, error) {
		moved = moved[:0]
		for s, holder := range b.holders(t, syncs) {
			if holder == b.ids[0] {
				moved = append(moved, s)
			}
		}
		return len(moved) > 0, nil
	})
	slices.Sort(moved)

	t.Logf("3. replica B is killed; A gains %v again", moved)
	if err := b.daemons[0].Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-b.daemons[0].Exited()
	waitFor(t, "replica A to hold every sync again", func(context.Context) (bool, error) {
		holders := a.holders(t, syncs)
		for _, s := range syncs {
			if holders[s] != a.ids[0] {
				return false, nil
			}
		}
		return true, nil
	})

	ns := teams[slices.Index(syncs, moved[0])]
	t.Logf("4. the template of %s/web changed by hand is put back", ns)
	kubectl(t, "set", "image", "deployment/web", "web=registry.example/web:hotfix", "-n", ns)
	d := waitForDeployment(t, ns, "web", "Git's image back", func(d *appsv1.Deployment) bool {
		return d.Spec.Template.Spec.Containers[0].Image == "registry.example/web:v1"
	})
	if rev := d.Annotations["plimsoll.dev/revision"]; rev != "1" {
		t.Errorf("revision %s after the restore, want 1: the same revision", rev)
	}
}
