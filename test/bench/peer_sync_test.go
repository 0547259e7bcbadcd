//go:build bench

package bench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/proc"
)

// The tools of the sync and scale comparisons, as their rows name them.
const (
	toolPlimsoll = "plimsoll"
	toolOnce     = "plimsoll sync --once"
	toolFlux     = "flux"
	toolKubectl  = "kubectl"
	toolArgo     = "argo-rollouts"
)

// The commits of the sync comparison, each the name of its measurement
// but the first: seed (one ConfigMap, which a controller applies before
// anything is measured), cold (N ConfigMaps more), noop (a README
// changed: no object changes), change (one ConfigMap's data changed).
var syncPhases = []string{"cold", "noop", "change"}

// peerPhase is one measurement of one tool. For a controller it runs from
// the push of a commit until the controller reports it applied (or its
// workloads Healthy); for a command, from its start to its exit.
type peerPhase struct {
	Seconds       float64       `json:"seconds"` // the bound when not finished
	Finished      bool          `json:"finished"`
	FirstSeconds  float64       `json:"firstSeconds,omitempty"`  // the first workload Healthy
	MedianSeconds float64       `json:"medianSeconds,omitempty"` // the median workload Healthy
	CPUSeconds    float64       `json:"cpuSeconds"`
	PeakRSSKiB    int64         `json:"peakRSSKiB"`
	RSSKiB        int64         `json:"rssKiB,omitempty"` // at the end of the phase
	Requests      requestCounts `json:"requests"`         // the tool's own, counted by its proxy
	All           requestCounts `json:"all"`              // every client's, from apiserver_request_total
}

// peerRecord is one run of one tool in the sync or scale comparison.
type peerRecord struct {
	Part    string               `json:"part"` // sync or scale
	Tool    string               `json:"tool"`
	Version string               `json:"version"`
	N       int                  `json:"n"`
	Run     int                  `json:"run"`
	Date    string               `json:"date"`
	Load    []float64            `json:"loadAverage"`
	Phases  map[string]peerPhase `json:"phases"`
}

// newSyncRepo commits the sync comparison's four trees of n ConfigMaps.
func newSyncRepo(t *testing.T, n int) *peerRepo {
	r := newPeerRepo(t)
	r.commit("seed", "One ConfigMap", map[string]string{
		"seed.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\ndata:\n  k: v\n",
	})
	r.commit("cold", fmt.Sprintf("%d ConfigMaps", n), configMapFiles(n, ""))
	r.commit("noop", "Change no object", noopFiles)
	r.commit("change", "Change one ConfigMap", configMapFiles(n, "cm-00007"))
	return r
}

// syncBound bounds one sync measurement of n objects: 5 minutes and
// 100 ms per object, 13 minutes for 5,000.
func syncBound(n int) time.Duration { return 5*time.Minute + time.Duration(n)*100*time.Millisecond }

// syncRun takes one run of tool on the sync comparison's repository: a
// namespace and a branch of its own, the three measurements in order.
func syncRun(t *testing.T, env peerEnv, cfg *rest.Config, client kubernetes.Interface, tool string, repo *peerRepo, n, run int) peerRecord {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := fmt.Sprintf("bench-sync-%s-%d", strings.Fields(tool)[0], run)
	if tool == toolOnce {
		ns += "-once"
	}
	defer freshNamespaces(t, client, ns)()
	rec := env.newRecord("sync", tool, n, run)
	proxy, work, kubeconfig := startProxyDir(t, cfg)
	defer proxy.Close()
	logPrefix := filepath.Join(env.logs, fmt.Sprintf("sync-%s-n%d-%d", ns, n, run))
	bound := syncBound(n)

	switch tool {
	case toolPlimsoll, toolFlux:
		w := newHealthWatch()
		var procs procGroup
		repo.push("seed", ns)
		if tool == toolPlimsoll {
			watchSyncStatus(ctx, t, client, w)
			procs = startPlimsoll(t, env, logPrefix, repo.url, ns, ns, kubeconfig, work)
		} else {
			procs = env.flux.start(ctx, t, cfg, kubeconfig, work, logPrefix, repo.url, ns, ns, ns, w)
			defer dropFluxFinalizers(ctx, t, cfg, ns)
		}
		defer procs.stop(t)
		m := &meter{t: t, ctx: ctx, client: client, proxy: proxy, procs: procs, watch: w}
		measureCommits(m, &rec, repo, ns, bound)
	case toolOnce, toolKubectl:
		cache := filepath.Join(work, "cache")
		for _, phase := range syncPhases {
			var bin string
			var args []string
			if tool == toolOnce {
				repo.push(phase, ns)
				bin, args = env.bin, []string{"sync", "--once", "--repo", repo.url, "--branch", ns, "--kubeconfig", kubeconfig,
					"--namespace", ns, "--status-namespace", ns, "--sync-name", syncName, "--cache-dir", cache}
			} else {
				bin, args = env.kubectl, []string{"--kubeconfig", kubeconfig, "--cache-dir", cache, "apply", "--server-side",
					"--field-manager", "bench", "-n", ns, "--recursive", "-f", repo.export(t, phase), "-o", "name"}
			}
			beforeAPI, err := scrapeRequests(ctx, client)
			if err != nil {
				t.Fatal(err)
			}
			beforeProxy := proxy.Snapshot()
			p := runMeasured(t, bin, args...)
			afterAPI, err := scrapeRequests(ctx, client)
			if err != nil {
				t.Fatal(err)
			}
			p.Requests, p.All = proxy.Snapshot().Minus(beforeProxy), afterAPI.Minus(beforeAPI)
			rec.Phases[phase] = p
			t.Logf("sync %s N=%d run %d %s: %s", tool, n, run, phase, p.summary())
		}
	default:
		t.Fatalf("no sync tool %q", tool)
	}
	rec.Load = append(rec.Load, loadAverage())
	return rec
}

