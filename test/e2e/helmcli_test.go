//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestHelmChartDiffStatus checks that plimsoll diff and plimsoll status
// show a chart's objects like any others: a values change in Git diffs
// exactly the objects it changes (the ConfigMap through the sync's
// dry-run, the Deployment as the rollout controller would write it), not
// the chart's other objects, its CRD, custom resource or dependency's; a
// chart version that changes no object diffs nothing; and the sync status
// names the chart and the version applied, its Deployment listed as a
// workload.
func TestHelmChartDiffStatus(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	first := s.repo.Commit("shop chart 1.0.0", merge(shopChart(s.ns), shopRelease("")))
	s.mustSync(t, "--path", "apps", "--wait")

	t.Log("1. status: the chart and its version in the sync's message, its Deployment a workload")
	checkStatus(t, s, first, "charts: shop (shop 1.0.0)")
	if out, code := runPlimsoll(t, append([]string{"diff"}, s.flags("--path", "apps")...)...); code != 0 || strings.TrimSpace(out) != "" {
		t.Fatalf("diff of the chart as applied: exit %d, want 0 and nothing:\n%s", code, out)
	}

	t.Log("2. a values change: diff shows the ConfigMap and the Deployment it changes, nothing else")
	second := s.repo.Commit("hallo, v2", map[string]string{"apps/values/shop.yaml": "greeting: hallo\nimage: registry.example/shop:v2\n"})
	out, code := runPlimsoll(t, append([]string{"diff"}, s.flags("--path", "apps")...)...)
	t.Logf("plimsoll diff (exit %d):\n%s", code, out)
	if code != 1 {
		t.Errorf("diff of a values change exited %d, want 1", code)
	}
	for _, want := range []string{
		"--- a/ConfigMap " + s.ns + "/shop-config", "-  greeting: bonjour", "+  greeting: hallo",
		"--- a/apps/Deployment " + s.ns + "/shop", "-      - image: registry.example/shop:v1", "+      - image: registry.example/shop:v2",
		"2 objects would change",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff does not show %q", want)
		}
	}
	for _, unchanged := range []string{"shop-static", "shop-cache", "Service " + s.ns + "/shop", "Widget", "CustomResourceDefinition"} {
		if strings.Contains(out, unchanged) {
			t.Errorf("diff shows %s, which the values change leaves alone", unchanged)
		}
	}
	s.mustSync(t, "--path", "apps", "--wait")
	checkStatus(t, s, second, "charts: shop (shop 1.0.0)")

	t.Log("3. a new chart version that changes no object: nothing to diff, the status names it once applied")
	third := s.repo.Commit("shop chart 1.1.0", map[string]string{"charts/shop/Chart.yaml": "apiVersion: v2\nname: shop\nversion: 1.1.0\n"})
	if out, code := runPlimsoll(t, append([]string{"diff"}, s.flags("--path", "apps")...)...); code != 0 || strings.TrimSpace(out) != "" {
		t.Errorf("diff of a chart version that changes no object: exit %d, want 0 and nothing:\n%s", code, out)
	}
	s.mustSync(t, "--path", "apps")
	checkStatus(t, s, third, "charts: shop (shop 1.1.0)")
}

// checkStatus checks what plimsoll status says of the sync and of the
// chart's Deployment shop: the sync Synced at commit, its message holding
// charts, and shop a rolling workload, in the table and in JSON.
func checkStatus(t *testing.T, s *syncTarget, commit, charts string) {
	t.Helper()
	table, code := runPlimsoll(t, append([]string{"status", "--sync-name", s.ns}, s.cliFlags()...)...)
	t.Logf("plimsoll status:\n%s", table)
	for _, want := range []string{"shop", "rolling", "Synced", commit[:7], charts} {
		if code != 0 || !strings.Contains(table, want) {
			t.Errorf("status table (exit %d) does not show %q", code, want)
		}
	}
	out, code := runPlimsoll(t, append([]string{"status", "-o", "json", "--sync-name", s.ns}, s.cliFlags()...)...)
	var report struct {
		Workloads []struct{ Name, Strategy string }
		Syncs     []struct{ Status, Commit, Message string }
	}
	if err := json.Unmarshal([]byte(out), &report); code != 0 || err != nil {
		t.Fatalf("status -o json exited %d (%v):\n%s", code, err, out)
	}
	if len(report.Workloads) != 1 || report.Workloads[0].Name != "shop" || report.Workloads[0].Strategy != "rolling" {
		t.Errorf("status lists workloads %+v, want the chart's Deployment shop, rolling", report.Workloads)
	}
	if len(report.Syncs) != 1 || report.Syncs[0].Status != "Synced" || report.Syncs[0].Commit != commit || !strings.Contains(report.Syncs[0].Message, charts) {
		t.Errorf("status of the sync %+v, want Synced at %s, its message holding %q", report.Syncs, commit[:7], charts)
	}
}
