//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	gosync "sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/test/internal/kit"
)

// waitTree is the tree of TestWait: web (rolling, a 10 s progress
// deadline), api (canary, "25%, pause, 50%, pause, 100%") and shop
// (blue-green, a 1 s scale-down delay) at the given images; api's steps
// are replaced by replace, if any.
func waitTree(t *testing.T, web, api, shop string, replace ...string) map[string]string {
	t.Helper()
	return mergeFiles(
		inDir("web", example(t, "rolling", "registry.example/web:v1", "registry.example/web:"+web,
			"  replicas: 4\n", "  replicas: 4\n  progressDeadlineSeconds: 10\n")),
		inDir("api", canaryExample(t, api, replace...)),
		inDir("shop", blueGreenExample(t, shop, "1s")))
}

// waitRun is a `plimsoll wait` running in the background.
type waitRun struct {
	cmd  *exec.Cmd
	mu   gosync.Mutex
	out  bytes.Buffer
	done chan struct{}
	code int
}

func (w *waitRun) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(p)
}

func (w *waitRun) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// startWait starts `plimsoll wait` with args against s's namespace.
func startWait(t *testing.T, s *syncTarget, args ...string) *waitRun {
	t.Helper()
	w := &waitRun{done: make(chan struct{})}
	w.cmd = exec.Command(suite.plimsoll, append([]string{"wait", "--kubeconfig", suite.kubeconfig, "-n", s.ns}, args...)...)
	w.cmd.Stdout, w.cmd.Stderr = w, w
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start plimsoll wait: %v", err)
	}
	go func() {
		err := w.cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			w.code = exit.ExitCode()
		}
		close(w.done)
	}()
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
		<-w.done
	})
	return w
}

// exited reports whether the wait has ended.
func (w *waitRun) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// end waits for the wait to end (it has its own --timeout) and returns its
// output and exit code.
func (w *waitRun) end(t *testing.T) (string, int) {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("plimsoll wait did not end; output:\n%s", w.output())
	}
	return w.output(), w.code
}

