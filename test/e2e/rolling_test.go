//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// rollingDeployment is the Git manifest of a Deployment "web" with a
// progress deadline of 10 s, so that a failing revision is noticed soon;
// annotations are key, value pairs.
func rollingDeployment(replicas int, image string, annotations ...string) string {
	meta := ""
	if len(annotations) > 0 {
		meta = "  annotations:\n"
		for i := 0; i+1 < len(annotations); i += 2 {
			meta += fmt.Sprintf("    %s: %q\n", annotations[i], annotations[i+1])
		}
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
%sspec:
  replicas: %d
  progressDeadlineSeconds: 10
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: %s
`, meta, replicas, image)
}

// workload reads the workload's Deployment.
func workload(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	d, err := suite.client.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read Deployment web: %v", err)
	}
	return d
}

// waitForRevision waits until the workload records revision and phase.
func waitForRevision(t *testing.T, ns string, revision int, phase string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	waitFor(t, fmt.Sprintf("revision %d to be %s", revision, phase), func(ctx context.Context) (bool, error) {
		var err error
		d, err = suite.client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		a := d.Annotations
		return a["plimsoll.dev/revision"] == fmt.Sprint(revision) && a["plimsoll.dev/phase"] == phase, nil
	})
	return d
}

// phaseWatch records every "<revision>:<phase>" a Deployment passes
// through, each once in a row.
type phaseWatch struct {
	mu     gosync.Mutex
	phases []string
}

func watchPhases(t *testing.T, ns, name string) *phaseWatch {
	t.Helper()
	pw := &phaseWatch{}
	followDeployment(t, ns, name, func(d *appsv1.Deployment) bool {
		p := d.Annotations["plimsoll.dev/revision"] + ":" + d.Annotations["plimsoll.dev/phase"]
		pw.mu.Lock()
		defer pw.mu.Unlock()
		if len(pw.phases) == 0 || pw.phases[len(pw.phases)-1] != p {
			pw.phases = append(pw.phases, p)
		}
		return false
	})
	return pw
}

// followDeployment calls on with Deployment ns/name each time a watch sees
// it, from now until on returns true or the test ends. The channel
// receives true when on returned true, false when the watch ended first.
func followDeployment(t *testing.T, ns, name string, on func(*appsv1.Deployment) bool) <-chan bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := suite.client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatalf("watch Deployment %s: %v", name, err)
	}
	return follow(w, on)
}

// follow calls on with each object of type T that watch w sees until on
// returns true; the channel receives true then, false when the watch
// ended first.
func follow[T any](w watch.Interface, on func(T) bool) <-chan bool {
	done := make(chan bool, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if obj, ok := ev.Object.(T); ok && on(obj) {
				done <- true
				return
			}
		}
		done <- false
	}()
	return done
}

func (pw *phaseWatch) seen() []string {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return slices.Clone(pw.phases)
}

// podImages returns the images of the workload's live pods, ready or not.
func podImages(t *testing.T, ns string) (ready, unready []string) {
	t.Helper()
	r, u := podsByReadiness(t, ns, "app=web")
	for _, p := range r {
		ready = append(ready, p.Spec.Containers[0].Image)
	}
	for _, p := range u {
		unready = append(unready, p.Spec.Containers[0].Image)
	}
	return ready, unready
}

func annotate(t *testing.T, ns, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	_, err := suite.client.AppsV1().Deployments(ns).Patch(context.Background(), "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("annotate %s=%s: %v", key, value, err)
	}
}

// TestRollingRollout follows one workload through revisions: first sync,
// an image change, a replicas-only change, a failing image rolled back,
// and a good commit after it.
func TestRollingRollout(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	first := s.repo.Commit("web v1", map[string]string{"web.yaml": rollingDeployment(4, "registry.example/web:v1")})
	daemon := kit.StartDaemon(t, s, "--interval", "1s")

	t.Log("1. first sync: Healthy, revision 1, the commit, the template hash")
	d := waitForRevision(t, s.ns, 1, "Healthy")
	if d.Annotations["plimsoll.dev/commit"] != first || d.Annotations["plimsoll.dev/template-hash"] == "" ||
		d.Annotations["plimsoll.dev/message"] != "4/4 available" {
		t.Errorf("annotations after the first sync: %v", d.Annotations)
	}

	t.Log("2. an image change: revision 2, Progressing then Healthy, in kubectl rollout history")
	phases := watchPhases(t, s.ns, "web")
	second := s.repo.Commit("web v2", map[string]string{"web.yaml": rollingDeployment(4, "registry.example/web:v2")})
	d = waitForRevision(t, s.ns, 2, "Healthy")
	if seen := phases.seen(); !slices.Contains(seen, "2:Progressing") {
		t.Errorf("phases seen %v, want 2:Progressing before 2:Healthy", seen)
	}
	if d.Annotations["plimsoll.dev/commit"] != second {
		t.Errorf("commit %s, want %s", d.Annotations["plimsoll.dev/commit"], second)
	}
	history := kubectl(t, "rollout", "history", "deployment/web", "-n", s.ns)
	t.Logf("kubectl rollout history:\n%s", history)
	for _, want := range []string{first[:7] + " web v1", second[:7] + " web v2"} {
		if !strings.Contains(history, want) {
			t.Errorf("rollout history does not list %q", want)
		}
	}
	hash2 := d.Annotations["plimsoll.dev/template-hash"]

	t.Log("3. a replicas-only change: the revision stays 2 and the Deployment scales")
	s.repo.Commit("scale to 6", map[string]string{"web.yaml": rollingDeployment(6, "registry.example/web:v2")})
	waitForComplete(t, s.ns, "web", 6)
	d = waitForRevision(t, s.ns, 2, "Healthy")
	if d.Annotations["plimsoll.dev/template-hash"] != hash2 {
		t.Errorf("template hash changed by a replicas-only change: %s -> %s", hash2, d.Annotations["plimsoll.dev/template-hash"])
	}

	t.Log("4. an image that cannot be pulled: rolled back, Degraded, failed-hash set, not retried")
	bad := s.repo.Commit("web broken", map[string]string{"web.yaml": rollingDeployment(6, "registry.example/web:does-not-exist")})
	d = waitForRevision(t, s.ns, 3, "Degraded")
	msg := d.Annotations["plimsoll.dev/message"]
	t.Logf("message: %s", msg)
	if d.Annotations["plimsoll.dev/failed-hash"] == "" {
		t.Errorf("after the failure: annotations %v, want failed-hash set", d.Annotations)
	}
	for _, want := range []string{"revision 3 (commit " + bad[:7] + ") failed", "progress deadline exceeded", "rolled back to revision 2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}
	waitFor(t, "pods back on v2", func(ctx context.Context) (bool, error) {
		ready, unready := podImages(t, s.ns)
		return len(ready) == 6 && len(unready) == 0 && slices.Equal(slices.Compact(slices.Sorted(slices.Values(ready))), []string{"registry.example/web:v2"}), nil
	})
	holdsFor(t, "the failed template staying out", 5*time.Second, func(ctx context.Context) error {
		if _, unready := podImages(t, s.ns); len(unready) > 0 {
			return fmt.Errorf("pods of the failed template came back: %v", unready)
		}
		if d := workload(t, s.ns); d.Annotations["plimsoll.dev/phase"] != "Degraded" {
			return fmt.Errorf("phase %s", d.Annotations["plimsoll.dev/phase"])
		}
		return nil
	})
	var rolledBack bool
	events, err := suite.client.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "RolledBack" && e.InvolvedObject.Name == "web" && strings.Contains(e.Message, bad[:7]) &&
			strings.Contains(e.Message, "progress deadline exceeded") {
			rolledBack = true
		}
	}
	if !rolledBack {
		t.Error("no RolledBack event on Deployment web")
	}
	// The refused template in Git is not drift: resyncs write nothing.
	s.waitForCommit(t, bad)
	checkResyncQuiet(t, s, daemon)

	t.Log("then a good commit makes it Healthy")
	s.repo.Commit("web v3", map[string]string{"web.yaml": rollingDeployment(6, "registry.example/web:v3")})
	waitForRevision(t, s.ns, 4, "Healthy")
	if ready, _ := podImages(t, s.ns); len(ready) != 6 || slices.Contains(ready, "registry.example/web:v2") {
		t.Errorf("after the good commit: ready pods %v, want 6 on v3", ready)
	}
}

// TestRollingWithoutAutoRollback leaves a failed revision in place.
func TestRollingWithoutAutoRollback(t *testing.T) {
	s := newSyncTarget(t)
	s.repo.Commit("web v1", map[string]string{"web.yaml": rollingDeployment(4, "registry.example/web:v1", "plimsoll.dev/auto-rollback", "false")})
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForRevision(t, s.ns, 1, "Healthy")

	s.repo.Commit("web broken", map[string]string{"web.yaml": rollingDeployment(4, "registry.example/web:does-not-exist", "plimsoll.dev/auto-rollback", "false")})
	d := waitForRevision(t, s.ns, 2, "Degraded")
	t.Logf("message: %s", d.Annotations["plimsoll.dev/message"])
	if d.Annotations["plimsoll.dev/failed-hash"] == "" || !strings.Contains(d.Annotations["plimsoll.dev/message"], "auto-rollback is off") {
		t.Errorf("annotations %v, want failed-hash and a message saying auto-rollback is off", d.Annotations)
	}
	if d.Spec.Template.Spec.Containers[0].Image != "registry.example/web:does-not-exist" {
		t.Errorf("template image %s, want the failed one left in place", d.Spec.Template.Spec.Containers[0].Image)
	}
	if _, unready := podImages(t, s.ns); len(unready) != 2 {
		t.Errorf("%d unready new pods, want the 2 of the stalled rollout", len(unready))
	}
}

// TestRollingPauseResume holds a new revision with pause and finishes it
// with resume.
func TestRollingPauseResume(t *testing.T) {
	s := newSyncTarget(t)
	s.repo.Commit("web v1", map[string]string{"web.yaml": rollingDeployment(4, "registry.example/web:v1")})
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForRevision(t, s.ns, 1, "Healthy")

	annotate(t, s.ns, "plimsoll.dev/command", "pause")
	waitFor(t, "the pause to be acted on", func(ctx context.Context) (bool, error) {
		d := workload(t, s.ns)
		_, pending := d.Annotations["plimsoll.dev/command"]
		return d.Spec.Paused && !pending, nil
	})
	s.repo.Commit("web v2", map[string]string{"web.yaml": rollingDeployment(4, "registry.example/web:v2")})
	waitForRevision(t, s.ns, 2, "Paused")
	holdsFor(t, "the paused revision not rolling out", 3*time.Second, func(ctx context.Context) error {
		if ready, unready := podImages(t, s.ns); len(unready) > 0 || slices.Contains(ready, "registry.example/web:v2") {
			return fmt.Errorf("pods moved while paused: ready %v, unready %v", ready, unready)
		}
		return nil
	})

	annotate(t, s.ns, "plimsoll.dev/command", "resume")
	waitForRevision(t, s.ns, 2, "Healthy")
	if ready, _ := podImages(t, s.ns); len(ready) != 4 || slices.Contains(ready, "registry.example/web:v1") {
		t.Errorf("after resume: ready pods %v, want 4 on v2", ready)
	}
}

// TestRollingSurvivesSIGKILL kills the daemon in the middle of a rollout
// and starts it again: the rollout finishes with revision 2, counted once.
func TestRollingSurvivesSIGKILL(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("web v1", map[string]string{"web.yaml": rollingDeployment(4, "registry.example/web:v1")})
	d := kit.StartDaemon(t, s, "--interval", "1s")
	waitForRevision(t, s.ns, 1, "Healthy")

	s.repo.Commit("web v2", map[string]string{"web.yaml": rollingDeployment(4, "registry.example/web:v2")})
	waitFor(t, "revision 2 to start", func(ctx context.Context) (bool, error) {
		return workload(t, s.ns).Annotations["plimsoll.dev/revision"] == "2", nil
	})
	d.Kill(t)
	t.Logf("killed the daemon at phase %s", workload(t, s.ns).Annotations["plimsoll.dev/phase"])
	kit.StartDaemon(t, s, "--interval", "1s")
	dep := waitForRevision(t, s.ns, 2, "Healthy")
	holdsFor(t, "revision 2 staying revision 2", 3*time.Second, func(ctx context.Context) error {
		if r := workload(t, s.ns).Annotations["plimsoll.dev/revision"]; r != "2" {
			return fmt.Errorf("revision %s", r)
		}
		return nil
	})
	if dep.Spec.Template.Spec.Containers[0].Image != "registry.example/web:v2" {
		t.Errorf("image %s after restart, want v2", dep.Spec.Template.Spec.Containers[0].Image)
	}
}

// TestRollingRetry clears a failed hash with the retry command: the next
// sync rolls the same template out again (and, since it still cannot run,
// it fails and is rolled back again).
func TestRollingRetry(t *testing.T) {
	s := newSyncTarget(t)
	s.repo.Commit("web v1", map[string]string{"web.yaml": rollingDeployment(2, "registry.example/web:v1")})
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForRevision(t, s.ns, 1, "Healthy")
	s.repo.Commit("web broken", map[string]string{"web.yaml": rollingDeployment(2, "registry.example/web:does-not-exist")})
	failed := waitForRevision(t, s.ns, 2, "Degraded").Annotations["plimsoll.dev/failed-hash"]
	if failed == "" {
		t.Fatal("no failed-hash after the failure")
	}

	annotate(t, s.ns, "plimsoll.dev/command", "retry")
	waitFor(t, "the failed template to be tried again", func(ctx context.Context) (bool, error) {
		_, unready := podImages(t, s.ns)
		return slices.Contains(unready, "registry.example/web:does-not-exist"), nil
	})
	waitFor(t, "the retried template to fail again and be rolled back", func(ctx context.Context) (bool, error) {
		d := workload(t, s.ns)
		_, pending := d.Annotations["plimsoll.dev/command"]
		ready, unready := podImages(t, s.ns)
		return !pending && d.Annotations["plimsoll.dev/phase"] == "Degraded" && d.Annotations["plimsoll.dev/failed-hash"] == failed &&
			len(unready) == 0 && len(ready) == 2, nil
	})
	t.Logf("after the retry: %s", workload(t, s.ns).Annotations["plimsoll.dev/message"])
}

// TestRollingRollbackToStable fails a revision that replaced another
// halfway through its rollout: the rollback restores the last revision
// that was Healthy, not the newer one that never was.
func TestRollingRollbackToStable(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("web v1", map[string]string{"web.yaml": rollingDeployment(4, "registry.example/web:v1")})
	kit.StartDaemon(t, s, "--interval", "1s")
	d := waitForRevision(t, s.ns, 1, "Healthy")
	if stable := d.Annotations["plimsoll.dev/stable-hash"]; stable == "" || stable != d.Annotations["plimsoll.dev/template-hash"] {
		t.Errorf("revision 1 Healthy: stable-hash %q, want its template hash %q", stable, d.Annotations["plimsoll.dev/template-hash"])
	}

	t.Log("revision 2's pods take a minute to count as available: it is still rolling out when revision 3 comes")
	slow := strings.Replace(rollingDeployment(4, "registry.example/web:v2"), "progressDeadlineSeconds: 10",
		"progressDeadlineSeconds: 600\n  minReadySeconds: 60", 1)
	s.repo.Commit("web v2, slow", map[string]string{"web.yaml": slow})
	waitFor(t, "revision 2 under way, with pods of its own", func(ctx context.Context) (bool, error) {
		ready, _ := podImages(t, s.ns)
		d := workload(t, s.ns)
		return d.Annotations["plimsoll.dev/revision"] == "2" && d.Annotations["plimsoll.dev/phase"] == "Progressing" &&
			slices.Contains(ready, "registry.example/web:v2"), nil
	})

	bad := s.repo.Commit("web broken", map[string]string{"web.yaml": rollingDeployment(4, "registry.example/web:does-not-exist")})
	d = waitForRevision(t, s.ns, 3, "Degraded")
	msg := d.Annotations["plimsoll.dev/message"]
	t.Logf("message: %s", msg)
	if want := "revision 3 (commit " + bad[:7] + ") failed"; !strings.Contains(msg, want) || !strings.Contains(msg, "rolled back to revision 1") {
		t.Errorf("message %q, want %q and rolled back to revision 1", msg, want)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/web:v1" {
		t.Errorf("template image %s after the rollback, want revision 1's registry.example/web:v1", img)
	}
	// Revision 3's manifest drops minReadySeconds and sets a deadline below
	// revision 2's value of it: valid, as the write that applies it drops
	// the field too.
	if d.Spec.MinReadySeconds != 0 || *d.Spec.ProgressDeadlineSeconds != 10 {
		t.Errorf("minReadySeconds %d, progressDeadlineSeconds %d; want revision 3's 0 and 10", d.Spec.MinReadySeconds, *d.Spec.ProgressDeadlineSeconds)
	}
	waitFor(t, "every pod back on v1", func(ctx context.Context) (bool, error) {
		ready, unready := podImages(t, s.ns)
		return len(ready) == 4 && len(unready) == 0 && slices.Equal(slices.Compact(slices.Sorted(slices.Values(ready))), []string{"registry.example/web:v1"}), nil
	})
}
