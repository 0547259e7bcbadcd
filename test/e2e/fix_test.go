//go:build e2e

package e2e

import (
	"context"
	"testing"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestFixNotBlockedByFailingStable starts each strategy on a revision
// whose pods never become Ready (nothing to roll back to, so it keeps
// running, failing), then pushes a good one: each reaches Healthy on the
// new revision with no command, and the Service ends with 4 ready
// endpoints of it. A canary is judged on its own pods, a blue-green swap
// needs only the new color, and neither waits for the failing pods to
// recover.
func TestFixNotBlockedByFailingStable(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name, annotations string
		serving           string // the Deployment whose pods serve revision 2
	}{
		{"rolling", "", "web"},
		{"canary", adoptCanary, "web"},
		{"blue-green", adoptBlueGreen, "web-"}, // web-blue or web-green
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSyncTarget(t)
			s.repo.Commit("web broken", switchedExample(t, "does-not-exist", tc.annotations))
			kit.StartDaemon(t, s, "--interval", "1s")
			waitFor(t, "the broken pods to run, none Ready", func(context.Context) (bool, error) {
				ready, unready := podsByReadiness(t, s.ns, "app=web")
				return len(ready) == 0 && len(unready) >= 4, nil
			})
			endpoints := watchEndpoints(t, s.ns, "web")

			s.repo.Commit("web v2, the fix", switchedExample(t, "v2", tc.annotations))
			waitFor(t, "revision 2 Healthy on "+tc.serving+"*", func(context.Context) (bool, error) {
				for _, name := range []string{tc.serving, tc.serving + "blue", tc.serving + "green"} {
					if d := getDeployment(t, s.ns, name); d != nil && phaseIs(2, "Healthy")(d) && d.Annotations["plimsoll.dev/role"] != "idle" {
						return true, nil
					}
				}
				return false, nil
			})
			endpoints.waitReady(t, "4 endpoints of revision 2", func(pods []string) bool { return len(pods) == 4 })
			waitForReadyPods(t, s.ns, "app=web", 4)
			checkPods(t, s.ns, "app=web", 4, "registry.example/web:v2")
		})
	}
}
