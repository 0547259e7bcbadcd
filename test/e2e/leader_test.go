//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLeaderElection runs two daemons with --leader-elect on one sync: only
// the leader syncs (the standby is not ready and changes nothing); when the
// leader stops, the standby takes over and applies the next commit.
func TestLeaderElection(t *testing.T) {
	s := newSyncTarget(t)
	first := s.repo.commit("base", baseTree())
	leader := startDaemon(t, s, "--interval", "1s", "--leader-elect")
	s.waitForCommit(t, first)
	waitForPhase(t, s.ns, "web", "Healthy")

	standby := launchDaemon(t, s, "--interval", "1s", "--leader-elect")
	holdsFor(t, "the standby waiting", 4*time.Second, func(ctx context.Context) error {
		if strings.Contains(standby.log(), "became leader") {
			return fmt.Errorf("the standby became leader while the leader runs:\n%s", standby.log())
		}
		if standby.ready() {
			return fmt.Errorf("the standby answers /readyz with 200")
		}
		return nil
	})

	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	files := baseTree()
	files["config.yaml"] = strings.Replace(files["config.yaml"], "color: blue", "color: green", 1)
	second := s.repo.commit("paint it green", files)
	s.waitForCommit(t, second)
	if !strings.Contains(standby.log(), "became leader") {
		t.Errorf("commit applied but the standby never logged becoming leader:\n%s", standby.log())
	}
	standby.waitReady(t)
}
