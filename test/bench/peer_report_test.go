//go:build bench

package bench

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Where the comparison keeps its results, under the repository root.
const (
	peerResultsFile = "bench/peers-results.json"
	resultsFile     = "bench/results.md"
	rolloutPlotFile = "bench/rollout-time.svg"
	syncPlotFile    = "bench/sync-time.svg"
)

// The targets of the comparison: plimsoll's time and memory at most half
// a peer's, its idle CPU at most twice the best peer's.
const (
	targetRatio     = 0.5
	targetIdleRatio = 2.0
)

// peerResults is bench/peers-results.json: every run of the comparison.
type peerResults struct {
	Note    string          `json:"note,omitempty"`
	Rollout []rolloutRecord `json:"rollout"`
	Peers   []peerRecord    `json:"peers"` // the sync and scale comparisons
}

func loadPeerResults(t *testing.T, root string) *peerResults {
	r := &peerResults{}
	loadJSON(t, filepath.Join(root, peerResultsFile), r)
	return r
}

// save writes the results, their section of bench/results.md and the
// plots.
func (r *peerResults) save(t *testing.T, root string) {
	saveJSON(t, filepath.Join(root, peerResultsFile), r)
	for path, content := range map[string][]byte{
		rolloutPlotFile: []byte(r.rolloutPlot()),
		syncPlotFile:    []byte(r.syncPlot()),
	} {
		if err := os.WriteFile(filepath.Join(root, path), content, 0o644); err != nil {
			t.Fatalf("write %s: %v", path, err)
		}
	}
	writeSection(t, filepath.Join(root, resultsFile), "peers", r.render())
}

// dropRollout forgets the rollout runs of n workloads, which a new
// measurement replaces, but those kept: the runs the tools made as they
// are now (see keeps).
func (r *peerResults) dropRollout(n int, kept map[string]string) {
	r.Rollout = slices.DeleteFunc(r.Rollout, func(rec rolloutRecord) bool {
		return rec.N == n && kept[rec.Label] != rec.Binary
	})
}

// drop forgets the runs of part at size n, but those kept (see
// dropRollout).
func (r *peerResults) drop(part string, n int, kept map[string]string) {
	r.Peers = slices.DeleteFunc(r.Peers, func(rec peerRecord) bool {
		return rec.Part == part && rec.N == n && kept[rec.Tool] != rec.Version
	})
}

// hasRollout reports whether tool's run of n workloads is recorded.
func (r *peerResults) hasRollout(tool string, n, run int) bool {
	return slices.ContainsFunc(r.Rollout, func(rec rolloutRecord) bool {
		return rec.Label == tool && rec.N == n && rec.Run == run
	})
}

// has reports whether tool's run of part at size n is recorded.
func (r *peerResults) has(part, tool string, n, run int) bool {
	return slices.ContainsFunc(r.Peers, func(rec peerRecord) bool {
		return rec.Part == part && rec.Tool == tool && rec.N == n && rec.Run == run
	})
}

// phasesOf is what a tool measured at size n in part, phase by phase over
// its runs. A rollout run gives the phases canary, blue-green, initial
// and idle.
func (r *peerResults) phasesOf(part, tool string, n int, phase string) []peerPhase {
	var out []peerPhase
	if part == "rollout" {
		for _, rec := range r.Rollout {
			if rec.Label != tool || rec.N != n {
				continue
			}
			switch phase {
			case "canary":
				out = appendWorkloads(out, rec.Canary)
			case "blue-green":
				out = appendWorkloads(out, rec.BlueGreen)
			case "initial":
				out = appendWorkloads(out, rec.Initial)
			case "idle":
				if rec.Idle.Seconds > 0 {
					out = append(out, peerPhase{Seconds: rec.Idle.Seconds, Finished: true, CPUSeconds: rec.Idle.CPUSeconds,
						PeakRSSKiB: rec.PeakRSSKiB, Requests: rec.Idle.Daemon, All: rec.Idle.API})
				}
			}
		}
		return out
	}
	for _, rec := range r.Peers {
		if p, ok := rec.Phases[phase]; ok && rec.Part == part && rec.Tool == tool && rec.N == n {
			out = append(out, p)
		}
	}
	return out
}

