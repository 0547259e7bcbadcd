//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// TestBadDeclarationsChangeNothing: each bad declaration the root's Git
// can hold refuses the root's commit with an error naming the file, the
// declaration and the field; the declared sync that runs keeps its last
// good declaration, untouched, and goes on syncing.
func TestBadDeclarationsChangeNothing(t *testing.T) {
	parallel(t)
	p := newPlatform(t)
	a := p.team(t, "team-a")
	apps := testgit.New(t)
	first := apps.Commit("team a", map[string]string{"config.yaml": configMapDoc(a, "a-config", "one")})
	good := fmt.Sprintf("repository: %s\ninterval: 2s\nnamespace: %s\nserviceAccount: %s/deployer\n", apps.URL(), a, a)
	p.root.Commit("team a", map[string]string{"teams/a.yaml": p.declaration("team-a", good)})
	kit.StartDaemon(t, p)
	p.waitForSynced(t, "team-a", first)
	declared, err := suite.client.CoreV1().ConfigMaps(p.home).Get(context.Background(), p.sync("team-a"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{name: "an unknown field", files: map[string]string{"teams/a.yaml": p.declaration("team-a", good+"intervall: 5s\n")},
			want: []string{"teams/a.yaml, document 1", `field data["sync.yaml"].intervall`, "declared sync " + p.sync("team-a"), "unknown field"}},
		{name: "a malformed repository URL", files: map[string]string{"teams/a.yaml": p.declaration("team-a", strings.Replace(good, apps.URL(), "https://ci:hunter2@git.example/a.git", 1))},
			want: []string{`field data["sync.yaml"].repository`, "carries credentials"}},
		{name: "a malformed interval", files: map[string]string{"teams/a.yaml": p.declaration("team-a", strings.Replace(good, "2s", "1 minute", 1))},
			want: []string{`field data["sync.yaml"].interval`, `"1 minute" is not a duration`}},
		{name: "a missing credentials Secret", files: map[string]string{"teams/a.yaml": p.declaration("team-a", good+"credentials: gone\n")},
			want: []string{`field data["sync.yaml"].credentials`, "Secret " + p.home + "/gone does not exist"}},
		{name: "two declarations of one sync", files: map[string]string{"teams/again.yaml": p.declaration("team-a", good)},
			want: []string{"teams/again.yaml, document 1", "ConfigMap " + p.home + "/" + p.sync("team-a") + " is also defined in teams/a.yaml, document 1"}},
		{name: "an identity it may not use", files: map[string]string{"teams/a.yaml": p.declaration("team-a", strings.Replace(good, a+"/deployer", "kube-system/default", 1))},
			want: []string{`field data["sync.yaml"].serviceAccount`, "may not act as ServiceAccount kube-system/default"}},
		{name: "a declaration in another namespace", files: map[string]string{"teams/a.yaml": strings.Replace(p.declaration("team-a", good), "namespace: "+p.home, "namespace: "+a, 1)},
			want: []string{"declared in namespace " + a, "only from namespace " + p.home}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := p.root.Commit(tc.name, tc.files)
			msg := p.waitForRefused(t, "root", bad)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("the root's message %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("the root's message repeats the password: %q", msg)
			}
			now, err := suite.client.CoreV1().ConfigMaps(p.home).Get(context.Background(), p.sync("team-a"), metav1.GetOptions{})
			if err != nil || now.ResourceVersion != declared.ResourceVersion {
				t.Errorf("team a's declaration changed: %v (resourceVersion %s, was %s)", err, now.GetResourceVersion(), declared.ResourceVersion)
			}
			undo := map[string]string{"teams/a.yaml": p.declaration("team-a", good)}
			for file := range tc.files {
				if file != "teams/a.yaml" {
					undo[file] = ""
				}
			}
			p.root.Commit("back to good", undo)
		})
	}
	next := apps.Commit("team a goes on", map[string]string{"config.yaml": configMapDoc(a, "a-config", "two")})
	p.waitForSynced(t, "team-a", next)
	if got := configMapData(t, a, "a-config")["value"]; got != "two" {
		t.Errorf("team a's ConfigMap holds %q, want two", got)
	}
}

// TestHangingRepositoryDelaysNoOtherSync: with one worker, a sync whose
// Git server hangs does not hold the worker: a commit on another sync's
// repository is applied while the hanging server still holds the first
// one's poll. Its credentials come from its Secret.
func TestHangingRepositoryDelaysNoOtherSync(t *testing.T) {
	parallel(t)
	p := newPlatform(t)
	slowNS, fastNS := p.team(t, "slow"), p.team(t, "fast")
	slowRepo, fastRepo := testgit.New(t), testgit.New(t)
	server := newGitServer(t, slowRepo, "ci", "s3cret")
	kubectl(t, "-n", p.home, "create", "secret", "generic", "slow-git", "--from-literal=username=ci", "--from-literal=password=s3cret")
	slowHead := slowRepo.Commit("slow", map[string]string{"config.yaml": configMapDoc(slowNS, "slow", "one")})
	fastHead := fastRepo.Commit("fast", map[string]string{"config.yaml": configMapDoc(fastNS, "fast", "one")})
	p.root.Commit("two teams", map[string]string{
		"slow.yaml": p.declaration("slow", fmt.Sprintf("repository: %s\ncredentials: slow-git\ninterval: 2s\nnamespace: %s\nserviceAccount: %s/deployer\n",
			server.URL(slowRepo), slowNS, slowNS)),
		"fast.yaml": p.declaration("fast", fmt.Sprintf("repository: %s\ninterval: 2s\nnamespace: %s\nserviceAccount: %s/deployer\n",
			fastRepo.URL(), fastNS, fastNS)),
	})
	kit.StartDaemon(t, p, "--sync-workers", "1", "--git-timeout", "10m")
	p.waitForSynced(t, "slow", slowHead)
	p.waitForSynced(t, "fast", fastHead)

	server.setMode(serverHang)
	waitFor(t, "the slow repository's poll to hang", func(context.Context) (bool, error) { return server.hangingNow() > 0, nil })
	pushed := time.Now()
	next := fastRepo.Commit("fast goes on", map[string]string{"config.yaml": configMapDoc(fastNS, "fast", "two")})
	p.waitForSynced(t, "fast", next)
	t.Logf("the fast sync applied its commit %s after the push, while the slow repository hung", time.Since(pushed).Round(time.Millisecond))
	if server.hangingNow() == 0 {
		t.Fatal("the slow repository's poll ended before the fast sync applied its commit: the test proved nothing")
	}
	if got := configMapData(t, fastNS, "fast")["value"]; got != "two" {
		t.Errorf("the fast sync's ConfigMap holds %q, want two", got)
	}
	if r := p.record(t, "slow"); r["plimsoll.dev/commit"] != slowHead {
		t.Errorf("the slow sync's record says commit %q, want it still at %s", r["plimsoll.dev/commit"], slowHead[:7])
	}
}
