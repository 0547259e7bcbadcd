//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// claimTree is a commit of sync owner's repository, or of a rival's:
// ConfigMap shared (data color) and Deployment web (image) in namespace
// ns, and, when extra is set, ConfigMap <extra> beside them.
func claimTree(ns, color, image, extra string) map[string]string {
	files := map[string]string{
		"shared.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: %s\ndata:\n  color: %s\n", ns, color),
		"apps/web.yaml": strings.Replace(rollingDeployment(1, image), "  name: web\n",
			fmt.Sprintf("  name: web\n  namespace: %s\n", ns), 1),
	}
	if extra != "" {
		files["extra.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  k: v\n", extra, ns)
	}
	return files
}

// TestOwnerRefusesAnotherSyncsObjects: two syncs (two repositories, two
// status records, two --sync-name) apply into one namespace. The first
// applies ConfigMap shared and Deployment web; the second's commit
// declares both with other contents, and one more ConfigMap. The second
// sync fails as a whole: status Failed naming each object, its file and
// document and both syncs, a Warning Event saying the same, `plimsoll
// diff` refusing the same way, and nothing of its commit applied (its own
// ConfigMap is absent). The first sync's objects keep their contents and
// labels, and the ConfigMap its resourceVersion; the first sync stays
// Synced.
func TestOwnerRefusesAnotherSyncsObjects(t *testing.T) {
	parallel(t)
	owner, rival := newSyncTarget(t), newSyncTarget(t)
	ns := owner.ns
	head := owner.repo.Commit("team a", claimTree(ns, "blue", goodImage, ""))
	owner.mustSync(t, "--wait")
	// The Deployment controller writes web's status for a while after the
	// rollout: its generation and contents are compared, not its
	// resourceVersion.
	waitForDeployment(t, ns, "web", "its rollout observed", func(d *appsv1.Deployment) bool {
		return d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == 1
	})
	shared := object{gvr: configMaps, namespace: ns, name: "shared"}
	sharedVersion := resourceVersion(t, shared)
	web := getDeployment(t, ns, "web")

	rivalHead := rival.repo.Commit("team b", claimTree(ns, "red", "registry.example/web:v2", "rival-only"))
	out, code := rival.syncOnce(t)
	if code == 0 {
		t.Fatalf("the rival's sync of objects the owner applied succeeded:\n%s", out)
	}
	claims := []string{
		fmt.Sprintf(`ConfigMap %s/shared in shared.yaml (document 1) belongs to sync %q; sync %q does not take it over`, ns, owner.ns, rival.ns),
		fmt.Sprintf(`Deployment %s/web in apps/web.yaml (document 1) belongs to sync %q; sync %q does not take it over`, ns, owner.ns, rival.ns),
	}
	status := rival.status(t)
	if status["plimsoll.dev/sync-status"] != "Failed" {
		t.Errorf("rival's status %q, want Failed", status["plimsoll.dev/sync-status"])
	}
	msg := status["plimsoll.dev/message"]
	if want := fmt.Sprintf("commit %s not applied (ownership check failed; still running nothing yet): ", rivalHead[:7]); !strings.HasPrefix(msg, want) {
		t.Errorf("rival's message %q does not start %q", msg, want)
	}
	for _, claim := range claims {
		if !strings.Contains(msg, claim) {
			t.Errorf("rival's message %q does not say %q", msg, claim)
		}
		if !strings.Contains(out, claim) {
			t.Errorf("sync --once output does not say %q:\n%s", claim, out)
		}
	}
	warnings := 0
	for _, e := range rival.events(t) {
		if e.Type == "Warning" && e.Reason == "SyncFailed" && e.Message == msg {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d Warning Events SyncFailed saying %q, want 1; events: %v", warnings, msg, eventReasons(rival.events(t)))
	}

	diff, code := runPlimsoll(t, append([]string{"diff"}, rival.flags()...)...)
	if code != 2 || !strings.Contains(diff, claims[0]) || !strings.Contains(diff, claims[1]) {
		t.Errorf("the rival's diff exited %d, want 2 naming both objects:\n%s", code, diff)
	}

	if _, err := suite.client.CoreV1().ConfigMaps(ns).Get(context.Background(), "rival-only", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap rival-only of the refused commit: %v, want it absent", err)
	}
	checkOwnerKept := func(when string) {
		t.Helper()
		cm, err := suite.client.CoreV1().ConfigMaps(ns).Get(context.Background(), "shared", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.ResourceVersion != sharedVersion || cm.Data["color"] != "blue" || cm.Labels["plimsoll.dev/sync"] != owner.ns {
			t.Errorf("%s: ConfigMap shared is at resourceVersion %s (was %s), color %q, sync %q; want it untouched",
				when, cm.ResourceVersion, sharedVersion, cm.Data["color"], cm.Labels["plimsoll.dev/sync"])
		}
		d := getDeployment(t, ns, "web")
		if d.Generation != web.Generation || d.Spec.Template.Spec.Containers[0].Image != goodImage ||
			!maps.Equal(d.Labels, web.Labels) {
			t.Errorf("%s: Deployment web at generation %d (was %d), image %s, labels %v (were %v); want it untouched",
				when, d.Generation, web.Generation, d.Spec.Template.Spec.Containers[0].Image, d.Labels, web.Labels)
		}
	}
	checkOwnerKept("after the rival's sync")

	owner.mustSync(t)
	if st := owner.status(t); st["plimsoll.dev/sync-status"] != "Synced" || st["plimsoll.dev/commit"] != head {
		t.Errorf("owner's status %q at %s, want Synced at %s", st["plimsoll.dev/sync-status"], st["plimsoll.dev/commit"], head)
	}
	checkOwnerKept("after the owner's next sync")
}
