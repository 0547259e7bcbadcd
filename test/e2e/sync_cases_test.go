//go:build e2e

package e2e

import (
	"context"
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSyncHeldByWindow holds a change in a deny window that is always open,
// then lets it through once the window is gone.
func TestSyncHeldByWindow(t *testing.T) {
	s := newSyncTarget(t)
	first := s.repo.Commit("base", baseTree())
	s.mustSync(t)
	waitForComplete(t, s.ns, "web", 1)
	before := resourceVersions(t, baseObjects(s.ns))

	files := baseTree()
	files["config.yaml"] = strings.Replace(files["config.yaml"], "color: blue", "color: green", 1)
	second := s.repo.Commit("paint it green", files)
	out, code := s.syncOnce(t, "--window", "deny * * * * * 1h")
	if code == 0 || !strings.Contains(out, "held") {
		t.Fatalf("sync in a deny window: exit %d, want non-zero and a word on the hold:\n%s", code, out)
	}
	st := s.status(t)
	t.Logf("status: %s", st["plimsoll.dev/message"])
	if st["plimsoll.dev/sync-status"] != "Held" || st["plimsoll.dev/commit"] != first || st["plimsoll.dev/fetched-commit"] != second ||
		!strings.Contains(st["plimsoll.dev/message"], "held until") {
		t.Errorf("status %v, want Held at %s with %s fetched and a time it is held until", st, first[:7], second[:7])
	}
	if after := resourceVersions(t, baseObjects(s.ns)); !maps.Equal(before, after) {
		t.Errorf("a held change was written:\nbefore %v\nafter  %v", before, after)
	}

	s.mustSync(t, "--window", "allow * * * * * 1h")
	if st := s.status(t); st["plimsoll.dev/sync-status"] != "Synced" || st["plimsoll.dev/commit"] != second {
		t.Errorf("inside an allow window: status %v, want Synced at %s", st, second[:7])
	}
}

// TestSyncForceRecreate changes an immutable field of an object annotated
// plimsoll.dev/force: "true": it is deleted and created again.
func TestSyncForceRecreate(t *testing.T) {
	s := newSyncTarget(t)
	frozen := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\n  annotations:\n    plimsoll.dev/force: \"true\"\nimmutable: true\ndata:\n  k: " + v + "\n"
	}
	s.repo.Commit("frozen v1", map[string]string{"frozen.yaml": frozen("v1")})
	s.mustSync(t)
	old, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "frozen", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.repo.Commit("frozen v2", map[string]string{"frozen.yaml": frozen("v2")})
	s.mustSync(t)
	cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "frozen", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["k"] != "v2" || cm.UID == old.UID {
		t.Errorf("ConfigMap frozen: data %v uid %s (was %s), want v2 in a new object", cm.Data, cm.UID, old.UID)
	}
}

// TestSyncPruneDisabled keeps an object annotated plimsoll.dev/prune:
// disabled when its file leaves Git, and prunes its neighbour.
func TestSyncPruneDisabled(t *testing.T) {
	s := newSyncTarget(t)
	s.repo.Commit("two", map[string]string{
		"keep.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n  annotations:\n    plimsoll.dev/prune: disabled\n",
		"drop.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: drop\n",
		"stay.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stay\n",
	})
	s.mustSync(t)
	s.repo.Commit("remove two", map[string]string{"keep.yaml": "", "drop.yaml": ""})
	s.mustSync(t)
	if resourceVersion(t, object{gvr: configMaps, namespace: s.ns, name: "keep"}) == "" {
		t.Error("ConfigMap keep (prune: disabled) was pruned")
	}
	if resourceVersion(t, object{gvr: configMaps, namespace: s.ns, name: "drop"}) != "" {
		t.Error("ConfigMap drop was not pruned")
	}
}

// TestSyncFollowsBranch force-pushes an unrelated history (applied), then
// deletes the branch (refused: nothing pruned).
func TestSyncFollowsBranch(t *testing.T) {
	s := newSyncTarget(t)
	s.repo.Commit("base", baseTree())
	s.mustSync(t)
	waitForComplete(t, s.ns, "web", 1)

	t.Log("a force-push of an unrelated history is applied")
	s.repo.Git(s.repo.Work(), "checkout", "--quiet", "--orphan", "rewritten")
	s.repo.Git(s.repo.Work(), "rm", "-r", "--quiet", "--cached", ".")
	files := baseTree()
	files["config.yaml"] = strings.Replace(files["config.yaml"], "color: blue", "color: red", 1)
	rewritten := s.repo.Commit("rewritten history", files)
	s.mustSync(t)
	if st := s.status(t); st["plimsoll.dev/commit"] != rewritten {
		t.Fatalf("after a force-push: status %v, want commit %s", st, rewritten[:7])
	}
	cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "app", metav1.GetOptions{})
	if err != nil || cm.Data["color"] != "red" {
		t.Errorf("ConfigMap app after the force-push: %v, %v; want color red", cm.Data, err)
	}

	t.Log("a deleted branch fails the sync and prunes nothing")
	before := resourceVersions(t, baseObjects(s.ns))
	s.repo.Git(s.repo.Bare(), "update-ref", "-d", "refs/heads/main")
	out, code := s.syncOnce(t)
	if code == 0 {
		t.Fatalf("sync of a deleted branch exited 0:\n%s", out)
	}
	st := s.status(t)
	t.Logf("status: %s", st["plimsoll.dev/message"])
	if st["plimsoll.dev/sync-status"] != "Failed" || st["plimsoll.dev/commit"] != rewritten || !strings.Contains(st["plimsoll.dev/message"], "main") {
		t.Errorf("status %v, want Failed naming the branch, still at %s", st, rewritten[:7])
	}
	if after := resourceVersions(t, baseObjects(s.ns)); !maps.Equal(before, after) {
		t.Errorf("a deleted branch changed the cluster:\nbefore %v\nafter  %v", before, after)
	}
}

// TestSyncRefusesBadRepositoryURLs checks that a URL with credentials or a
// leading dash is refused before anything is contacted, with a message
// that does not repeat the credentials.
func TestSyncRefusesBadRepositoryURLs(t *testing.T) {
	s := newSyncTarget(t)
	tests := []struct {
		name, url, want string
	}{
		{name: "embedded password", url: "https://deploy:pa55w0rd-canary@git.example/repo.git", want: "credentials"},
		{name: "embedded token", url: "https://tok3n-canary@git.example/repo.git", want: "credentials"},
		{name: "leading dash", url: "-uhack", want: "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.url = tt.url
			out, code := s.syncOnce(t)
			if code == 0 || !strings.Contains(out, tt.want) {
				t.Fatalf("sync --repo %q: exit %d, want non-zero and %q:\n%s", tt.url, code, tt.want, out)
			}
			for _, canary := range []string{"pa55w0rd-canary", "tok3n-canary"} {
				if strings.Contains(out, canary) {
					t.Errorf("output repeats the credential %q:\n%s", canary, out)
				}
			}
		})
	}
}
