//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestLeaderElection runs two daemons with --leader-elect on one sync, an
// hour apart between polls: only the leader syncs; the standby is ready,
// changes nothing by itself, and passes a push hook it receives on to the
// leader, which applies the new commit at once. When the leader stops, the
// standby takes over and applies the next commit.
func TestLeaderElection(t *testing.T) {
	s := newSyncTarget(t)
	secretFile := filepath.Join(t.TempDir(), "hook-secret")
	if err := os.WriteFile(secretFile, []byte("hook-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--interval", "1h", "--leader-elect", "--webhook-secret-file", secretFile}
	first := s.repo.Commit("base", baseTree())
	leader := kit.StartDaemon(t, s, flags...)
	s.waitForCommit(t, first)
	waitForPhase(t, s.ns, "web", "Healthy")

	standby := kit.StartDaemon(t, s, flags...) // ready as a standby
	files := baseTree()
	files["config.yaml"] = strings.Replace(files["config.yaml"], "color: blue", "color: green", 1)
	green := s.repo.Commit("paint it green", files)
	holdsFor(t, "the standby waiting", 3*time.Second, func(ctx context.Context) error {
		if strings.Contains(standby.Log(), "became leader") {
			return fmt.Errorf("the standby became leader while the leader runs:\n%s", standby.Log())
		}
		if c := s.status(t)["plimsoll.dev/commit"]; c != first {
			return fmt.Errorf("commit %s applied without a poll or a hook", c)
		}
		return nil
	})

	start := time.Now()
	if code := postHook(t, standby, "hook-s3cret"); code != http.StatusAccepted {
		t.Fatalf("signed hook to the standby: status %d, want 202", code)
	}
	s.waitForCommit(t, green)
	t.Logf("hook to the standby: commit applied by the leader in %s", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(leader.Log(), "sync requested on the sync record") {
		t.Errorf("the leader did not log the request:\n%s", leader.Log())
	}

	// The commit goes in before the leader stops: the leader polls once an
	// hour, so only the standby's first sync as the new leader applies it.
	// (Pushed after the stop, it could land just after that first sync
	// and wait for the next poll.)
	files["config.yaml"] = strings.Replace(files["config.yaml"], "color: green", "color: red", 1)
	red := s.repo.Commit("paint it red", files)
	if err := leader.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.waitForCommit(t, red)
	if !strings.Contains(standby.Log(), "became leader") {
		t.Errorf("commit applied but the standby never logged becoming leader:\n%s", standby.Log())
	}
	standby.WaitReady(t)
}
