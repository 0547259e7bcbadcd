//go:build bench

package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// scalePhases are the measurements of a scale run, in order.
var scalePhases = []string{"initial", "idle", "noop", "rolled"}

// newScaleRepo commits the scale comparison's three trees: n rolling
// workloads of scaleReplicas pods at imageV1 (initial), a README changed
// (noop), every image at imageV2 (rolled).
func newScaleRepo(t *testing.T, n int) *peerRepo {
	r := newPeerRepo(t)
	r.commit("initial", fmt.Sprintf("%d rolling workloads at %s", n, imageV1), workloadFiles(rolling, n, imageV1))
	r.commit("noop", "Change no object", noopFiles)
	r.commit("rolled", fmt.Sprintf("Roll the %d workloads to %s", n, imageV2), workloadFiles(rolling, n, imageV2))
	return r
}

// scaleRun takes one run of tool (plimsoll or Flux) on the scale
// comparison's repository: the n workloads from nothing to Healthy
// (initial), idleWindow of idle with them (idle: CPU, and RSS at the end),
// a commit that changes no object (noop: until the controller reports it
// applied), and a commit that rolls them all (rolled: until all are
// Healthy at the new image).
func scaleRun(t *testing.T, env peerEnv, cfg *rest.Config, client kubernetes.Interface, tool string, repo *peerRepo, n, run int) peerRecord {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer freshNamespaces(t, client, statusNamespace, rollingNamespace)()
	rec := env.newRecord("scale", tool, n, run)
	proxy, work, kubeconfig := startProxyDir(t, cfg)
	defer proxy.Close()
	logPrefix := filepath.Join(env.logs, fmt.Sprintf("scale-%s-n%d-%d", tool, n, run))
	branch := fmt.Sprintf("scale-%s-%d", tool, run)
	repo.push("initial", branch)

	w := newHealthWatch()
	ss := []strategy{rolling}
	var procs procGroup
	switch tool {
	case toolPlimsoll:
		watchPlimsoll(ctx, t, client, w, ss)
		procs = procGroup{kit.Start(t, kit.Process{Bin: env.bin, Log: logPrefix + ".log", Args: []string{"run", "--repo", repo.url, "--branch", branch,
			"--interval", pollInterval, "--listen", "127.0.0.1:0", "--kubeconfig", kubeconfig, "--namespace", statusNamespace,
			"--status-namespace", statusNamespace, "--sync-name", syncName, "--cache-dir", filepath.Join(work, "cache")}})}
	case toolFlux:
		watchNative(ctx, t, client, w, ss)
		procs = env.flux.start(ctx, t, cfg, kubeconfig, work, logPrefix, repo.url, branch, statusNamespace, "", w)
		defer dropFluxFinalizers(ctx, t, cfg, statusNamespace)
	default:
		t.Fatalf("no scale tool %q", tool)
	}
	defer procs.stop(t)
	m := &meter{t: t, ctx: ctx, client: client, proxy: proxy, procs: procs, watch: w}
	report := func(name string, p peerPhase) {
		rec.Phases[name] = p
		t.Logf("scale %s N=%d run %d %s: %s", tool, n, run, name, p.summary())
	}

	before := m.read(false)
	bound := scaleBound(n)
	done := w.waitHealthy(t, procs, ss, n, 1, bound)
	report("initial", fromPhaseRecord(m.phase(before, procs.started(), n, done, bound, "", ss, 1)))
	if !done {
		return rec
	}

	time.Sleep(settle)
	before = m.read(true)
	time.Sleep(idleWindow)
	after := m.read(false)
	idle := m.between(before, after)
	idle.Seconds, idle.Finished = after.at.Sub(before.at).Seconds(), true
	report("idle", idle)

	before = m.read(true)
	start := time.Now()
	commit := repo.push("noop", branch)
	done = w.waitApplied(t, procs, commit, syncBound(n))
	after = m.read(false)
	noop := m.between(before, after)
	noop.Finished, noop.Seconds = done, syncBound(n).Seconds()
	if at, ok := w.appliedAt(commit); ok && done {
		noop.Seconds = at.Sub(start).Seconds()
	}
	report("noop", noop)

	time.Sleep(settle)
	before = m.read(true)
	start = time.Now()
	repo.push("rolled", branch)
	done = w.waitHealthy(t, procs, ss, n, 2, bound)
	report("rolled", fromPhaseRecord(m.phase(before, start, n, done, bound, "", ss, 2)))
	rec.Load = append(rec.Load, loadAverage())
	return rec
}

// scaleBound bounds the scale comparison's rollouts of n workloads:
// 10 minutes and 2 s per workload, 43 minutes for 1,000.
func scaleBound(n int) time.Duration { return 10*time.Minute + time.Duration(n)*2*time.Second }

// fromPhaseRecord is a rollout's measurement as the comparisons keep it.
func fromPhaseRecord(p phaseRecord) peerPhase {
	return peerPhase{
		Seconds: p.TotalSeconds, Finished: p.Finished, FirstSeconds: p.FirstSeconds, MedianSeconds: p.MedianSeconds,
		CPUSeconds: p.CPUSeconds, PeakRSSKiB: p.PeakRSSKiB, Requests: p.Daemon, All: p.API,
	}
}
