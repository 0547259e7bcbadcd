//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
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
			s.repo.Commit(tt.name+" v1", tt.files(t, "v1"))
			d := kit.StartDaemon(t, s, "--interval", "1s")
			waitForDeployment(t, s.ns, tt.primary, "revision 1 Healthy", phaseIs(1, "Healthy"))
			v2 := s.repo.Commit(tt.name+" v2", tt.files(t, "v2"))
			waitForDeployment(t, s.ns, tt.primary, "revision 2 waiting for promote", phaseIs(2, tt.waiting[0], tt.waiting[1:]...))
			s.waitForCommit(t, v2)
			checkResyncQuiet(t, s, d)
		})
	}
}

// TestQuietPollsAfterSwap promotes a blue-green revision held for
// promote and checks that every poll from before the promote to after the
// swap is quiet: the swap writes the Service's selector, but as the
// rollout controller alone, which a full sync would keep as it is. A
// selector changed with kubectl still ends the quiet, and the full sync
// that follows puts Git's back, beside the active color.
func TestQuietPollsAfterSwap(t *testing.T) {
	s := newSyncTarget(t)
	s.repo.Commit("shop v1", manualBlueGreen(t, "v1"))
	d := kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "shop-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))
	v2 := s.repo.Commit("shop v2", manualBlueGreen(t, "v2"))
	waitForDeployment(t, s.ns, "shop-blue", "revision 2 waiting for promote", phaseIs(2, "Paused", "waiting for promote"))
	s.waitForCommit(t, v2)
	waitForQuietPolls(t, d, 2)

	t.Log("1. the swap of a promote: every poll stays quiet")
	syncs, quiet := metricSum(t, d, "plimsoll_sync_total"), metricSum(t, d, "plimsoll_sync_quiet_polls_total")
	command(t, s.ns, "shop-blue", "promote")
	waitFor(t, "Service shop to select green", func(ctx context.Context) (bool, error) {
		svc, err := suite.client.CoreV1().Services(s.ns).Get(ctx, "shop", metav1.GetOptions{})
		return err == nil && svc.Spec.Selector[contract.LabelColor] == "green", nil
	})
	waitForSyncs(t, d, 3)
	polls, quietPolls := metricSum(t, d, "plimsoll_sync_total")-syncs, metricSum(t, d, "plimsoll_sync_quiet_polls_total")-quiet
	if polls != quietPolls {
		t.Errorf("%v of %v polls across the swap were full syncs, want none", polls-quietPolls, polls)
	}

	t.Log("2. a selector changed with kubectl: a full sync puts Git's back")
	patch := []byte(`{"spec":{"selector":{"tier":"by-hand"}}}`)
	if _, err := suite.client.CoreV1().Services(s.ns).Patch(context.Background(), "shop", types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatalf("change Service shop's selector by hand: %v", err)
	}
	restored := fmt.Sprintf(`object="Service %s/shop" action=restore`, s.ns)
	waitFor(t, "the sync to restore Service shop", func(context.Context) (bool, error) {
		return strings.Contains(d.Log(), restored), nil
	})
	svc, err := suite.client.CoreV1().Services(s.ns).Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Selector["tier"] != "" || svc.Spec.Selector[contract.LabelColor] != "green" {
		t.Errorf("Service shop selects %v after the restore, want Git's selector and green", svc.Spec.Selector)
	}
}
