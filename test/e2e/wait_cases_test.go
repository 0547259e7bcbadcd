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
)

// waitAtOnce bounds a wait that must end at once: a few looks, far below
// its --timeout.
const waitAtOnce = 30 * time.Second

// waitPair is the tree of the wait cases: web (rolling) and api (canary,
// "25%, pause, 50%, pause, 100%") at the given images; api is left out
// for "".
func waitPair(t *testing.T, web, api string) map[string]string {
	t.Helper()
	tree := inDir("web", example(t, "rolling", "registry.example/web:v1", "registry.example/web:"+web))
	if api == "" {
		return tree
	}
	return mergeFiles(tree, inDir("api", canaryExample(t, api)))
}

// waitApplied waits until the sync of s has applied commit.
func waitApplied(t *testing.T, s *syncTarget, commit string) {
	t.Helper()
	waitFor(t, "the sync's record names commit "+commit[:7], func(ctx context.Context) (bool, error) {
		cm, err := suite.client.CoreV1().ConfigMaps(s.statusNamespace()).Get(ctx, s.statusRecordName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return cm.Annotations["plimsoll.dev/commit"] == commit, nil
	})
}

// endsAtOnce waits for w, which must end within waitAtOnce, and returns
// its output and exit code.
func endsAtOnce(t *testing.T, w *waitRun) (string, int) {
	t.Helper()
	start := time.Now()
	out, code := w.end(t)
	t.Logf("output (exit %d after %s):\n%s", code, time.Since(start).Round(time.Second), out)
	if took := time.Since(start); took > waitAtOnce {
		t.Errorf("the wait took %s, want at most %s", took.Round(time.Second), waitAtOnce)
	}
	return out, code
}

// TestWaitNotFound runs `plimsoll wait` on a workload that does not exist
// (a typo): it exits 3 at once, naming the workload, the namespace and
// the commit looked at, with --commit or without, alone or beside a
// workload that exists; and on a workload that the awaited commit adds,
// not pushed yet when the wait starts: it is waited for, not refused.
func TestWaitNotFound(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	v1 := s.repo.Commit("v1", waitPair(t, "v1", ""))
	kit.StartDaemon(t, s, "--interval", "1s")
	waitApplied(t, s, v1)

	t.Log("1. a typo: no Deployment, and the applied commit has none: exit 3 at once")
	for _, args := range [][]string{{"wbe"}, {"wbe", "--commit", v1}, {"web", "wbe", "--commit", v1[:7]}} {
		out, code := endsAtOnce(t, startWait(t, s, append(args, "--timeout", "1m")...))
		for _, want := range []string{fmt.Sprintf(`workload "wbe" not found in namespace %s`, s.ns), "commit " + v1[:7] + " applied by sync " + s.ns} {
			if !strings.Contains(out, want) {
				t.Errorf("wait %s does not say %q:\n%s", strings.Join(args, " "), want, out)
			}
		}
		if code != 3 {
			t.Errorf("wait %s exited %d, want 3 (not found)", strings.Join(args, " "), code)
		}
	}

	t.Log("2. a workload that the awaited commit adds, not pushed yet: waited for, then Healthy")
	v2 := s.repo.CommitLocal("api added", waitPair(t, "v1", "v1"))
	wait := startWait(t, s, "api", "--commit", v2, "--timeout", "3m")
	waitFor(t, "the wait's first look", func(context.Context) (bool, error) {
		return strings.Contains(wait.output(), "waiting for ") || wait.exited(), nil
	})
	time.Sleep(3 * time.Second) // three more looks at the record, which still names v1
	if wait.exited() {
		t.Fatalf("the wait for api, which %s adds, ended before the push:\n%s", v2[:7], wait.output())
	}
	s.repo.Push()
	out, code := wait.end(t)
	t.Logf("output:\n%s", out)
	if code != 0 || !strings.Contains(out, s.ns+"/api Healthy: revision 1 of commit "+v2[:7]) {
		t.Errorf("the wait for api added by %s exited %d, want 0 with api Healthy at revision 1:\n%s", v2[:7], code, out)
	}
}

// TestWaitReplaced runs `plimsoll wait --repo` on a commit that another
// replaced: a descendant pushed with it, so that the sync never applies
// it, ends the wait 0 once the workload is Healthy on the descendant,
// and the wait says so; a force-push of another history while the
// awaited commit's canary is paused ends it at once with exit 4, naming
// both commits.
func TestWaitReplaced(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("v1", waitPair(t, "v1", "v1"))
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	repo := []string{"--repo", s.repo.URL(), "--cache-dir", t.TempDir()}

	t.Log("1. x and its child y pushed at once: the wait for x ends 0 on y")
	x := s.repo.CommitLocal("web v2", waitPair(t, "v2", "v1"))
	y := s.repo.CommitLocal("web v3", waitPair(t, "v3", "v1"))
	s.repo.Push()
	out, code := startWait(t, s, append([]string{"web", "--commit", x, "--timeout", "90s"}, repo...)...).end(t)
	t.Logf("output:\n%s", out)
	for _, want := range []string{
		s.ns + "/web Healthy: revision 2 of commit " + y[:7],
		"commit " + x[:7] + " was replaced by its descendant " + y[:7] + "; " + y[:7] + " is Healthy",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the wait for %s, replaced by its child %s, does not say %q", x[:7], y[:7], want)
		}
	}
	if code != 0 {
		t.Errorf("the wait for %s, replaced by its child %s, exited %d, want 0", x[:7], y[:7], code)
	}

	t.Log("2. p's canary paused, then z force-pushed over p: the wait for p exits 4 at once, naming both")
	p := s.repo.Commit("api v2", waitPair(t, "v3", "v2"))
	waitForDeployment(t, s.ns, "api", "revision 2 paused at step 2", phaseIs(2, "Paused", "canary step 2/5"))
	wait := startWait(t, s, append([]string{"api", "--commit", p, "--timeout", "3m"}, repo...)...)
	waitFor(t, "the wait's first look", func(context.Context) (bool, error) {
		return strings.Contains(wait.output(), "waiting for ") || wait.exited(), nil
	})
	s.repo.Git(s.repo.Work(), "reset", "--quiet", "--hard", y)
	z := s.repo.Commit("api v5, over y", waitPair(t, "v3", "v5"))
	out, code = endsAtOnce(t, wait)
	if want := "commit " + p[:7] + " was replaced by " + z[:7] + ", which does not contain it"; code != 4 || !strings.Contains(out, want) {
		t.Errorf("the wait for %s, force-pushed over by %s, exited %d, want 4 saying %q", p[:7], z[:7], code, want)
	}
}
