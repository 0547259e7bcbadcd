//go:build e2e

package e2e

import (
	"testing"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestQuietPollsInFlight holds a canary and a blue-green revision in
// flight, each waiting for promote, and checks that polls of the unchanged
// commit leave them alone: the sync handed the Deployments over once, and
// what the rollout controller serves meanwhile is no drift. Three polls
// write no object, record no Synced Event and log no "applied" line.
func TestQuietPollsInFlight(t *testing.T) {
	tests := []struct {
		name, primary string
		files         func(t *testing.T, version string) map[string]string
		waiting       []string // the phase words of the held revision 2
	}{
		{"canary", "api", func(t *testing.T, v string) map[string]string { return canaryExample(t, v) }, []string{"Paused", "canary step 2/5"}},
		{"blue-green", "shop-blue", manualBlueGreen, []string{"Paused", "waiting for promote"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSyncTarget(t)
			s.repo.commit(tt.name+" v1", tt.files(t, "v1"))
			d := kit.StartDaemon(t, s, "--interval", "1s")
			waitForDeployment(t, s.ns, tt.primary, "revision 1 Healthy", phaseIs(1, "Healthy"))
			v2 := s.repo.commit(tt.name+" v2", tt.files(t, "v2"))
			waitForDeployment(t, s.ns, tt.primary, "revision 2 waiting for promote", phaseIs(2, tt.waiting[0], tt.waiting[1:]...))
			s.waitForCommit(t, v2)
			checkResyncQuiet(t, s, d)
		})
	}
}