// startPlimsoll starts `plimsoll run` following branch of the repository
// at url into namespace ns, through kubeconfig, polling every
// pollInterval; its log goes to logPrefix.log.
func startPlimsoll(t *testing.T, env peerEnv, logPrefix, url, branch, ns, kubeconfig, work string) procGroup {
	return procGroup{kit.Start(t, kit.Process{Bin: env.bin, Log: logPrefix + ".log", Args: []string{"run", "--repo", url, "--branch", branch,
		"--interval", pollInterval, "--listen", "127.0.0.1:0", "--kubeconfig", kubeconfig, "--namespace", ns,
		"--status-namespace", ns, "--sync-name", syncName, "--cache-dir", filepath.Join(work, "cache")}})}
}

// measureCommits waits for the controller m measures to apply the seed
// commit of repo, already pushed to branch, then pushes the commits of
// syncPhases one at a time, after settle each, and measures each from its
// push until the controller reports it applied (m.watch), within bound,
// into rec.
func measureCommits(m *meter, rec *peerRecord, repo *peerRepo, branch string, bound time.Duration) {
	t, w := m.t, m.watch
	if !w.waitApplied(t, m.procs, repo.commits["seed"], bound) {
		t.Fatalf("%s did not apply the seed commit within %s", rec.Tool, bound)
	}
	for _, phase := range syncPhases {
		time.Sleep(settle)
		before := m.read(true)
		start := time.Now()
		commit := repo.push(phase, branch)
		done := w.waitApplied(t, m.procs, commit, bound)
		after := m.read(false)
		p := m.between(before, after)
		p.Finished, p.Seconds = done, bound.Seconds()
		if at, ok := w.appliedAt(commit); ok && done {
			p.Seconds = at.Sub(start).Seconds()
		}
		rec.Phases[phase] = p
		t.Logf("%s %s N=%d run %d %s: %s", rec.Part, rec.Tool, rec.N, rec.Run, phase, p.summary())
	}
}

// newRecord starts the record of a run of tool in part.
func (e peerEnv) newRecord(part, tool string, n, run int) peerRecord {
	return peerRecord{Part: part, Tool: tool, Version: e.versions[tool], N: n, Run: run,
		Date: time.Now().UTC().Format(time.RFC3339), Load: []float64{loadAverage()}, Phases: map[string]peerPhase{}}
}

// between is what the controller did between two readings, but its time.
func (m *meter) between(before, after reading) peerPhase {
	return peerPhase{
		CPUSeconds: after.cpu - before.cpu, PeakRSSKiB: after.peakRSS, RSSKiB: after.rss,
		Requests: after.daemon.Minus(before.daemon), All: after.api.Minus(before.api),
	}
}

// runMeasured runs bin to the end and measures its wall time, CPU and
// peak RSS (see proc.RunPeak).
func runMeasured(t *testing.T, bin string, args ...string) peerPhase {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	peak, err := proc.RunPeak(cmd, rssPoll)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, tail(out.String()))
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return peerPhase{Seconds: time.Since(start).Seconds(), Finished: true, CPUSeconds: cpu.Seconds(), PeakRSSKiB: peak}
}

// summary is one line on a measurement.
func (p peerPhase) summary() string {
	s := fmt.Sprintf("%s, CPU %.1f s, peak RSS %d MiB, requests %d (all clients %d)",
		seconds(p.Seconds), p.CPUSeconds, p.PeakRSSKiB/1024, p.Requests.Total(), p.All.Total())
	if !p.Finished {
		s = "did not finish in " + s
	}
	return s
}
