//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestSourceOutage serves the repository over smart HTTP with basic auth,
// then makes the server hang and drop connections while a commit that
// deletes a file waits in it. The cluster keeps running the last good
// commit, nothing is pruned, the status says since when it is stale, the
// daemon backs off, and once the server is back the commit applies.
func TestSourceOutage(t *testing.T) {
	s := newSyncTarget(t)
	server := newGitServer(t, s.repo, "deploy", "outage-password")
	s.url = server.URL(s.repo)
	t.Setenv("E2E_GIT_PASSWORD", "outage-password")
	first := s.repo.Commit("base", baseTree())
	d := kit.StartDaemon(t, s, "--interval", "500ms", "--git-timeout", "1s",
		"--git-username", "deploy", "--git-password-env", "E2E_GIT_PASSWORD")
	s.waitForCommit(t, first)
	waitForPhase(t, s.ns, "web", "Healthy")
	// The Deployment controller writes the status of web once more after
	// plimsoll sees it available: wait for that before taking versions.
	waitFor(t, "web's rollout to be recorded complete", func(ctx context.Context) (bool, error) {
		d, err := suite.client.AppsV1().Deployments(s.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing {
				return d.Status.ObservedGeneration == d.Generation && c.Reason == "NewReplicaSetAvailable", nil
			}
		}
		return false, nil
	})
	objs := baseObjects(s.ns)
	before := resourceVersions(t, objs)

	t.Log("the server hangs, then drops connections, while a commit deletes service.yaml")
	server.setMode(serverHang)
	second := s.repo.Commit("drop the service", map[string]string{"service.yaml": ""})
	var st map[string]string
	waitFor(t, "the status to say the source is stale", func(ctx context.Context) (bool, error) {
		st = s.status(t)
		return st["plimsoll.dev/sync-status"] == "Failed" && st["plimsoll.dev/stale-since"] != "", nil
	})
	t.Logf("status while hanging: %s", st["plimsoll.dev/message"])
	if !strings.Contains(st["plimsoll.dev/message"], "stale since "+st["plimsoll.dev/stale-since"]) ||
		!strings.Contains(st["plimsoll.dev/message"], "still running "+first[:7]) {
		t.Errorf("status message %q, want it to say stale since %s and still running %s", st["plimsoll.dev/message"], st["plimsoll.dev/stale-since"], first[:7])
	}
	staleSince := st["plimsoll.dev/stale-since"]
	server.setMode(serverDown)

	// The daemon doubles its wait after each failure: 1s, 2s, 4s.
	backoff := regexp.MustCompile(`next attempt after backoff.* wait=(\S+)`)
	waitFor(t, "three backoff waits in the log", func(ctx context.Context) (bool, error) {
		return len(backoff.FindAllStringSubmatch(d.Log(), -1)) >= 3, nil
	})
	var waits []string
	for _, m := range backoff.FindAllStringSubmatch(d.Log(), -1)[:3] {
		waits = append(waits, m[1])
	}
	if strings.Join(waits, " ") != "1s 2s 4s" {
		t.Errorf("backoff waits %v, want 1s 2s 4s", waits)
	}
	if after := resourceVersions(t, objs); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the cluster changed while the source was down:\nbefore %v\nafter  %v", before, after)
	}
	if st := s.status(t); st["plimsoll.dev/commit"] != first || st["plimsoll.dev/stale-since"] != staleSince {
		t.Errorf("status %v, want commit %s and stale since %s kept", st, first, staleSince)
	}

	t.Log("the server recovers: the waiting commit applies and prunes the Service")
	server.setMode(serverUp)
	s.waitForCommit(t, second)
	if st := s.status(t); st["plimsoll.dev/stale-since"] != "" {
		t.Errorf("stale-since %q still set after recovery", st["plimsoll.dev/stale-since"])
	}
	waitFor(t, "the Service to be pruned", func(ctx context.Context) (bool, error) {
		_, err := suite.client.CoreV1().Services(s.ns).Get(ctx, "web", metav1.GetOptions{})
		return err != nil, nil
	})
}

// TestSecretsStaySecret plants one canary value in Git credentials and
// another in a Secret manifest whose later change the API server rejects,
// and checks that neither appears in the daemon's logs, the Events, the
// status annotations or the metrics.
func TestSecretsStaySecret(t *testing.T) {
	const (
		passwordCanary = "canary-pw-7f3a91c2"
		secretCanary   = "canary-secret-51be0d"
	)
	s := newSyncTarget(t)
	server := newGitServer(t, s.repo, "deploy", passwordCanary)
	s.url = server.URL(s.repo)
	pwFile := t.TempDir() + "/password"
	if err := os.WriteFile(pwFile, []byte(passwordCanary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := func(typ string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: %s\nstringData:\n  password: %s\n", typ, secretCanary)
	}
	files := baseTree()
	files["secret.yaml"] = secret("Opaque")
	first := s.repo.Commit("with a secret", files)
	d := kit.StartDaemon(t, s, "--interval", "500ms", "--git-username", "deploy", "--git-password-file", pwFile)
	s.waitForCommit(t, first)

	t.Log("a change of the Secret's immutable type is rejected by the API server")
	bad := s.repo.Commit("change the secret's type", map[string]string{"secret.yaml": secret("kubernetes.io/basic-auth")})
	waitFor(t, "the rejected commit to be reported", func(ctx context.Context) (bool, error) {
		st := s.status(t)
		return st["plimsoll.dev/fetched-commit"] == bad && st["plimsoll.dev/sync-status"] == "Failed", nil
	})
	t.Logf("status: %s", s.status(t)["plimsoll.dev/message"])

	t.Log("a wrong password is refused by the server")
	if err := os.WriteFile(pwFile, []byte("wrong-"+passwordCanary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The daemon read the password at start; a second, one-shot sync reads
	// the wrong one and fails authentication.
	out, code := s.syncOnce(t, "--git-username", "deploy", "--git-password-file", pwFile)
	if code == 0 {
		t.Fatalf("sync with a wrong password exited 0:\n%s", out)
	}

	resp, err := http.Get("http://" + d.Addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var events strings.Builder
	for _, e := range s.events(t) {
		events.WriteString(e.Message + "\n")
	}
	places := map[string]string{
		"daemon log":         d.Log(),
		"one-shot sync log":  out,
		"events":             events.String(),
		"status annotations": fmt.Sprint(s.status(t)),
		"metrics":            string(metrics),
	}
	for where, text := range places {
		for _, canary := range []string{passwordCanary, secretCanary} {
			if n := strings.Count(text, canary); n != 0 {
				t.Errorf("canary %q found %d times in the %s", canary, n, where)
			}
		}
	}
	if !strings.Contains(events.String(), "immutable") {
		t.Errorf("events do not report the rejected Secret change:\n%s", events.String())
	}
}
