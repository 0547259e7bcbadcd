//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// Canary values of the notification tests: the token in every receiver's
// URL, and a value in a Secret of the repository. Neither may show in a
// notification or in the daemon's log.
const (
	notifyToken  = "ntok-8c41e07b"
	notifySecret = "canary-secret-d93e52"
)

// receiverMode is how a notifyReceiver answers.
type receiverMode int

const (
	answerOK receiverMode = iota
	answer500
	neverAnswer
)

// notifyReceiver is a webhook (or Slack) receiver served by the test: it
// records every body it gets and answers as its mode says.
type notifyReceiver struct {
	srv  *httptest.Server
	mode receiverMode
	// release ends the requests of a receiver that never answers, so that
	// the server can close.
	release chan struct{}
	mu      gosync.Mutex
	bodies  []string
}

func newNotifyReceiver(t *testing.T, mode receiverMode) *notifyReceiver {
	t.Helper()
	r := &notifyReceiver{mode: mode, release: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	t.Cleanup(func() { close(r.release) }) // runs first
	return r
}

func (r *notifyReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, string(body))
	r.mu.Unlock()
	switch r.mode {
	case neverAnswer:
		select {
		case <-req.Context().Done(): // the daemon gave up
		case <-r.release:
		}
	case answer500:
		http.Error(w, "receiver broken", http.StatusInternalServerError)
	}
}

