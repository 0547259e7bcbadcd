//go:build e2e

package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// baseTree is the good commit every bad-input case starts from and returns
// to.
func baseTree() map[string]string {
	return map[string]string{
		"config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  color: blue\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\nimmutable: true\ndata:\n  k: v1\n",
		"service.yaml":    "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n  - port: 80\n",
		"deployment.yaml": rollingDeployment(1, goodImage),
	}
}

func baseObjects(ns string) []object {
	return []object{
		{gvr: configMaps, namespace: ns, name: "app"},
		{gvr: configMaps, namespace: ns, name: "frozen"},
		{gvr: services, namespace: ns, name: "web"},
		{gvr: deployments, namespace: ns, name: "web"},
	}
}

// TestSyncRejectsBadInput commits one bad change at a time on top of a good
// commit. For each: the sync fails with a message naming the file, the
// document and the field; nothing in the cluster changes; the status says
// Failed and an Event is recorded; the next good commit applies.
func TestSyncRejectsBadInput(t *testing.T) {
	s := newSyncTarget(t)
	good := baseTree()
	s.repo.Commit("base", good)
	s.mustSync(t)
	waitForComplete(t, s.ns, "web", 1) // the Deployment controller is done writing
	objs := baseObjects(s.ns)

	big := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: \"" + strings.Repeat("x", 5<<20) + "\"\n"
	tests := []struct {
		name  string
		files map[string]string
		// link, when set, adds a symbolic link (path -> target).
		link [2]string
		// want are the fragments the status message must contain.
		want []string
	}{
		{name: "invalid YAML", files: map[string]string{"bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [x\n"},
			want: []string{"bad.yaml", "document 1"}},
		{name: "document without a name", files: map[string]string{"noname.yaml": "apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n"},
			want: []string{"noname.yaml, document 1", "metadata.name"}},
		{name: "document without a kind", files: map[string]string{"nokind.yaml": "apiVersion: v1\nmetadata: {name: x}\n"},
			want: []string{"nokind.yaml, document 1", "kind"}},
		{name: "duplicate object", files: map[string]string{"more/dup.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n"},
			want: []string{"more/dup.yaml, document 1", "config.yaml, document 1"}},
		{name: "unknown kind", files: map[string]string{"gizmo.yaml": "apiVersion: gizmos.example.com/v1\nkind: Gizmo\nmetadata:\n  name: g\n"},
			want: []string{"gizmo.yaml, document 1", "field kind"}},
		{name: "schema error rejected by the API server", files: map[string]string{"deployment.yaml": strings.Replace(rollingDeployment(1, goodImage), "replicas: 1", "replicas: -1", 1)},
			want: []string{"deployment.yaml, document 1", "spec.replicas"}},
		{name: "unknown strategy", files: map[string]string{"deployment.yaml": strings.Replace(rollingDeployment(1, goodImage), "  name: web\n", "  name: web\n  annotations:\n    plimsoll.dev/strategy: recreate\n", 1)},
			want: []string{"deployment.yaml, document 1", "plimsoll.dev/strategy", `unknown strategy "recreate"`}},
		{name: "auto-rollback not a boolean", files: map[string]string{"deployment.yaml": rollingDeployment(1, goodImage, "plimsoll.dev/auto-rollback", "yes")},
			want: []string{"deployment.yaml, document 1", "plimsoll.dev/auto-rollback", `"yes" is neither "true" nor "false"`}},
		{name: "immutable field change", files: map[string]string{"config.yaml": strings.Replace(good["config.yaml"], "k: v1", "k: v2", 1)},
			want: []string{"config.yaml, document 2", "immutable", "plimsoll.dev/force"}},
		{name: "immutable Deployment selector", files: map[string]string{"deployment.yaml": strings.ReplaceAll(rollingDeployment(1, goodImage), "{app: web}", "{app: web, tier: front}")},
			want: []string{"deployment.yaml, document 1", "spec.selector", "immutable", "not deleted and created again"}},
		{name: "immutable Deployment selector, forced", files: map[string]string{"deployment.yaml": strings.ReplaceAll(
			rollingDeployment(1, goodImage, "plimsoll.dev/force", "true"), "{app: web}", "{app: web, tier: front}")},
			want: []string{"deployment.yaml, document 1", "spec.selector", "immutable", "not deleted and created again"}},
		{name: "absolute symlink", link: [2]string{"passwd.yaml", "/etc/passwd"},
			want: []string{"passwd.yaml", "leaves the repository"}},
		{name: "relative symlink leaving the repository", link: [2]string{"up.yaml", "../../../../etc/passwd"},
			want: []string{"up.yaml", "leaves the repository"}},
		{name: "oversized file", files: map[string]string{"big.yaml": big},
			want: []string{"big.yaml"}},
		{name: "YAML alias bomb", files: map[string]string{"bomb.yaml": kit.AliasBomb()},
			want: []string{"bomb.yaml"}},
		{name: "empty tree", files: map[string]string{"config.yaml": "", "service.yaml": "", "deployment.yaml": ""},
			want: []string{"renders no object", "--allow-empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := resourceVersions(t, objs)
			goodHead := s.status(t)["plimsoll.dev/commit"]
			if tt.link[0] != "" {
				if err := os.Symlink(tt.link[1], filepath.Join(s.repo.Work(), tt.link[0])); err != nil {
					t.Fatal(err)
				}
			}
			bad := s.repo.Commit("bad: "+tt.name, tt.files)

			out, code := s.syncOnce(t)
			if code == 0 {
				t.Fatalf("sync of a bad commit exited 0:\n%s", out)
			}
			st := s.status(t)
			t.Logf("status message: %s", st["plimsoll.dev/message"])
			if st["plimsoll.dev/sync-status"] != "Failed" || st["plimsoll.dev/fetched-commit"] != bad || st["plimsoll.dev/commit"] != goodHead {
				t.Errorf("status %v, want Failed, fetched %s, commit still %s", st, bad, goodHead)
			}
			for _, w := range tt.want {
				if !strings.Contains(st["plimsoll.dev/message"], w) {
					t.Errorf("status message %q does not contain %q", st["plimsoll.dev/message"], w)
				}
			}
			if after := resourceVersions(t, objs); !maps.Equal(before, after) {
				t.Errorf("a bad commit changed the cluster:\nbefore %v\nafter  %v", before, after)
			}
			var warned bool
			for _, e := range s.events(t) {
				if e.Reason == "SyncFailed" && e.Type == "Warning" && strings.Contains(e.Message, bad[:7]) {
					warned = true
				}
			}
			if !warned {
				t.Errorf("no SyncFailed Warning event names commit %s; events: %v", bad[:7], eventReasons(s.events(t)))
			}

			t.Log("the next good commit applies")
			if tt.link[0] != "" {
				if err := os.Remove(filepath.Join(s.repo.Work(), tt.link[0])); err != nil {
					t.Fatal(err)
				}
			}
			fix := map[string]string{}
			for path := range tt.files {
				fix[path] = good[path] // "" removes a file that is not in the good tree
			}
			fixed := s.repo.Commit("fix: "+tt.name, fix)
			s.mustSync(t)
			if st := s.status(t); st["plimsoll.dev/sync-status"] != "Synced" || st["plimsoll.dev/commit"] != fixed {
				t.Fatalf("after the fix: status %v, want Synced at %s", st, fixed)
			}
			for _, o := range objs {
				if resourceVersion(t, o) == "" {
					t.Errorf("%s is gone after the fix", o)
				}
			}
		})
	}
}
