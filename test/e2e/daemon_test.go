//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/daemon/webhook"
	"plimsoll.dev/plimsoll/test/internal/kit"
)

// waitForCommit waits until the sync status says commit is applied.
func (s *syncTarget) waitForCommit(t *testing.T, commit string) {
	t.Helper()
	waitFor(t, "commit "+commit[:7]+" to be applied", func(ctx context.Context) (bool, error) {
		cm, err := suite.client.CoreV1().ConfigMaps(s.statusNamespace()).Get(ctx, "plimsoll-sync-"+s.ns, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return cm.Annotations["plimsoll.dev/commit"] == commit && cm.Annotations["plimsoll.dev/sync-status"] == "Synced", nil
	})
}

// TestDaemonRestoresDrift changes an applied object by hand and checks that
// the daemon restores it at the next interval without writing the others.
// Between changes the polls are quiet (they read and write nothing), and a
// change by hand ends that at once: an edited ConfigMap and a deleted
// Service are back within a few polls.
func TestDaemonRestoresDrift(t *testing.T) {
	s := newSyncTarget(t)
	head := s.repo.Commit("base", baseTree())
	d := kit.StartDaemon(t, s, "--interval", "1s")
	s.waitForCommit(t, head)
	waitForPhase(t, s.ns, "web", "Healthy")
	// The controllers are done writing once the Deployment controller has
	// observed the status write (annotations bump the generation).
	waitForDeployment(t, s.ns, "web", "its latest generation observed", func(d *appsv1.Deployment) bool {
		return d.Status.ObservedGeneration >= d.Generation
	})
	waitForQuietPolls(t, d, 3)
	objs := baseObjects(s.ns)
	before := resourceVersions(t, objs)

	t.Log("1. a ConfigMap edited by hand")
	patch := []byte(`{"data":{"color":"red"}}`)
	if _, err := suite.client.CoreV1().ConfigMaps(s.ns).Patch(context.Background(), "app", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("change ConfigMap app by hand: %v", err)
	}
	waitFor(t, "ConfigMap app to be restored", func(ctx context.Context) (bool, error) {
		cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(ctx, "app", metav1.GetOptions{})
		return err == nil && cm.Data["color"] == "blue", nil
	})
	app := object{gvr: configMaps, namespace: s.ns, name: "app"}
	for _, o := range objs {
		if o != app && resourceVersion(t, o) != before[o] {
			t.Errorf("%s was rewritten though it did not drift", o)
		}
	}

	t.Log("2. quiet again, then a Service deleted by hand")
	waitForQuietPolls(t, d, 3)
	if err := suite.client.CoreV1().Services(s.ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete Service web by hand: %v", err)
	}
	waitFor(t, "Service web to be created again", func(ctx context.Context) (bool, error) {
		_, err := suite.client.CoreV1().Services(s.ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil, nil
	})
	checkQuietPollsWriteNothing(t, d, objs)
}

// checkQuietPollsWriteNothing waits for 3 more quiet polls of daemon d and
// fails t if any of objs but a Deployment (the rollout controller's to
// write) changed meanwhile.
func checkQuietPollsWriteNothing(t *testing.T, d *kit.Daemon, objs []object) {
	t.Helper()
	before := resourceVersions(t, objs)
	waitForQuietPolls(t, d, 3)
	for _, o := range objs {
		if now := resourceVersion(t, o); now != before[o] && o.gvr != deployments {
			t.Errorf("%s written during quiet polls (resourceVersion %s, then %s)", o, before[o], now)
		}
	}
}

// waitForQuietPolls waits until daemon d has made n more quiet polls: the
// commit applied is still the branch head and nothing it applied changed,
// so the poll read and wrote nothing.
func waitForQuietPolls(t *testing.T, d *kit.Daemon, n float64) {
	t.Helper()
	quiet := metricSum(t, d, "plimsoll_sync_quiet_polls_total")
	waitFor(t, fmt.Sprintf("%v more quiet polls", n), func(context.Context) (bool, error) {
		return metricSum(t, d, "plimsoll_sync_quiet_polls_total") >= quiet+n, nil
	})
}

// TestDaemonWebhook checks that a signed POST /hook triggers a sync at once
// (the interval is an hour) and that a badly signed one gets 401 and
// triggers nothing.
func TestDaemonWebhook(t *testing.T) {
	s, d, first, second := hookedDaemon(t)

	if code := postHook(t, d, "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("badly signed hook: status %d, want 401", code)
	}
	holdsFor(t, "the badly signed hook changing nothing", 3*time.Second, func(ctx context.Context) error {
		if c := s.status(t)["plimsoll.dev/commit"]; c != first {
			return fmt.Errorf("commit %s applied after a badly signed hook", c)
		}
		return nil
	})

	start := time.Now()
	if code := postHook(t, d, "hook-s3cret"); code != http.StatusAccepted {
		t.Fatalf("signed hook: status %d, want 202", code)
	}
	s.waitForCommit(t, second)
	t.Logf("webhook latency: POST to commit applied in %s", time.Since(start).Round(time.Millisecond))
}

// hookSecret is the webhook secret of hookedDaemon.
const hookSecret = "hook-s3cret"

// hookedDaemon starts a daemon that polls once an hour and takes push hooks
// signed with hookSecret, waits until it applied the first commit, and
// pushes a second one that only a hook (or an hour) brings in.
func hookedDaemon(t *testing.T) (s *syncTarget, d *kit.Daemon, first, second string) {
	t.Helper()
	s = newSyncTarget(t)
	secretFile := filepath.Join(t.TempDir(), "hook-secret")
	if err := os.WriteFile(secretFile, []byte(hookSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first = s.repo.Commit("base", baseTree())
	d = kit.StartDaemon(t, s, "--interval", "1h", "--webhook-secret-file", secretFile)
	s.waitForCommit(t, first)
	files := baseTree()
	files["config.yaml"] = strings.Replace(files["config.yaml"], "color: blue", "color: green", 1)
	second = s.repo.Commit("paint it green", files)
	return s, d, first, second
}

// postHook sends daemon d a GitHub push hook signed with secret and
// returns the status code.
func postHook(t *testing.T, d *kit.Daemon, secret string) int {
	t.Helper()
	body := []byte(`{"ref":"refs/heads/main"}`)
	req, err := http.NewRequest(http.MethodPost, "http://"+d.Addr+"/hook", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(webhook.HeaderGitHubSignature, webhook.Sign([]byte(secret), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /hook: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitForPhase waits until the workload's plimsoll.dev/phase is phase.
func waitForPhase(t *testing.T, ns, name, phase string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("workload %s/%s to be %s", ns, name, phase), func(ctx context.Context) (bool, error) {
		d, err := suite.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Annotations["plimsoll.dev/phase"] == phase, nil
	})
}