// urlFile writes the receiver's URL, with notifyToken in its path and
// query, to a file called name (which names the receiver) and returns
// its path.
func (r *notifyReceiver) urlFile(t *testing.T, name string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	url := fmt.Sprintf("%s/hooks/%s?token=%s\n", r.srv.URL, notifyToken, notifyToken)
	if err := os.WriteFile(file, []byte(url), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func (r *notifyReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

// notification is a JSON webhook body, read by the names docs/notifications.md
// gives its fields.
type notification struct {
	Kind         string    `json:"kind"`
	Severity     string    `json:"severity"`
	Namespace    string    `json:"namespace"`
	Workload     string    `json:"workload"`
	Strategy     string    `json:"strategy"`
	Sync         string    `json:"sync"`
	Phase        string    `json:"phase"`
	Status       string    `json:"status"`
	Revision     int64     `json:"revision"`
	TemplateHash string    `json:"templateHash"`
	Commit       string    `json:"commit"`
	Message      string    `json:"message"`
	Time         time.Time `json:"time"`
}

// notifications decodes the bodies received as JSON notifications.
func (r *notifyReceiver) notifications(t *testing.T) []notification {
	t.Helper()
	var out []notification
	for _, b := range r.received() {
		var n notification
		if err := json.Unmarshal([]byte(b), &n); err != nil {
			t.Fatalf("a webhook body is not a JSON notification: %v\n%s", err, b)
		}
		out = append(out, n)
	}
	return out
}

// rolloutPhases returns the phases notified for revision of workload, in
// order, and the notifications themselves.
func rolloutPhases(ns []notification, workload string, revision int64) ([]string, []notification) {
	var phases []string
	var of []notification
	for _, n := range ns {
		if n.Kind == "rollout" && n.Workload == workload && n.Revision == revision {
			phases, of = append(phases, n.Phase), append(of, n)
		}
	}
	return phases, of
}

// syncNotices returns the sync notifications of status for commit.
func syncNotices(ns []notification, status, commit string) []notification {
	var out []notification
	for _, n := range ns {
		if n.Kind == "sync" && n.Status == status && n.Commit == commit {
			out = append(out, n)
		}
	}
	return out
}

// waitForNotice waits until r has received a notification that match
// accepts.
func (r *notifyReceiver) waitForNotice(t *testing.T, describe string, match func(notification) bool) notification {
	t.Helper()
	var found notification
	waitFor(t, describe, func(context.Context) (bool, error) {
		for _, n := range r.notifications(t) {
			if match(n) {
				found = n
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// secretFile is a Secret manifest holding notifySecret, of type typ.
func secretFile(typ string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: %s\nstringData:\n  password: %s\n", typ, notifySecret)
}

// TestNotifyCanaryAndSync follows revision 2 of examples/canary through
// its steps with a JSON webhook and a Slack receiver: one notification
// per phase change, in the order the workload's annotations went
// through, each with the workload, revision, commit and message; then
// two bad commits (a file that does not parse, a Secret change the API
// server rejects) are each notified once with their commit and reason,
// and the fix as Synced. Neither the Secret's value nor the receivers'
// token shows in a notification or the daemon's log.
func TestNotifyCanaryAndSync(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	hook, slack := newNotifyReceiver(t, answerOK), newNotifyReceiver(t, answerOK)
	tree := func(version string) map[string]string {
		files := canaryExample(t, version)
		files["secret.yaml"] = secretFile("Opaque")
		return files
	}
	s.repo.Commit("api v1", tree("v1"))
	d := kit.StartDaemon(t, s, "--interval", "1s",
		"--notify-webhook-file", hook.urlFile(t, "ops"), "--notify-slack-file", slack.urlFile(t, "team"))
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	phases := watchPhases(t, s.ns, "api")

	t.Log("1. revision 2 through its steps: promote at each pause")
	v2 := s.repo.Commit("api v2", tree("v2"))
	waitForDeployment(t, s.ns, "api", "step 2/5 waiting for promote", phaseIs(2, "Paused", "canary step 2/5"))
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "step 4/5 waiting for promote", phaseIs(2, "Paused", "canary step 4/5"))
	command(t, s.ns, "api", "promote")
	waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	hook.waitForNotice(t, "revision 2 Healthy notified", func(n notification) bool {
		return n.Workload == "api" && n.Revision == 2 && n.Phase == "Healthy"
	})
	var annotated []string
	for _, p := range phases.seen() {
		if phase, ok := strings.CutPrefix(p, "2:"); ok {
			annotated = append(annotated, phase)
		}
	}
	notified, rev2 := rolloutPhases(hook.notifications(t), "api", 2)
	t.Logf("phases of revision 2: annotated %v, notified %v", annotated, notified)
	if !slices.Equal(notified, annotated) || len(notified) < 4 || notified[0] != "Progressing" || !slices.Contains(notified, "Paused") {
		t.Errorf("notified phases %v, want one per change of plimsoll.dev/phase: %v (Progressing first, Paused in between)", notified, annotated)
	}
	for _, n := range rev2 {
		if n.Namespace != s.ns || n.Strategy != "canary" || n.Commit != v2 || n.Message == "" || n.TemplateHash == "" ||
			n.Severity != "info" || n.Time.IsZero() {
			t.Errorf("notification %+v: want namespace, strategy, commit %s, message, template hash, severity info, time", n, v2)
		}
	}

	t.Log("2. a commit that does not parse: one Failed notification with its commit and the file")
	files := tree("v2")
	files["broken.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n"
	broken := s.repo.Commit("broken yaml", files)
	failed := hook.waitForNotice(t, "the failed sync notified", func(n notification) bool {
		return n.Kind == "sync" && n.Status == "Failed" && n.Commit == broken
	})
	t.Logf("failed sync: %s", failed.Message)
	if failed.Sync != s.ns || failed.Namespace != s.ns || failed.Severity != "error" || !strings.Contains(failed.Message, "broken.yaml") {
		t.Errorf("failed sync notification %+v: want sync and namespace %s, severity error, the file in the message", failed, s.ns)
	}
	// The daemon tries again every 2, then 4 s; the same failure is told once.
	holdsFor(t, "one notification of the broken commit", 6*time.Second, func(context.Context) error {
		if n := len(syncNotices(hook.notifications(t), "Failed", broken)); n != 1 {
			return fmt.Errorf("%d notifications of the failed commit", n)
		}
		return nil
	})

	t.Log("3. a Secret change the API server rejects, then the fix")
	files["broken.yaml"] = ""
	files["secret.yaml"] = secretFile("kubernetes.io/basic-auth")
	rejected := s.repo.Commit("change the secret's type", files)
	refused := hook.waitForNotice(t, "the rejected commit notified", func(n notification) bool {
		return n.Kind == "sync" && n.Status == "Failed" && n.Commit == rejected
	})
	t.Logf("rejected sync: %s", refused.Message)
	if !strings.Contains(refused.Message, "immutable") {
		t.Errorf("rejected commit notified with %q, want the reason (immutable)", refused.Message)
	}
	fixed := s.repo.Commit("put the secret's type back", tree("v2"))
	hook.waitForNotice(t, "the recovery notified", func(n notification) bool {
		return n.Kind == "sync" && n.Status == "Synced" && n.Commit == fixed && n.Severity == "info"
	})

	t.Log("4. Slack got the same notifications, each a complete line")
	sent := hook.notifications(t)
	waitFor(t, "Slack to get every notification", func(context.Context) (bool, error) {
		return len(slack.received()) == len(sent), nil
	})
	for i, body := range slack.received() {
		var m struct {
			Text        string `json:"text"`
			Attachments []struct {
				Color string `json:"color"`
			} `json:"attachments"`
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("Slack body is not JSON: %v\n%s", err, body)
		}
		n := sent[i]
		want := fmt.Sprintf("*%s/%s* revision %d *%s*: ", n.Namespace, n.Workload, n.Revision, n.Phase)
		if n.Kind == "sync" {
			want = fmt.Sprintf("*sync %s* *%s*: ", n.Sync, n.Status)
		}
		if !strings.HasPrefix(m.Text, want) || len(m.Attachments) != 1 || m.Attachments[0].Color == "" {
			t.Errorf("Slack message %d: %s\nwant text starting %q and one coloured attachment", i, body, want)
		}
	}
	t.Logf("Slack text of the failed sync: %s", slackText(t, slack.received(), broken[:7]))

	t.Log("5. no secret anywhere")
	metrics := strings.Join(scrapeMetrics(t, d), "\n")
	places := map[string]string{
		"webhook bodies": strings.Join(hook.received(), "\n"),
		"Slack bodies":   strings.Join(slack.received(), "\n"),
		"daemon log":     d.Log(),
		"metrics":        metrics,
	}
	for where, text := range places {
		for _, canary := range []string{notifyToken, notifySecret} {
			if n := strings.Count(text, canary); n != 0 {
				t.Errorf("%q found %d times in the %s", canary, n, where)
			}
		}
	}
	for _, want := range []string{`receivers="[webhook/ops slack/team]"`} {
		if !strings.Contains(d.Log(), want) {
			t.Errorf("daemon log lacks %s", want)
		}
	}
	counted := fmt.Sprintf(`plimsoll_notifications_total{receiver="webhook/ops",result="sent"} %d`, len(sent))
	waitFor(t, "the deliveries counted", func(context.Context) (bool, error) {
		return slices.Contains(scrapeMetrics(t, d), counted), nil
	})
	checkMetrics(t, d,
		`plimsoll_notifications_total{receiver="webhook/ops",result="failed"} 0`,
		`plimsoll_notifications_dropped_total{receiver="slack/team"} 0`)
}

// slackText returns the text of the first Slack body holding contains.
func slackText(t *testing.T, bodies []string, contains string) string {
	t.Helper()
	for _, b := range bodies {
		var m struct {
			Text string `json:"text"`
		}
		if json.Unmarshal([]byte(b), &m) == nil && strings.Contains(m.Text, contains) {
			return m.Text
		}
	}
	return ""
}

// TestNotifyBadReceivers rolls the same canary out twice: with a good
// receiver, then with a receiver that never answers and one that answers
// 500 beside it. The bad receivers do not hold the rollout up (both
// durations are logged), the good one still hears of everything, their
// failed deliveries show in /metrics, and the daemon stops promptly.
func TestNotifyBadReceivers(t *testing.T) {
	parallel(t)
	good := newNotifyReceiver(t, answerOK)
	s1, _, withGood := timedCanary(t, "--notify-webhook-file", good.urlFile(t, "good"))

	again := newNotifyReceiver(t, answerOK)
	hang, broken := newNotifyReceiver(t, neverAnswer), newNotifyReceiver(t, answer500)
	s2, d, withBad := timedCanary(t, "--notify-timeout", "1s", "--notify-webhook-file", again.urlFile(t, "good"),
		"--notify-webhook-file", hang.urlFile(t, "hang"), "--notify-slack-file", broken.urlFile(t, "broken"))
	t.Logf("revision 2 from push to Healthy: %s with a good receiver, %s with a hanging one and a failing one beside it",
		withGood.Round(time.Millisecond), withBad.Round(time.Millisecond))

	for _, c := range []struct {
		r  *notifyReceiver
		ns string
	}{{good, s1.ns}, {again, s2.ns}} {
		c.r.waitForNotice(t, "revision 2 Healthy notified", func(n notification) bool {
			return n.Namespace == c.ns && n.Revision == 2 && n.Phase == "Healthy"
		})
	}
	if len(hang.received()) == 0 || len(broken.received()) == 0 {
		t.Errorf("the bad receivers got %d and %d requests, want attempts at both", len(hang.received()), len(broken.received()))
	}
	// 6 attempts of at most 1 s each, 31 s of backoff between them.
	waitForWithin(t, "failed deliveries in /metrics", 3*time.Minute, func(context.Context) (bool, error) {
		lines := scrapeMetrics(t, d)
		return metricAtLeast(lines, `plimsoll_notifications_total{receiver="webhook/hang",result="failed"}`, 1) &&
			metricAtLeast(lines, `plimsoll_notifications_total{receiver="slack/broken",result="failed"}`, 1), nil
	})
	lines := scrapeMetrics(t, d)
	for _, l := range lines {
		if strings.HasPrefix(l, "plimsoll_notification") {
			t.Log(l)
		}
	}
	if !metricAtLeast(lines, `plimsoll_notification_retries_total{receiver="webhook/hang"}`, 5) ||
		!metricAtLeast(lines, `plimsoll_notifications_total{receiver="webhook/good",result="sent"}`, 2) {
		t.Error("want 5 retries of each failed notification, and the good receiver's notifications sent")
	}
	for _, want := range []string{`msg="notification not delivered" receiver=webhook/hang`, "no answer within 1s",
		`msg="notification not delivered" receiver=slack/broken`, "answered 500 Internal Server Error"} {
		if !strings.Contains(d.Log(), want) {
			t.Errorf("daemon log lacks %q", want)
		}
	}

	took := stopDaemon(t, d)
	t.Logf("daemon stopped %s after SIGTERM with a receiver hanging", took.Round(time.Millisecond))
	for _, text := range []string{d.Log(), strings.Join(hang.received(), "\n")} {
		if strings.Contains(text, notifyToken) {
			t.Error("the receivers' token shows in the daemon log or a body")
		}
	}
}

// timedCanary syncs examples/canary with steps that need no promote to a
// new namespace, runs a daemon with extra flags, and times revision 2
// from its push until it is Healthy.
func timedCanary(t *testing.T, extra ...string) (*syncTarget, *kit.Daemon, time.Duration) {
	t.Helper()
	steps := []string{`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "25%, 50%, 100%"`}
	s := newSyncTarget(t)
	s.repo.Commit("api v1", canaryExample(t, "v1", steps...))
	d := kit.StartDaemon(t, s, append([]string{"--interval", "1s"}, extra...)...)
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	start := time.Now()
	s.repo.Commit("api v2", canaryExample(t, "v2", steps...))
	waitForWithin(t, "revision 2 Healthy", 5*time.Minute, func(ctx context.Context) (bool, error) {
		api := getDeployment(t, s.ns, "api")
		return api != nil && phaseIs(2, "Healthy")(api), nil
	})
	return s, d, time.Since(start)
}

// metricAtLeast reports whether lines hold series at a value of at least
// want.
func metricAtLeast(lines []string, series string, want float64) bool {
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			var got float64
			_, err := fmt.Sscan(v, &got)
			return err == nil && got >= want
		}
	}
	return false
}

// stopDaemon sends d SIGTERM and waits (a minute at most) for it to exit
// cleanly; it returns how long that took.
func stopDaemon(t *testing.T, d *kit.Daemon) time.Duration {
	t.Helper()
	start := time.Now()
	if err := d.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stop the daemon: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("daemon exited with %v after SIGTERM:\n%s", err, d.Log())
		}
	case <-time.After(time.Minute):
		t.Fatalf("daemon still running a minute after SIGTERM")
	}
	return time.Since(start)
}

// TestNotifySyncOnce: a one-shot sync of a commit that does not parse
// exits non-zero, and its Failed notification has reached the receiver
// by the time it has exited.
func TestNotifySyncOnce(t *testing.T) {
	s := newSyncTarget(t)
	hook := newNotifyReceiver(t, answerOK)
	files := canaryExample(t, "v1")
	files["broken.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n"
	broken := s.repo.Commit("broken yaml", files)
	out, code := s.syncOnce(t, "--notify-webhook-file", hook.urlFile(t, "ci"))
	if code == 0 {
		t.Fatalf("sync --once of a broken commit exited 0:\n%s", out)
	}
	got := syncNotices(hook.notifications(t), "Failed", broken)
	if len(got) != 1 || !strings.Contains(got[0].Message, "broken.yaml") || got[0].Sync != s.ns {
		t.Fatalf("receiver has %+v, want one Failed notification of %s naming broken.yaml; output:\n%s", got, broken[:7], out)
	}
	if strings.Contains(out, notifyToken) {
		t.Errorf("sync --once output shows the receiver's token:\n%s", out)
	}
}
