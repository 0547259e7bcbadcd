//go:build bench

package bench

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// helmChartDir is the folder of the helm comparison's chart in its
// repository: plimsoll renders it as a chart directory (release "chart"),
// Flux through a HelmRelease naming it.
const helmChartDir = "chart"

// helmChart is the helm comparison's chart: count ConfigMaps, cm-00000
// ..., each of the size of the sync comparison's (an index and 200 bytes
// of payload), the one named by changed with other data.
const helmChart = `{{- range $i := until (int .Values.count) }}
{{- $name := printf "cm-%05d" $i }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $name }}
data:
  index: {{ if eq $name $.Values.changed }}{{ printf "%d-changed" $i | quote }}{{ else }}{{ $i | quote }}{{ end }}
  payload: {{ $.Values.payload | quote }}
{{- end }}
`

// newHelmRepo commits the helm comparison's four trees, a chart in Git
// whose values say how many ConfigMaps it renders: seed (1, which a
// controller installs before anything is measured), cold (n), noop (a
// README changed: no object changes), change (n, one ConfigMap's data
// changed).
func newHelmRepo(t *testing.T, n int) *peerRepo {
	r := newPeerRepo(t)
	values := func(count int, changed string) map[string]string {
		return map[string]string{helmChartDir + "/values.yaml": fmt.Sprintf("count: %d\nchanged: %q\npayload: %q\n",
			count, changed, strings.Repeat("p", 200))}
	}
	seed := values(1, "")
	seed[helmChartDir+"/Chart.yaml"] = "apiVersion: v2\nname: bench\nversion: 1.0.0\n"
	seed[helmChartDir+"/templates/configmaps.yaml"] = helmChart
	r.commit("seed", "A chart of one ConfigMap", seed)
	r.commit("cold", fmt.Sprintf("The chart renders %d ConfigMaps", n), values(n, ""))
	r.commit("noop", "Change no object", noopFiles)
	r.commit("change", "Change one ConfigMap", values(n, "cm-00007"))
	return r
}

// helmRun takes one run of tool (plimsoll or Flux's helm-controller) on
// the helm comparison's repository: a namespace and a branch of its own,
// the chart installed at its seed, then the three measurements in order
// (see measureCommits), each from the push until the controller reports
// the commit applied: plimsoll its sync status, Flux its HelmRelease
// Ready with the chart built from the commit deployed.
func helmRun(t *testing.T, env peerEnv, cfg *rest.Config, client kubernetes.Interface, tool string, repo *peerRepo, n, run int) peerRecord {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := fmt.Sprintf("bench-helm-%s-%d", tool, run)
	defer freshNamespaces(t, client, ns)()
	rec := env.newRecord("helm", tool, n, run)
	proxy, work, kubeconfig := startProxyDir(t, cfg)
	defer proxy.Close()
	logPrefix := filepath.Join(env.logs, fmt.Sprintf("helm-%s-n%d-%d", ns, n, run))

	w := newHealthWatch()
	var procs procGroup
	repo.push("seed", ns)
	switch tool {
	case toolPlimsoll:
		watchSyncStatus(ctx, t, client, w)
		procs = startPlimsoll(t, env, logPrefix, repo.url, ns, ns, kubeconfig, work)
	case toolFlux:
		commits := slices.Collect(maps.Values(repo.commits))
		procs = env.flux.startHelm(ctx, t, cfg, kubeconfig, work, logPrefix, repo.url, ns, ns, "./"+helmChartDir, commits, w)
		defer dropFluxFinalizers(ctx, t, cfg, ns)
	default:
		t.Fatalf("no helm tool %q", tool)
	}
	defer procs.stop(t)
	m := &meter{t: t, ctx: ctx, client: client, proxy: proxy, procs: procs, watch: w}
	measureCommits(m, &rec, repo, ns, syncBound(n))
	rec.Load = append(rec.Load, loadAverage())
	return rec
}
