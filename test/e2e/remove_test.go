//go:build e2e

package e2e

import (
	"context"
	"maps"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestRemovedWorkloadTakesItsObjects removes a canary and a blue-green
// workload from Git while their Service stays, now backed by a plain
// Deployment web-plain with the same app label (added a commit before, and
// not selected while the strategy's key is in the selector): every
// Deployment of the workload is pruned (both colors, the canary), the
// Service's selector loses plimsoll's keys, and the Service never has fewer
// than 4 ready endpoints, which holds only if the keys went before the
// workload's pods: until then only they are selected.
func TestRemovedWorkloadTakesItsObjects(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name, annotations string
		deployments       []string // what the workload runs once revision 2 is Healthy
		first, second     string   // the Deployments that serve revisions 1 and 2
	}{
		{"canary", adoptCanary, []string{"web", "web-canary"}, "web", "web"},
		{"blue-green", adoptBlueGreen, []string{"web-blue", "web-green"}, "web-blue", "web-green"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSyncTarget(t)
			s.repo.Commit("web v1", switchedExample(t, "v1", tc.annotations))
			kit.StartDaemon(t, s, "--interval", "1s")
			waitForDeployment(t, s.ns, tc.first, "revision 1 Healthy", phaseIs(1, "Healthy"))
			v2 := switchedExample(t, "v2", tc.annotations)
			s.repo.Commit("web v2", v2)
			waitForDeployment(t, s.ns, tc.second, "revision 2 Healthy", phaseIs(2, "Healthy"))
			for _, name := range tc.deployments {
				if getDeployment(t, s.ns, name) == nil {
					t.Fatalf("Deployment %s does not run after revision 2", name)
				}
			}

			t.Log("web-plain joins, outside the Service while the strategy's key selects")
			plain := strings.Replace(example(t, "rolling")["deployment.yaml"], "  name: web\n  labels:", "  name: web-plain\n  labels:", 1)
			withPlain := maps.Clone(v2)
			withPlain["plain.yaml"] = strings.ReplaceAll(plain, "registry.example/web:v1", "registry.example/plain:v1")
			s.repo.Commit("web-plain", withPlain)
			waitForDeployment(t, s.ns, "web-plain", "revision 1 Healthy", phaseIs(1, "Healthy"))
			endpoints := watchEndpoints(t, s.ns, "web")
			endpoints.waitReady(t, "4 endpoints", func(pods []string) bool { return len(pods) == 4 && len(withPrefix(pods, "web-plain-")) == 0 })
			mark := endpoints.mark()

			t.Log("the workload leaves Git; its Service stays")
			s.repo.Commit("web leaves", map[string]string{"deployment.yaml": ""})
			waitFor(t, "every Deployment of web to be deleted", func(context.Context) (bool, error) {
				for _, name := range append([]string{"web"}, tc.deployments...) {
					if getDeployment(t, s.ns, name) != nil {
						return false, nil
					}
				}
				return true, nil
			})
			if sel := selector(t, s.ns, "web"); sel["plimsoll.dev/color"] != "" || sel["plimsoll.dev/serving"] != "" || sel["app"] != "web" {
				t.Errorf("Service web selects %v, want app=web without plimsoll's keys", sel)
			}
			endpoints.waitReady(t, "4 endpoints of web-plain", func(pods []string) bool { return len(pods) == 4 && len(withPrefix(pods, "web-plain-")) == 4 })
			checkMinReady(t, endpoints, mark, 4)
		})
	}
}

// TestRemovedBlueGreenWorkload removes two blue-green workloads from Git
// while their Services stay: web, annotated plimsoll.dev/prune: disabled,
// and shop. Before the sync, plimsoll diff shows shop's removal under its
// Git name (no Deployment of that name exists: its active color goes) and
// nothing of web; after it, shop's colors are gone, and web keeps its
// own, its Service's color key and its 4 ready endpoints.
func TestRemovedBlueGreenWorkload(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	files := mergeFiles(inDir("web", switchedExample(t, "v1", adoptBlueGreen+"    plimsoll.dev/prune: disabled\n")),
		inDir("shop", blueGreenExample(t, "v1", "2s")))
	first := s.repo.Commit("v1", files)
	d := kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "web-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))
	waitForDeployment(t, s.ns, "shop-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))
	s.waitForCommit(t, first)
	if err := d.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = d.Wait()
	colorBefore := selector(t, s.ns, "web")["plimsoll.dev/color"]
	var webColors []string
	for _, name := range []string{"web-blue", "web-green"} {
		if getDeployment(t, s.ns, name) != nil {
			webColors = append(webColors, name)
		}
	}

	t.Log("both workloads leave Git; their Services stay")
	files = maps.Clone(files)
	files["web/deployment.yaml"], files["shop/deployment.yaml"] = "", ""
	left := s.repo.Commit("web and shop leave", files)
	out, code := runPlimsoll(t, append([]string{"diff"}, s.flags()...)...)
	t.Logf("plimsoll diff (exit %d):\n%s", code, out)
	if code != 1 || !strings.Contains(out, "--- a/apps/Deployment "+s.ns+"/shop") || !strings.Contains(out, "-  name: shop\n") ||
		!strings.Contains(out, "1 object would change") {
		t.Errorf("diff exited %d; want 1, and shop's removal under its own name, the one change", code)
	}
	if strings.Contains(out, "Deployment "+s.ns+"/web") || strings.Contains(out, "shop-blue") {
		t.Errorf("diff shows web, which the prune keeps, or a color's name")
	}

	endpoints := watchEndpoints(t, s.ns, "web")
	endpoints.waitReady(t, "4 endpoints", func(pods []string) bool { return len(pods) == 4 })
	mark := endpoints.mark()
	kit.StartDaemon(t, s, "--interval", "1s")
	s.waitForCommit(t, left)
	waitFor(t, "shop's colors to be deleted", func(context.Context) (bool, error) {
		return getDeployment(t, s.ns, "shop-blue") == nil && getDeployment(t, s.ns, "shop-green") == nil, nil
	})
	for _, name := range webColors {
		if getDeployment(t, s.ns, name) == nil {
			t.Errorf("Deployment %s, of a workload the prune keeps, was deleted", name)
		}
	}
	if got := selector(t, s.ns, "web")["plimsoll.dev/color"]; got != colorBefore {
		t.Errorf("Service web selects color %q, want %q as before", got, colorBefore)
	}
	checkMinReady(t, endpoints, mark, 4)
	if out, code := runPlimsoll(t, append([]string{"diff"}, s.flags()...)...); code != 0 {
		t.Errorf("diff after the sync exited %d, want 0:\n%s", code, out)
	}
}
