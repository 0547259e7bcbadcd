//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSyncRecordRepaired damages the sync record (a bad hand edit of its
// inventory) or deletes it, then pushes a commit that removes an object.
// The sync rebuilds the inventory from the objects labelled with its name:
// the commit is applied, the removed object is pruned, nothing else is (not
// the Service's EndpointSlices, which copy its labels, nor the Deployment a
// blue-green workload runs as), a Warning Event and the status message say
// what was repaired, and `plimsoll status` works throughout.
func TestSyncRecordRepaired(t *testing.T) {
	for _, tt := range []struct {
		name   string
		damage func(t *testing.T, s *syncTarget)
		lost   string
		// shown is what `plimsoll status` says of the record meanwhile.
		shown string
	}{
		{"inventory damaged by hand", func(t *testing.T, s *syncTarget) {
			patch := `{"data":{"inventory":"this is not an inventory line\n"}}`
			if _, err := suite.client.CoreV1().ConfigMaps(s.statusNamespace()).Patch(context.Background(), "plimsoll-sync-"+s.ns,
				types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "does not parse: line 1", "damaged record: the inventory of"},
		{"record deleted", func(t *testing.T, s *syncTarget) {
			if err := suite.client.CoreV1().ConfigMaps(s.statusNamespace()).Delete(context.Background(), "plimsoll-sync-"+s.ns, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "the sync record does not exist", "no status in namespace"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSyncTarget(t)
			files := baseTree()
			for name, text := range blueGreenExample(t, "v1", "30s") {
				files["shop-"+name] = text
			}
			files["extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  k: v\n"
			s.repo.Commit("base", files)
			s.mustSync(t)
			getDeploymentOrFail(t, s.ns, "shop-blue")
			before := endpointSlicesOf(t, s.ns, "web")

			tt.damage(t, s)
			out, code := runPlimsoll(t, append([]string{"status", "--sync-name", s.ns}, s.cliFlags()...)...)
			if code != 0 || !strings.Contains(out, tt.shown) {
				t.Errorf("plimsoll status with the record %s exited %d, want 0 and %q:\n%s", tt.name, code, tt.shown, out)
			}

			files["extra.yaml"] = "" // removes it
			files["config.yaml"] = strings.Replace(files["config.yaml"], "color: blue", "color: green", 1)
			second := s.repo.Commit("drop extra, paint it green", files)
			if out, code := s.syncOnce(t); code != 0 {
				t.Fatalf("sync after the record was %s exited %d:\n%s", tt.name, code, out)
			}

			st := s.status(t)
			t.Logf("status after the repair: %s", st["plimsoll.dev/message"])
			if st["plimsoll.dev/sync-status"] != "Synced" || st["plimsoll.dev/commit"] != second {
				t.Errorf("status %q at %q, want Synced at %s", st["plimsoll.dev/sync-status"], st["plimsoll.dev/commit"], second[:7])
			}
			// Commit 1's objects as the cluster holds them: app, frozen,
			// extra, the Services web, shop and shop-preview, the
			// Deployment web (shop runs as shop-blue, left out).
			if msg := st["plimsoll.dev/message"]; !strings.Contains(msg, tt.lost) || !strings.Contains(msg, "rebuilt from the 7 objects") {
				t.Errorf("status message %q does not say the inventory was rebuilt because %q", msg, tt.lost)
			}
			cms := suite.client.CoreV1().ConfigMaps(s.ns)
			if _, err := cms.Get(context.Background(), "extra", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("ConfigMap extra, removed from Git, is still there (err %v)", err)
			}
			if app, err := cms.Get(context.Background(), "app", metav1.GetOptions{}); err != nil || app.Data["color"] != "green" {
				t.Errorf("ConfigMap app: %v, %v; want color green", app.Data, err)
			}
			getDeploymentOrFail(t, s.ns, "shop-blue")
			getDeploymentOrFail(t, s.ns, "web")
			for uid, name := range before {
				if _, err := suite.client.DiscoveryV1().EndpointSlices(s.ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
					t.Errorf("EndpointSlice %s (%s) of Service web: %v", name, uid, err)
				}
			}
			repaired := 0
			for _, e := range s.events(t) {
				if e.Reason == "SyncRecordRepaired" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, tt.lost) {
					repaired++
				}
			}
			if repaired != 1 {
				t.Errorf("%d Warning Events SyncRecordRepaired naming %q, want 1", repaired, tt.lost)
			}

			// The record is whole again: the next sync repairs nothing.
			if out, code := s.syncOnce(t); code != 0 || strings.Contains(s.status(t)["plimsoll.dev/message"], "rebuilt") {
				t.Errorf("second sync after the repair: exit %d, message %q:\n%s", code, s.status(t)["plimsoll.dev/message"], out)
			}
		})
	}
}

// getDeploymentOrFail fails the test when Deployment name does not exist.
func getDeploymentOrFail(t *testing.T, ns, name string) {
	t.Helper()
	if getDeployment(t, ns, name) == nil {
		t.Errorf("Deployment %s/%s does not exist", ns, name)
	}
}

// endpointSlicesOf returns the names of Service svc's EndpointSlices by
// UID; the test fails when there are none.
func endpointSlicesOf(t *testing.T, ns, svc string) map[types.UID]string {
	t.Helper()
	out := map[types.UID]string{}
	waitFor(t, "EndpointSlices of Service "+svc, func(ctx context.Context) (bool, error) {
		list, err := suite.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc})
		if err != nil {
			return false, err
		}
		for _, es := range list.Items {
			out[es.UID] = es.Name
		}
		return len(out) > 0, nil
	})
	return out
}