// TestWait runs `plimsoll wait` as a pipeline would after a push, against a
// daemon: it waits for a commit through a rolling, a canary (promoted
// twice while it waits) and a blue-green rollout and exits 0, without
// ending on the previous revision's Healthy (it is started before the
// push); it fails naming the workload for a broken image and for an
// analysis failure; and it times out naming the workload still paused.
func TestWait(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("v1", waitTree(t, "v1", "v1", "v1"))
	kit.StartDaemon(t, s, "--interval", "1s")

	t.Log("1. the sync's latest commit, every workload of the sync (--all): Healthy at revision 1")
	out, code := startWait(t, s, "--all", "--sync-name", s.ns, "--timeout", "2m").end(t)
	t.Logf("output:\n%s", out)
	for _, w := range []string{"web", "api", "shop"} {
		if !strings.Contains(out, s.ns+"/"+w+" Healthy: revision 1 of commit ") {
			t.Errorf("wait --all does not say %s/%s is Healthy at revision 1:\n%s", s.ns, w, out)
		}
	}
	if code != 0 {
		t.Fatalf("wait --all exited %d", code)
	}
	checkRecordedTemplates(t, s)

	t.Log("2. a wait for v2 started before the push: it waits through the canary's pauses and ends at revision 2 of each")
	v2 := s.repo.CommitLocal("v2", waitTree(t, "v2", "v2", "v2"))
	wait := startWait(t, s, "web", "api", "shop", "--commit", v2, "--timeout", "3m")
	waitFor(t, "the wait's first look", func(context.Context) (bool, error) {
		return strings.Contains(wait.output(), "waiting for ") || wait.exited(), nil
	})
	if first := wait.output(); !strings.Contains(first, "waiting for commit "+v2[:7]+" to be applied; now Healthy") || wait.exited() {
		t.Fatalf("the wait on %s, not pushed yet, did not wait past the Healthy revision 1:\n%s", v2[:7], first)
	}
	s.repo.Push()
	waitForDeployment(t, s.ns, "api", "revision 2 paused at step 2", phaseIs(2, "Paused", "canary step 2/5"))
	waitForDeployment(t, s.ns, "web", "revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForDeployment(t, s.ns, "shop-green", "revision 2 Healthy", phaseIs(2, "Healthy"))
	if wait.exited() {
		t.Fatalf("the wait ended while api waits for a promote:\n%s", wait.output())
	}
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "revision 2 paused at step 4", phaseIs(2, "Paused", "canary step 4/5"))
	if wait.exited() {
		t.Fatalf("the wait ended while api waits for its second promote:\n%s", wait.output())
	}
	command(t, s.ns, "api", "promote")
	out, code = wait.end(t)
	t.Logf("output:\n%s", out)
	for _, w := range []string{"web", "api", "shop"} {
		if !strings.Contains(out, s.ns+"/"+w+" Healthy: revision 2 of commit "+v2[:7]) {
			t.Errorf("the wait does not say %s is Healthy at revision 2 of %s", w, v2[:7])
		}
	}
	if code != 0 {
		t.Fatalf("the wait for v2 exited %d", code)
	}

	t.Log("3. a broken image: the wait fails as soon as web is Degraded, naming it")
	v3 := s.repo.Commit("web broken", waitTree(t, "does-not-exist", "v2", "v2"))
	out, code = startWait(t, s, "web", "--commit", v3, "--timeout", "3m").end(t)
	t.Logf("output:\n%s", out)
	if code != 1 || !strings.Contains(out, s.ns+"/web Degraded: ") || !strings.Contains(out, "1 workloads failed: "+s.ns+"/web") {
		t.Errorf("the wait on a broken image exited %d, want 1 naming %s/web Degraded:\n%s", code, s.ns, out)
	}

	t.Log("4. a canary waiting for a promote: the wait times out naming api")
	v4 := s.repo.Commit("api v4", waitTree(t, "v2", "v4", "v2"))
	waitForDeployment(t, s.ns, "api", "revision 3 paused at step 2", phaseIs(3, "Paused", "canary step 2/5"))
	out, code = startWait(t, s, "api", "--commit", v4, "--timeout", "5s").end(t)
	t.Logf("output:\n%s", out)
	if code != 2 || !strings.Contains(out, "timed out after 5s waiting for "+s.ns+"/api (Paused: canary step 2/5") {
		t.Errorf("the wait on a paused canary exited %d, want 2 naming %s/api paused:\n%s", code, s.ns, out)
	}

	t.Log("5. an analysis that fails: the wait fails naming api")
	check := startCheckServer(t) // answers false: the analysis fails
	tree := mergeFiles(waitTree(t, "v2", "v5", "v2"), inDir("api", judgedCanary(t, "v5", "web-check", webCheckAnalysis(check.url))))
	v5 := s.repo.Commit("api v5 judged", tree)
	out, code = startWait(t, s, "api", "--commit", v5, "--timeout", "3m").end(t)
	t.Logf("output:\n%s", out)
	if code != 1 || !strings.Contains(out, s.ns+"/api Degraded: ") || !strings.Contains(out, "analysis web-check/ok failed") {
		t.Errorf("the wait on a failing analysis exited %d, want 1 naming %s/api and the analysis:\n%s", code, s.ns, out)
	}
}

// checkRecordedTemplates checks that the sync record of s holds, for each
// workload, the template hash its Deployments' status shows: the hash a
// wait compares with to know the controller took the commit's template.
func checkRecordedTemplates(t *testing.T, s *syncTarget) {
	t.Helper()
	ctx := context.Background()
	cm, err := suite.client.CoreV1().ConfigMaps(s.statusNamespace()).Get(ctx, s.statusRecordName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recorded := inventory.ParseTemplates(cm.Data[inventory.DataTemplates])
	list, err := suite.client.AppsV1().Deployments(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "plimsoll.dev/workload"})
	if err != nil {
		t.Fatal(err)
	}
	workloads := map[string]bool{}
	for _, d := range list.Items {
		w := d.Labels["plimsoll.dev/workload"]
		workloads[w] = true
		if got, want := recorded[s.ns+"/"+w], d.Annotations["plimsoll.dev/template-hash"]; got != want {
			t.Errorf("the sync record has template %q for %s, Deployment %s shows %q", got, w, d.Name, want)
		}
	}
	if len(recorded) != len(workloads) {
		t.Errorf("the sync record has templates %v, for workloads %v", recorded, workloads)
	}
}
