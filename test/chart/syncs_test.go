//go:build e2e

package chart

import (
	"slices"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestChartSyncs: with syncs.enabled the replicas share the syncs (no
// leader election, a rolling update), the daemon takes declarations from
// the release namespace, and the chart's own declared syncs are rendered
// as declarations.
func TestChartSyncs(t *testing.T) {
	objs := render(t, "syncs.enabled=true", "replicas=3", "syncs.workers=8",
		"syncs.declared.team-a.repository=https://git.example/team-a.git", "syncs.declared.team-a.serviceAccount=team-a/deployer")
	d := deployment(t, objs)
	args := d.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--syncs-namespace=plimsoll-system", "--sync-workers=8"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %q", args, want)
		}
	}
	if slices.Contains(args, "--leader-elect") || d.Spec.Replicas != 3 || d.Spec.Strategy.Type != "RollingUpdate" {
		t.Errorf("3 replicas sharing syncs: args %v, replicas %d, strategy %q; want no --leader-elect and a rolling update",
			args, d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	declared := false
	for _, o := range objs {
		declared = declared || (o.Kind == "ConfigMap" && o.Metadata.Name == "team-a" && o.Metadata.Namespace == "plimsoll-system")
	}
	if !declared {
		t.Error("syncs.declared.team-a rendered no declaration team-a in the release namespace")
	}
	out, err := kit.Helm(t, "template", "plimsoll", "charts/plimsoll", "--set", "repo.url="+repoURL,
		"--set", "syncs.declared.team-a.repository=https://git.example/a.git", "--set", "syncs.declared.team-a.serviceAccount=team-a/deployer")
	if err == nil || !strings.Contains(err.Error(), "syncs.enabled is false") {
		t.Errorf("declared syncs without syncs.enabled: err %v, output %q", err, out)
	}
}
