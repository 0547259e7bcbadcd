//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestCanaryRolloutsNeverFailTheSync rolls examples/canary through five
// revisions (steps "25%, 50%, 100%", no pause) with a daemon polling every
// second, so that the sync and the rollout controller write the same
// workload's objects at the same time again and again. A conflict between
// them is retried on fresh state: no sync fails, no SyncFailed Event.
func TestCanaryRolloutsNeverFailTheSync(t *testing.T) {
	s := newSyncTarget(t)
	steps := []string{`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "25%, 50%, 100%"`}
	s.repo.Commit("api v1", canaryExample(t, "v1", steps...))
	d := kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	for revision := 2; revision <= 6; revision++ {
		version := fmt.Sprintf("v%d", revision)
		s.repo.Commit("api "+version, canaryExample(t, version, steps...))
		waitForDeployment(t, s.ns, "api", "revision "+fmt.Sprint(revision)+" Healthy", phaseIs(revision, "Healthy"))
	}
	failed := 0
	for _, e := range s.events(t) {
		if e.Reason == "SyncFailed" {
			failed += int(e.Count)
			t.Errorf("SyncFailed Event (%d times): %s", e.Count, e.Message)
		}
	}
	if failed > 0 || strings.Contains(d.Log(), "sync failed") {
		t.Errorf("%d failed syncs over five canary rollouts; daemon log:\n%s", failed, d.Log())
	}
}
