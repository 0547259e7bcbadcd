//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	gosync "sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// raceConfigMaps is how many ConfigMaps each sync of a racing pair
// declares beside its Deployment: the tester's pairs split 42 objects.
const raceConfigMaps = 41

// raceFiles is the tree of side ("a" or "b") of a racing pair: Deployment
// web, with an image of its side, and ConfigMaps race-00... holding the
// side, all in namespace ns.
func raceFiles(side, ns string) map[string]string {
	files := map[string]string{
		"web.yaml": strings.Replace(rollingDeployment(1, "registry.example/web:"+side), "  name: web\n",
			fmt.Sprintf("  name: web\n  namespace: %s\n", ns), 1),
	}
	for i := range raceConfigMaps {
		name := fmt.Sprintf("race-%02d", i)
		files[name+".yaml"] = configMapDoc(ns, name, side)
	}
	return files
}

// deploymentLog records every ADDED and DELETED of a Deployment of a
// namespace, and every template image it was seen with.
type deploymentLog struct {
	mu      gosync.Mutex
	added   map[string]int
	deleted map[string]int
	images  map[string]map[string]bool
}

// watchDeployments starts a deploymentLog of namespace ns; it stops with
// the test.
func watchDeployments(t *testing.T, ns string) *deploymentLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := suite.client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := &deploymentLog{added: map[string]int{}, deleted: map[string]int{}, images: map[string]map[string]bool{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			l.mu.Lock()
			switch ev.Type {
			case watch.Added:
				l.added[d.Name]++
			case watch.Deleted:
				l.deleted[d.Name]++
			}
			if l.images[d.Name] == nil {
				l.images[d.Name] = map[string]bool{}
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				l.images[d.Name][c.Image] = true
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// recordInventory reads the inventory of the platform's sync name.
func recordInventory(t *testing.T, p *platform, name string) inventory.Inventory {
	t.Helper()
	cm, err := suite.client.CoreV1().ConfigMaps(p.home).Get(context.Background(), "plimsoll-sync-"+p.sync(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.ParseInventory(cm.Data[inventory.DataInventory])
	if err != nil {
		t.Fatalf("the inventory of %s: %v", name, err)
	}
	return inv
}

// TestOwnerRaceOneReplica: three pairs of syncs arrive in one commit of
// the root repository, the two syncs of each pair declaring the same
// Deployment and ConfigMaps with other contents, and one daemon runs
// them all (see ownerRace).
func TestOwnerRaceOneReplica(t *testing.T) { ownerRace(t, 1) }

// TestOwnerRaceThreeReplicas is TestOwnerRaceOneReplica with three
// replicas sharing the syncs by Leases: the two syncs of a pair may run
// in different processes, each with its own rollout controller, and the
// API server alone decides between them.
func TestOwnerRaceThreeReplicas(t *testing.T) { ownerRace(t, replicaCount) }

// ownerRace runs three racing pairs on replicas daemons: of each pair,
// one sync is Synced and owns every object (its label, its contents, one
// field manager, its inventory), and the other stays Failed, naming both
// syncs, with none of the objects in its inventory. The Deployment was
// created once and never rolled to another template: revision 1, the
// winner's image only.
func ownerRace(t *testing.T, replicas int) {
	parallel(t)
	p := newPlatform(t)
	const pairs = 3
	heads := map[string]string{}
	var teams []string
	var logs []*deploymentLog
	for i := range pairs {
		teams = append(teams, p.team(t, fmt.Sprintf("race%d", i)))
		logs = append(logs, watchDeployments(t, teams[i]))
	}
	// Each sync follows a repository of its own, so that no fetch waits
	// for another's and the first syncs of a pair meet at the API server.
	declarations := map[string]string{}
	for i, ns := range teams {
		for _, side := range []string{"a", "b"} {
			name := fmt.Sprintf("p%d%s", i, side)
			repo := testgit.New(t)
			head := repo.Commit("claim the pair's objects", raceFiles(side, ns))
			heads[name] = head
			declarations[name+".yaml"] = p.declaration(name, fmt.Sprintf("repository: %s\ninterval: 2s\nnamespace: %s\nserviceAccount: %s/deployer\n",
				repo.URL(), ns, ns))
		}
	}
	p.root.Commit("three racing pairs", declarations)
	var rs *replicaSet
	if replicas == 1 {
		d := kit.StartDaemon(t, p, "--sync-workers", "8") // the six syncs poll at once
		t.Cleanup(func() { d.FailIfExited(t) })
	} else {
		rs = startReplicas(t, p, replicas)
	}

	winners := make([]string, pairs)
	for i := range pairs {
		a, b := fmt.Sprintf("p%da", i), fmt.Sprintf("p%db", i)
		waitFor(t, fmt.Sprintf("one of %s and %s applied, the other refused", a, b), func(context.Context) (bool, error) {
			for _, w := range [][2]string{{a, b}, {b, a}} {
				won, lost := p.record(t, w[0]), p.record(t, w[1])
				if won["plimsoll.dev/sync-status"] == "Synced" && won["plimsoll.dev/commit"] == heads[w[0]] &&
					lost["plimsoll.dev/sync-status"] == "Failed" && strings.Contains(lost["plimsoll.dev/message"], "ownership check failed") {
					winners[i] = w[0]
					t.Logf("pair %d: %s applied; %s was refused first with %.300q", i, w[0], w[1], lost["plimsoll.dev/message"])
					return true, nil
				}
			}
			return false, nil
		})
	}
	if rs != nil {
		var syncs []string
		for name := range heads {
			syncs = append(syncs, p.sync(name))
		}
		t.Logf("the replica of each sync: %v", rs.holders(t, syncs))
	}
	// A few more polls of every sync: the outcome holds.
	time.Sleep(3 * 2 * time.Second)
	for i, ns := range teams {
		checkRaceOutcome(t, p, i, ns, winners[i], logs[i])
	}
}

// checkRaceOutcome checks pair pair of namespace ns after the race that
// winner won.
func checkRaceOutcome(t *testing.T, p *platform, pair int, ns, winner string, log *deploymentLog) {
	t.Helper()
	loser := fmt.Sprintf("p%da", pair)
	if loser == winner {
		loser = fmt.Sprintf("p%db", pair)
	}
	side := winner[len(winner)-1:]
	if r := p.record(t, winner); r["plimsoll.dev/sync-status"] != "Synced" {
		t.Errorf("pair %d: the winner %s is %q: %s", pair, winner, r["plimsoll.dev/sync-status"], r["plimsoll.dev/message"])
	}
	r := p.record(t, loser)
	refusal := fmt.Sprintf("belongs to sync %q; sync %q does not take it over", p.sync(winner), p.sync(loser))
	if r["plimsoll.dev/sync-status"] != "Failed" || !strings.Contains(r["plimsoll.dev/message"], "ownership check failed") ||
		!strings.Contains(r["plimsoll.dev/message"], refusal) {
		t.Errorf("pair %d: the loser %s is %q saying %q; want Failed, saying %q", pair, loser, r["plimsoll.dev/sync-status"], r["plimsoll.dev/message"], refusal)
	}

	won, lost := recordInventory(t, p, winner), recordInventory(t, p, loser)
	for i := range raceConfigMaps {
		name := fmt.Sprintf("race-%02d", i)
		cm, err := suite.client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var managers []string
		for _, e := range cm.ManagedFields {
			managers = append(managers, e.Manager+"/"+string(e.Operation))
		}
		if cm.Labels["plimsoll.dev/sync"] != p.sync(winner) || cm.Data["value"] != side || strings.Join(managers, ",") != "plimsoll/Apply" {
			t.Errorf("pair %d: ConfigMap %s is labelled %q holding %q, managed by %v; want %s's, %q, plimsoll/Apply only",
				pair, name, cm.Labels["plimsoll.dev/sync"], cm.Data["value"], managers, p.sync(winner), side)
		}
		key := manifest.Key{Kind: "ConfigMap", Namespace: ns, Name: name}
		if _, ok := won[key]; !ok {
			t.Errorf("pair %d: ConfigMap %s is not in the winner's inventory", pair, name)
		}
		if _, ok := lost[key]; ok {
			t.Errorf("pair %d: ConfigMap %s is in the loser's inventory", pair, name)
		}
	}

	d := getDeployment(t, ns, "web")
	if d.Labels["plimsoll.dev/sync"] != p.sync(winner) || d.Annotations["deployment.kubernetes.io/revision"] != "1" {
		t.Errorf("pair %d: Deployment web is labelled %q at revision %q; want %s's at revision 1",
			pair, d.Labels["plimsoll.dev/sync"], d.Annotations["deployment.kubernetes.io/revision"], p.sync(winner))
	}
	key := manifest.Key{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "web"}
	if _, ok := won[key]; !ok {
		t.Errorf("pair %d: Deployment web is not in the winner's inventory", pair)
	}
	if _, ok := lost[key]; ok {
		t.Errorf("pair %d: Deployment web is in the loser's inventory", pair)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	images := log.images["web"]
	if log.added["web"] != 1 || log.deleted["web"] != 0 || len(images) != 1 || !images["registry.example/web:"+side] {
		t.Errorf("pair %d: Deployment web was added %d times, deleted %d times, seen with images %v; want once, never, only the winner's",
			pair, log.added["web"], log.deleted["web"], images)
	}
}
