//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// colorTree is a commit holding ConfigMap app with data color.
func colorTree(color string) map[string]string {
	return map[string]string{"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  color: " + color + "\n"}
}

// color reads ConfigMap app's color in the sync's namespace.
func (s *syncTarget) color(t *testing.T) string {
	t.Helper()
	cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "app", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read ConfigMap app: %v", err)
	}
	return cm.Data["color"]
}

// waitForHeld waits until the sync holds commit and its message says
// each of says; it returns the message.
func (s *syncTarget) waitForHeld(t *testing.T, commit string, says ...string) string {
	t.Helper()
	var msg string
	waitFor(t, "commit "+commit[:7]+" to be held", func(ctx context.Context) (bool, error) {
		a := s.statusAnnotations(ctx)
		msg = a["plimsoll.dev/message"]
		if a["plimsoll.dev/sync-status"] != "Held" || a["plimsoll.dev/fetched-commit"] != commit {
			return false, nil
		}
		for _, want := range says {
			if !strings.Contains(msg, want) {
				return false, nil
			}
		}
		return true, nil
	})
	return msg
}

// TestRewindHeldUntilAccepted: a daemon with --hold-rewinds applies v1
// and v2, then the branch is force-pushed back to v1. v1 is held (status
// Held naming v1 and v2 and how to accept, a Warning Event) and the
// cluster keeps v2. A commit v3 pushed on top of v1 still does not
// descend from v2 and is held in turn; an acceptance of v1 accepts
// nothing then. `plimsoll accept-rewind` of v3 applies it at once, and
// the acceptance is removed once spent.
func TestRewindHeldUntilAccepted(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	v1 := s.repo.Commit("v1", colorTree("one"))
	kit.StartDaemon(t, s, "--interval", "1s", "--hold-rewinds")
	s.waitForCommit(t, v1)
	v2 := s.repo.Commit("v2", colorTree("two"))
	s.waitForCommit(t, v2)

	t.Log("1. the branch is force-pushed back to v1")
	s.repo.ForcePush(v1)
	accept := "kubectl -n " + s.ns + " annotate --overwrite configmap plimsoll-sync-" + s.ns + " plimsoll.dev/accept-rewind=" + v1
	msg := s.waitForHeld(t, v1, "commit "+v1[:7]+" held: it does not descend from the applied commit "+v2[:7], accept)
	if got := s.color(t); got != "two" {
		t.Errorf("ConfigMap app is %q while v1 is held, want v2's two", got)
	}
	if st := s.status(t); st["plimsoll.dev/commit"] != v2 {
		t.Errorf("applied commit %s while v1 is held, want v2 %s", st["plimsoll.dev/commit"], v2)
	}
	warned := false
	for _, e := range s.events(t) {
		warned = warned || (e.Type == "Warning" && e.Reason == "RewindHeld" && e.Message == msg)
	}
	if !warned {
		t.Errorf("no Warning Event RewindHeld saying %q; events: %v", msg, eventReasons(s.events(t)))
	}

	t.Log("2. v3 on top of v1 is held too; accepting v1 accepts nothing")
	v3 := s.repo.Commit("v3", colorTree("three"))
	s.waitForHeld(t, v3, "commit "+v3[:7]+" held: it does not descend from the applied commit "+v2[:7])
	kubectl(t, "-n", s.ns, "annotate", "--overwrite", "configmap", "plimsoll-sync-"+s.ns, "plimsoll.dev/accept-rewind="+v1)
	s.waitForHeld(t, v3, "plimsoll.dev/accept-rewind names "+v1+", not this commit")
	if got := s.color(t); got != "two" {
		t.Errorf("ConfigMap app is %q while v3 is held, want v2's two", got)
	}
	out, code := runPlimsoll(t, "accept-rewind", v1[:7], "--sync-name", s.ns, "-n", s.ns, "--kubeconfig", suite.kubeconfig)
	if code == 0 || !strings.Contains(out, "sync "+s.ns+" holds commit "+v3+", not "+v1[:7]) {
		t.Errorf("accept-rewind of v1 while v3 is held: exit %d, output:\n%s", code, out)
	}

	t.Log("3. v3 accepted")
	out, code = runPlimsoll(t, "accept-rewind", v3[:7], "--sync-name", s.ns, "-n", s.ns, "--kubeconfig", suite.kubeconfig)
	if code != 0 {
		t.Fatalf("accept-rewind of v3: exit %d, output:\n%s", code, out)
	}
	s.waitForCommit(t, v3)
	if got := s.color(t); got != "three" {
		t.Errorf("ConfigMap app is %q once v3 is applied, want three", got)
	}
	waitFor(t, "the spent acceptance to be removed", func(ctx context.Context) (bool, error) {
		_, set := s.statusAnnotations(ctx)["plimsoll.dev/accept-rewind"]
		return !set, nil
	})
}