func appendWorkloads(out []peerPhase, p phaseRecord) []peerPhase {
	if p.Workloads == 0 {
		return out
	}
	return append(out, fromPhaseRecord(p))
}

// sizes lists the sizes measured in part, ascending.
func (r *peerResults) sizes(part string) []int {
	var ns []int
	if part == "rollout" {
		for _, rec := range r.Rollout {
			ns = append(ns, rec.N)
		}
	}
	for _, rec := range r.Peers {
		if rec.Part == part {
			ns = append(ns, rec.N)
		}
	}
	slices.Sort(ns)
	return slices.Compact(ns)
}

// measure is one row of a comparison: how to read a value off a
// measurement, how to print it, and whether it has a target.
type measure struct {
	name   string
	value  func(peerPhase) float64
	format func(float64) string
	target float64 // the ratio plimsoll / peer must not exceed; 0: none
	timed  bool    // a time: an unfinished run counts as longer than any
}

var (
	allDone     = measure{"all done", func(p peerPhase) float64 { return p.Seconds }, seconds, targetRatio, true}
	firstDone   = measure{"first done", func(p peerPhase) float64 { return orNaN(p.FirstSeconds) }, seconds, targetRatio, false}
	medianDone  = measure{"median done", func(p peerPhase) float64 { return orNaN(p.MedianSeconds) }, seconds, targetRatio, false}
	applied     = measure{"commit to applied", func(p peerPhase) float64 { return p.Seconds }, seconds, targetRatio, true}
	cpuSeconds  = measure{"CPU", func(p peerPhase) float64 { return p.CPUSeconds }, cpuCell, 0, false}
	peakRSS     = measure{"peak RSS", func(p peerPhase) float64 { return float64(p.PeakRSSKiB) }, mib, targetRatio, false}
	idleRSS     = measure{"RSS at idle", func(p peerPhase) float64 { return float64(p.RSSKiB) }, mib, targetRatio, false}
	ownRequests = measure{"API requests, own", func(p peerPhase) float64 { return float64(p.Requests.Total()) }, count, 0, false}
	allRequests = measure{"API requests, all clients", func(p peerPhase) float64 { return float64(p.All.Total()) }, count, 0, false}
	idleCPU     = measure{"idle CPU / min", func(p peerPhase) float64 { return p.CPUSeconds * 60 / p.Seconds }, idleCPUCell, targetIdleRatio, false}
)

// row renders one measure of plimsoll's phases ps against a peer's qs:
// both medians, the ratio and the target.
func row(prefix string, m measure, ps, qs []peerPhase) string {
	a, aCell := medianCellOf(m, ps)
	b, bCell := medianCellOf(m, qs)
	ratio, verdict := "—", "—"
	if !math.IsNaN(a) && !math.IsNaN(b) && b > 0 {
		q := a / b
		ratio = fmt.Sprintf("%.2f", q)
		if m.target > 0 {
			verdict = fmt.Sprintf("≤ %.1f: missed", m.target)
			if q <= m.target {
				verdict = fmt.Sprintf("≤ %.1f: met", m.target)
			}
		}
	} else if m.target > 0 {
		verdict = fmt.Sprintf("≤ %.1f: not measured", m.target)
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s |\n", prefix, m.name, aCell, bCell, ratio, verdict)
}

// medianCellOf is the median of m over ps and its cell. For a time, a run
// that did not finish counts as longer than any that did, and a median
// run that did not finish has no value.
func medianCellOf(m measure, ps []peerPhase) (float64, string) {
	if len(ps) == 0 {
		return math.NaN(), "not measured"
	}
	sorted := slices.Clone(ps)
	key := func(p peerPhase) float64 {
		if m.timed && !p.Finished {
			return math.Inf(1)
		}
		return m.value(p)
	}
	slices.SortStableFunc(sorted, func(x, y peerPhase) int { return cmp.Compare(key(x), key(y)) })
	mid := sorted[len(sorted)/2]
	if m.timed && !mid.Finished {
		return math.NaN(), "did not finish in " + seconds(mid.Seconds)
	}
	v := m.value(mid)
	return v, m.format(v)
}

// orNaN is v, or NaN (not measured) when v is 0.
func orNaN(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

func mib(kib float64) string   { return fmt.Sprintf("%.0f MiB", kib/1024) }
func count(n float64) string   { return fmt.Sprintf("%.0f", n) }
func cpuCell(s float64) string { return fmt.Sprintf("%.1f s", s) }

func idleCPUCell(s float64) string { return fmt.Sprintf("%.2f s", s) }
func toolName(tool string) string {
	return map[string]string{toolArgo: "Argo Rollouts", toolFlux: "Flux"}[tool]
}

// render writes the results as the peers section of bench/results.md.
func (r *peerResults) render() string {
	var b strings.Builder
	b.WriteString("# plimsoll against its peers\n\n")
	if r.Note != "" {
		fmt.Fprintf(&b, "**%s**\n\n", r.Note)
	}
	b.WriteString(r.setting())
	fmt.Fprintf(&b, `
Targets: every ratio plimsoll / peer at most %.1f for time and memory;
plimsoll's idle CPU at most %.0fx the best peer's. Each cell is the median
over the runs; every run is listed at the end. The figures are stated
whatever they are: "missed" is a target not met.
`, targetRatio, targetIdleRatio)

	b.WriteString("\n## Rollouts: plimsoll against Argo Rollouts\n\n")
	b.WriteString("![time until all workloads are done against N](rollout-time.svg)\n\n")
	b.WriteString("| strategy, N | measure | plimsoll | Argo Rollouts | ratio | target |\n|---|---|---|---|---|---|\n")
	for _, n := range r.sizes("rollout") {
		for _, phase := range []string{"canary", "blue-green"} {
			ps, qs := r.phasesOf("rollout", toolPlimsoll, n, phase), r.phasesOf("rollout", toolArgo, n, phase)
			for _, m := range []measure{allDone, firstDone, medianDone, cpuSeconds, peakRSS, ownRequests, allRequests} {
				b.WriteString(row(fmt.Sprintf("%s, %d", phase, n), m, ps, qs))
			}
		}
		ps, qs := r.phasesOf("rollout", toolPlimsoll, n, "idle"), r.phasesOf("rollout", toolArgo, n, "idle")
		b.WriteString(row(fmt.Sprintf("idle, %d + %d", n, n), idleCPU, ps, qs))
		b.WriteString(row(fmt.Sprintf("whole run, %d + %d", n, n), peakRSS, ps, qs))
		ps, qs = r.phasesOf("rollout", toolPlimsoll, n, "initial"), r.phasesOf("rollout", toolArgo, n, "initial")
		b.WriteString(row(fmt.Sprintf("first revision, %d + %d", n, n), allDone, ps, qs))
	}

	b.WriteString("\n## Sync: N ConfigMaps, commit to applied\n\n")
	b.WriteString("![commit to applied of N ConfigMaps against N](sync-time.svg)\n\n")
	for _, pair := range [][2]string{{toolPlimsoll, toolFlux}, {toolOnce, toolKubectl}} {
		fmt.Fprintf(&b, "| commit, N | measure | %s | %s | ratio | target |\n|---|---|---|---|---|---|\n", pair[0], cmp.Or(toolName(pair[1]), pair[1]))
		for _, n := range r.sizes("sync") {
			for _, phase := range syncPhases {
				ps, qs := r.phasesOf("sync", pair[0], n, phase), r.phasesOf("sync", pair[1], n, phase)
				for _, m := range []measure{applied, cpuSeconds, peakRSS, ownRequests} {
					b.WriteString(row(fmt.Sprintf("%s, %d", phase, n), m, ps, qs))
				}
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("## Scale: rolling workloads of 10 pods\n\n")
	b.WriteString("| phase, N | measure | plimsoll | Flux | ratio | target |\n|---|---|---|---|---|---|\n")
	for _, n := range r.sizes("scale") {
		for _, pm := range []struct {
			phase    string
			measures []measure
		}{
			{"initial", []measure{allDone, peakRSS}},
			{"idle", []measure{idleRSS, idleCPU, ownRequests}},
			{"noop", []measure{applied, cpuSeconds, ownRequests}},
			{"rolled", []measure{allDone, firstDone, medianDone, cpuSeconds, peakRSS, ownRequests, allRequests}},
		} {
			ps, qs := r.phasesOf("scale", toolPlimsoll, n, pm.phase), r.phasesOf("scale", toolFlux, n, pm.phase)
			for _, m := range pm.measures {
				b.WriteString(row(fmt.Sprintf("%s, %d", pm.phase, n), m, ps, qs))
			}
		}
	}
	b.WriteString(r.helmSection())
	b.WriteString(r.everyRun())
	return b.String()
}

// helmSection is the helm comparison's part of the report.
func (r *peerResults) helmSection() string {
	var b strings.Builder
	b.WriteString(`
## Helm: a chart in Git rendering N ConfigMaps, commit to applied

The chart is kept in Git; its values say how many ConfigMaps it renders.
plimsoll renders it in-process and applies it like any file. Flux's
source-controller builds a chart artifact of each commit (reconcileStrategy
Revision, without which a template change that keeps the chart's version
is never deployed) and helm-controller upgrades the Helm release to it,
waiting for its objects as it does by default. cold: the chart goes from 1
ConfigMap to N; noop: a commit that changes no object; change: one
ConfigMap's data changes. Flux's CPU and memory are source-controller's
and helm-controller's together.

| commit, N | measure | plimsoll | Flux | ratio | target |
|---|---|---|---|---|---|
`)
	if len(r.sizes("helm")) == 0 {
		b.WriteString("| not measured yet: `make bench-peers BENCH_PARTS=helm` | | | | | |\n")
	}
	for _, n := range r.sizes("helm") {
		for _, phase := range syncPhases {
			ps, qs := r.phasesOf("helm", toolPlimsoll, n, phase), r.phasesOf("helm", toolFlux, n, phase)
			for _, m := range []measure{applied, cpuSeconds, peakRSS, ownRequests} {
				b.WriteString(row(fmt.Sprintf("%s, %d", phase, n), m, ps, qs))
			}
		}
	}
	return b.String()
}

// setting says what was measured, when, where, and which versions.
func (r *peerResults) setting() string {
	var dates, machines, versions []string
	add := func(list *[]string, v string) {
		if v != "" && !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	nodes := 0
	for _, rec := range r.Rollout {
		d, _, _ := strings.Cut(rec.Date, "T")
		add(&dates, d)
		add(&machines, rec.Machine)
		add(&versions, rec.Label+": "+rec.Binary)
		nodes = max(nodes, rec.Nodes)
	}
	for _, rec := range r.Peers {
		d, _, _ := strings.Cut(rec.Date, "T")
		add(&dates, d)
		if rec.Tool != toolOnce { // the same binary as plimsoll's
			add(&versions, rec.Tool+": "+rec.Version)
		}
	}
	if len(dates) == 0 {
		return "No runs yet.\n"
	}
	slices.Sort(dates)
	s := fmt.Sprintf("Generated by `make bench` on %s", strings.Join(dates, ", "))
	if len(machines) > 0 {
		s += fmt.Sprintf("; machine: %s", strings.Join(machines, "; "))
	}
	if nodes > 0 {
		s += fmt.Sprintf("; %d kwok nodes", nodes)
	}
	s += ".\nVersions:\n\n"
	for _, v := range versions {
		s += "- " + v + "\n"
	}
	return s
}

// everyRun lists every run with every number it took.
func (r *peerResults) everyRun() string {
	var b strings.Builder
	b.WriteString("\n## Every run\n\n")
	for _, rec := range r.Rollout {
		fmt.Fprintf(&b, "- rollout, %s\n", rec.summary())
	}
	for _, rec := range r.Peers {
		load := make([]string, len(rec.Load))
		for i, l := range rec.Load {
			load[i] = fmt.Sprintf("%.2f", l)
		}
		fmt.Fprintf(&b, "- %s, %s, N=%d, run %d, %s, load %s", rec.Part, rec.Tool, rec.N, rec.Run, rec.Date, strings.Join(load, " to "))
		phases := syncPhases
		if rec.Part == "scale" {
			phases = scalePhases
		}
		for _, phase := range phases {
			if p, ok := rec.Phases[phase]; ok {
				fmt.Fprintf(&b, "; %s: %s", phase, p.summary())
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