// TestRewindAppliedByDefault: without --hold-rewinds a force-push back to
// an older commit is applied as any commit. With it, `sync --once` holds
// the next rewind (exit non-zero, status Held, cluster unchanged), and
// applies it once accepted with kubectl annotate.
func TestRewindAppliedByDefault(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	v0 := s.repo.Commit("v0", colorTree("zero"))
	v1 := s.repo.Commit("v1", colorTree("one"))
	s.mustSync(t)
	s.repo.Commit("v2", colorTree("two"))
	s.mustSync(t)
	if got := s.color(t); got != "two" {
		t.Fatalf("ConfigMap app is %q after v2, want two", got)
	}

	s.repo.ForcePush(v1)
	s.mustSync(t)
	if st := s.status(t); st["plimsoll.dev/sync-status"] != "Synced" || st["plimsoll.dev/commit"] != v1 {
		t.Errorf("without --hold-rewinds: status %q at %s, want Synced at v1 %s", st["plimsoll.dev/sync-status"], st["plimsoll.dev/commit"], v1)
	}
	if got := s.color(t); got != "one" {
		t.Errorf("without --hold-rewinds ConfigMap app is %q, want v1's one", got)
	}

	t.Log("with --hold-rewinds, v0 (older than v1, now applied) is held")
	s.repo.ForcePush(v0)
	out, code := s.syncOnce(t, "--hold-rewinds")
	if code == 0 || !strings.Contains(out, "commit "+v0[:7]+" held: it does not descend from the applied commit "+v1[:7]) {
		t.Errorf("sync --once --hold-rewinds of a rewind: exit %d, output:\n%s", code, out)
	}
	if st := s.status(t); st["plimsoll.dev/sync-status"] != "Held" || st["plimsoll.dev/commit"] != v1 {
		t.Errorf("status %q at %s, want Held at v1 %s", st["plimsoll.dev/sync-status"], st["plimsoll.dev/commit"], v1)
	}
	if got := s.color(t); got != "one" {
		t.Errorf("ConfigMap app is %q while v0 is held, want one", got)
	}
	kubectl(t, "-n", s.ns, "annotate", "configmap", "plimsoll-sync-"+s.ns, "plimsoll.dev/accept-rewind="+v0)
	s.mustSync(t, "--hold-rewinds")
	if st := s.status(t); st["plimsoll.dev/sync-status"] != "Synced" || st["plimsoll.dev/commit"] != v0 || st["plimsoll.dev/accept-rewind"] != "" {
		t.Errorf("after accepting v0: status %q at %s, acceptance %q; want Synced at v0 %s, no acceptance",
			st["plimsoll.dev/sync-status"], st["plimsoll.dev/commit"], st["plimsoll.dev/accept-rewind"], v0)
	}
	if got := s.color(t); got != "zero" {
		t.Errorf("ConfigMap app is %q once v0 is accepted, want zero", got)
	}
}
