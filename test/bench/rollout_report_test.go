//go:build bench

package bench

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rolloutRecord is one run of the rollout benchmark, as kept in
// bench/rollout-results.json.
type rolloutRecord struct {
	Label        string      `json:"label"`        // PLIMSOLL_BENCH_LABEL
	Binary       string      `json:"binary"`       // what `plimsoll version` printed
	BinarySHA256 string      `json:"binarySHA256"` // of the binary file
	N            int         `json:"n"`            // workloads per strategy
	Run          int         `json:"run"`          // 1, 2, ... among the runs of this label and N
	Replicas     int         `json:"replicas"`
	Date         string      `json:"date"` // start, RFC 3339 UTC
	Machine      string      `json:"machine"`
	Nodes        int         `json:"nodes"`       // simulated nodes of the control plane
	Load         []float64   `json:"loadAverage"` // one-minute load average at the start and at the end
	Initial      phaseRecord `json:"initial"`     // 2N workloads from nothing to Healthy at revision 1
	Canary       phaseRecord `json:"canary"`      // N canaries to revision 2
	BlueGreen    phaseRecord `json:"blueGreen"`   // N blue-green workloads to revision 2
	Idle         idleRecord  `json:"idle"`
	PeakRSSKiB   int64       `json:"peakRSSKiB"` // the daemon's peak over the whole run
}

// phaseRecord is one rollout: from the push of its commit (the start of
// the daemon, for the first sync) until every workload is Healthy at the
// new revision, or the bound.
type phaseRecord struct {
	Workloads      int     `json:"workloads"`
	Healthy        int     `json:"healthy"`  // Healthy at the revision within the bound
	Degraded       int     `json:"degraded"` // Degraded at the end
	Finished       bool    `json:"finished"`
	BoundSeconds   float64 `json:"boundSeconds"`
	TotalSeconds   float64 `json:"totalSeconds"`   // until the last one was Healthy (the bound if not finished)
	FirstSeconds   float64 `json:"firstSeconds"`   // until the first one was
	MedianSeconds  float64 `json:"medianSeconds"`  // until the median one was; 0 when fewer than half were
	AppliedSeconds float64 `json:"appliedSeconds"` // until the sync status named the commit; 0 when never seen
	CPUSeconds     float64 `json:"cpuSeconds"`     // the daemon's user and system CPU
	PeakRSSKiB     int64   `json:"peakRSSKiB"`     // the daemon's peak RSS during the rollout
	// HarnessCPUSeconds is the CPU of the benchmark process (the proxy and
	// the informers), which shares the machine with the control plane.
	HarnessCPUSeconds float64       `json:"harnessCPUSeconds,omitempty"`
	API               requestCounts `json:"api"`    // every client's requests, from apiserver_request_total
	Daemon            requestCounts `json:"daemon"` // the daemon's own, counted by the proxy
}

// idleRecord is the idle window after the rollouts.
type idleRecord struct {
	Seconds    float64       `json:"seconds"`
	CPUSeconds float64       `json:"cpuSeconds"`
	API        requestCounts `json:"api"`
	Daemon     requestCounts `json:"daemon"`
}

// rolloutResults is bench/rollout-results.json: every run of every label.
type rolloutResults struct {
	Runs []rolloutRecord `json:"runs"`
}

func loadRolloutResults(t *testing.T, path string) *rolloutResults {
	r := &rolloutResults{}
	loadJSON(t, path, r)
	return r
}

func (r *rolloutResults) save(t *testing.T, path string) { saveJSON(t, path, r) }

// loadJSON reads the JSON file at path into v; without a file, v is left
// as it is.
func loadJSON(t *testing.T, path string, v any) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
}

// saveJSON writes v to path as indented JSON.
func saveJSON(t *testing.T, path string, v any) {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("encode %s: %v", path, err)
	}
	if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// keep keeps the runs of label with n workloads that measured the binary
// of SHA-256 sum, drops those that measured another one, and returns how
// many it kept.
func (r *rolloutResults) keep(label string, n int, sum string) int {
	r.Runs = slices.DeleteFunc(r.Runs, func(rec rolloutRecord) bool {
		return rec.Label == label && rec.N == n && rec.BinarySHA256 != sum
	})
	kept := 0
	for _, rec := range r.Runs {
		if rec.Label == label && rec.N == n {
			kept++
		}
	}
	return kept
}

// group is the runs of one label and N.
type group struct {
	label string
	n     int
	runs  []rolloutRecord
}

// groups returns the runs by N, then by label in the order the labels
// first appear, so that a later label's rows come right after the earlier
// ones of the same N.
func (r *rolloutResults) groups() []group {
	var labels []string
	for _, rec := range r.Runs {
		if !slices.Contains(labels, rec.Label) {
			labels = append(labels, rec.Label)
		}
	}
	var out []group
	for _, rec := range r.Runs {
		i := slices.IndexFunc(out, func(g group) bool { return g.label == rec.Label && g.n == rec.N })
		if i < 0 {
			out = append(out, group{label: rec.Label, n: rec.N})
			i = len(out) - 1
		}
		out[i].runs = append(out[i].runs, rec)
	}
	slices.SortStableFunc(out, func(a, b group) int {
		if a.n != b.n {
			return a.n - b.n
		}
		return slices.Index(labels, a.label) - slices.Index(labels, b.label)
	})
	return out
}

// render writes the results as the rollout section of bench/results.md.
func (r *rolloutResults) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, `# Rollout benchmark

N canary and N blue-green workloads, %d replicas each, one file per workload
(its Deployment and Service, as in examples/canary and examples/blue-green)
in a file:// Git repository, synced by one `+"`plimsoll run --interval %s`"+`.
Canary steps `+"`%s`"+`; blue-green with auto-promotion,
`+"`scale-down-delay: %s`"+` and no preview Service. The daemon runs on a control
plane of its own (`+"`make bench-rollout`"+` starts `+"`hack/cluster`"+` with
PLIMSOLL_CLUSTER_DIR=.cluster-bench from an empty etcd; its kwok nodes are
counted below). Once all 2N are Healthy at revision 1, one commit changes
the image of the N canaries; once those are Healthy at revision 2, one
commit changes the image of the N blue-green workloads; %.0f s after those
are Healthy, %.0f s of idle. PLIMSOLL_BENCH_LABEL names the binary
measured.

Each rollout is timed from the push of its commit until every workload is
Healthy at revision 2 (plimsoll.dev/phase and plimsoll.dev/revision of the
canary's Deployment `+"`<name>`"+`, of the blue-green color with role
`+"`active`"+`), as seen by the benchmark's informers. "sync applied" is when
the sync status first named the commit. The daemon's CPU is user and
system time from /proc/<pid>/stat; its peak RSS is VmHWM, reset before
each rollout. API requests per workload: "all clients" is the rise of the
API server's apiserver_request_total (Leases left out: kwok renews the
nodes' Leases whatever happens), so it counts the controller manager, the
scheduler and kwok answering the rollout too; "daemon" is the daemon's
own, counted by a TLS proxy it talks to the API server through. The
benchmark process (the proxy and its informers) shares the machine with
the daemon and the control plane; its CPU is listed with each run where
recorded. Rows are medians over the runs; every run is listed at the end.

`, rolloutReplicas, pollInterval, canarySteps, scaleDownDelay, settle.Seconds(), idleWindow.Seconds())

	groups := r.groups()
	b.WriteString(r.runsLine())
	for _, s := range []struct {
		title string
		phase func(rolloutRecord) phaseRecord
	}{
		{"Canary: N workloads rolled by one commit", func(rec rolloutRecord) phaseRecord { return rec.Canary }},
		{"Blue-green: N workloads rolled by one commit", func(rec rolloutRecord) phaseRecord { return rec.BlueGreen }},
	} {
		fmt.Fprintf(&b, "\n## %s\n\n", s.title)
		b.WriteString("| binary | N | runs | all Healthy | first Healthy | median workload | sync applied | daemon CPU | daemon peak RSS | API requests / workload, all clients | daemon's API requests / workload |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, g := range groups {
			ps := phases(g.runs, s.phase)
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %.1f s | %d MiB | %.1f | %.1f |\n",
				g.label, g.n, len(g.runs), totalCell(ps), seconds(medianOf(ps, func(p phaseRecord) float64 { return p.FirstSeconds })),
				medianCell(ps), seconds(medianOf(ps, func(p phaseRecord) float64 { return p.AppliedSeconds })),
				medianOf(ps, func(p phaseRecord) float64 { return p.CPUSeconds }),
				int64(medianOf(ps, func(p phaseRecord) float64 { return float64(p.PeakRSSKiB) }))/1024,
				medianOf(ps, func(p phaseRecord) float64 { return perWorkload(p.API.Total(), p.Workloads) }),
				medianOf(ps, func(p phaseRecord) float64 { return perWorkload(p.Daemon.Total(), p.Workloads) }))
		}
	}

	b.WriteString("\n## API requests per workload, by verb\n\n")
	b.WriteString("| strategy | binary | N | requests of | " + strings.Join(verbColumns, " | ") + " | other | total | errors | of them 409 | pods created |\n")
	b.WriteString("|---|---|---|---|" + strings.Repeat("---|", len(verbColumns)+5) + "\n")
	for _, s := range []struct {
		name  string
		phase func(rolloutRecord) phaseRecord
	}{
		{"canary", func(rec rolloutRecord) phaseRecord { return rec.Canary }},
		{"blue-green", func(rec rolloutRecord) phaseRecord { return rec.BlueGreen }},
	} {
		for _, g := range groups {
			ps := phases(g.runs, s.phase)
			for _, src := range []struct {
				name   string
				counts func(phaseRecord) requestCounts
			}{
				{"all clients", func(p phaseRecord) requestCounts { return p.API }},
				{"daemon", func(p phaseRecord) requestCounts { return p.Daemon }},
			} {
				fmt.Fprintf(&b, "| %s | %s | %d | %s |", s.name, g.label, g.n, src.name)
				for _, verb := range append(slices.Clone(verbColumns), "other", "total", "errors", "409", "pods created") {
					if (verb == "409" || verb == "pods created") && !slices.ContainsFunc(ps, func(p phaseRecord) bool { return p.API.PodCreates > 0 }) {
						b.WriteString(" — |") // runs recorded before these were counted
						continue
					}
					v := medianOf(ps, func(p phaseRecord) float64 { return perWorkload(verbCount(src.counts(p), verb), p.Workloads) })
					fmt.Fprintf(&b, " %.1f |", v)
				}
				b.WriteString("\n")
			}
		}
	}

	b.WriteString("\n## First sync and idle\n\n")
	b.WriteString("First sync: 2N workloads from nothing to Healthy at revision 1, timed\nfrom the start of the daemon. ")
	fmt.Fprintf(&b, "Idle: %.0f s with all 2N Healthy, %.0f s after the\nlast rollout; per minute.\n\n", idleWindow.Seconds(), settle.Seconds())
	b.WriteString("| binary | N | first sync | daemon peak RSS, whole run | idle daemon CPU / min | idle daemon API requests / min | idle API requests / min, all clients |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		initial := phases(g.runs, func(rec rolloutRecord) phaseRecord { return rec.Initial })
		idle := func(f func(idleRecord) float64) float64 {
			return medianOf(g.runs, func(rec rolloutRecord) float64 {
				if rec.Idle.Seconds == 0 {
					return math.NaN()
				}
				return f(rec.Idle) * 60 / rec.Idle.Seconds
			})
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %d MiB | %.2f s | %.1f | %.1f |\n", g.label, g.n, totalCell(initial),
			int64(medianOf(g.runs, func(rec rolloutRecord) float64 { return float64(rec.PeakRSSKiB) }))/1024,
			idle(func(i idleRecord) float64 { return i.CPUSeconds }),
			idle(func(i idleRecord) float64 { return float64(i.Daemon.Total()) }),
			idle(func(i idleRecord) float64 { return float64(i.API.Total()) }))
	}

	b.WriteString("\n## Every run\n\n")
	for _, g := range groups {
		for _, rec := range g.runs {
			fmt.Fprintf(&b, "- %s\n", rec.summary())
		}
	}
	b.WriteString(`
Reading the numbers: the API server counts a create as POST and an update
as PUT, shown here as CREATE and UPDATE; it counts a WATCH when the watch
ends, the proxy when it starts. "errors" are requests answered with a
status of 400 or more (conflicts, not found). Both strategies run in the
same daemon: while one rolls, the other's N workloads sit Healthy. The
machine's one-minute load average at the start and end of each run is
listed, since anything else running on the machine slows the control plane
and the daemon alike.
`)
	return b.String()
}

// runsLine says which binaries were measured, when and where.
func (r *rolloutResults) runsLine() string {
	var lines []string
	for _, g := range r.groups() {
		var dates []string
		for _, rec := range g.runs {
			if d, _, _ := strings.Cut(rec.Date, "T"); !slices.Contains(dates, d) {
				dates = append(dates, d)
			}
		}
		lines = append(lines, fmt.Sprintf("- %s, N=%d: %d run(s) on %s, binary `%s`, machine: %s, %d kwok nodes",
			g.label, g.n, len(g.runs), strings.Join(dates, ", "), g.runs[0].Binary, g.runs[0].Machine, g.runs[0].Nodes))
	}
	if len(lines) == 0 {
		return "No runs yet.\n"
	}
	return "Runs:\n\n" + strings.Join(lines, "\n") + "\n"
}

// summary is one line on a run, with every number it took.
func (rec rolloutRecord) summary() string {
	load := make([]string, len(rec.Load))
	for i, l := range rec.Load {
		load[i] = fmt.Sprintf("%.2f", l)
	}
	s := fmt.Sprintf("%s, N=%d, run %d, %s, load %s: first sync %s", rec.Label, rec.N, rec.Run, rec.Date,
		strings.Join(load, " to "), totalCell([]phaseRecord{rec.Initial}))
	if !rec.Initial.Finished {
		return s + "; no rollout measured"
	}
	for _, p := range []struct {
		name string
		p    phaseRecord
	}{{"canary", rec.Canary}, {"blue-green", rec.BlueGreen}} {
		s += fmt.Sprintf("; %s: all Healthy %s, first %s, median %s, sync applied %s, CPU %.1f s, peak RSS %d MiB, API requests %d (daemon %d, errors %d/%d)",
			p.name, totalCell([]phaseRecord{p.p}), seconds(p.p.FirstSeconds), medianCell([]phaseRecord{p.p}),
			seconds(p.p.AppliedSeconds), p.p.CPUSeconds, p.p.PeakRSSKiB/1024,
			p.p.API.Total(), p.p.Daemon.Total(), p.p.API.Errors, p.p.Daemon.Errors)
		if p.p.API.PodCreates > 0 {
			s += fmt.Sprintf(", 409s %d (daemon %d), pods created %d", p.p.API.Conflicts, p.p.Daemon.Conflicts, p.p.API.PodCreates)
		}
		if p.p.HarnessCPUSeconds > 0 {
			s += fmt.Sprintf(", benchmark process CPU %.1f s", p.p.HarnessCPUSeconds)
		}
	}
	return s + fmt.Sprintf("; idle %.0f s: CPU %.2f s, API requests %d (daemon %d); peak RSS %d MiB",
		rec.Idle.Seconds, rec.Idle.CPUSeconds, rec.Idle.API.Total(), rec.Idle.Daemon.Total(), rec.PeakRSSKiB/1024)
}

// verbColumns are the verbs given a column of their own.
var verbColumns = []string{"GET", "LIST", "WATCH", "CREATE", "UPDATE", "PATCH", "APPLY", "DELETE"}

// verbCount is the count of verb in c; "other" sums the verbs without a
// column; "total", "errors", "409" (conflicts) and "pods created" are
// what they say.
func verbCount(c requestCounts, verb string) int64 {
	switch verb {
	case "total":
		return c.Total()
	case "errors":
		return c.Errors
	case "409":
		return c.Conflicts
	case "pods created":
		return c.PodCreates
	case "other":
		var n int64
		for v, k := range c.Verbs {
			if !slices.Contains(verbColumns, v) {
				n += k
			}
		}
		return n
	}
	return c.Verbs[verb]
}

func phases(runs []rolloutRecord, f func(rolloutRecord) phaseRecord) []phaseRecord {
	out := make([]phaseRecord, 0, len(runs))
	for _, rec := range runs {
		if p := f(rec); p.Workloads > 0 {
			out = append(out, p)
		}
	}
	return out
}

// totalCell is the median time until all were Healthy, where a run that
// did not finish counts as longer than any that did; when the median run
// did not finish, it says how far it got.
func totalCell(ps []phaseRecord) string {
	if len(ps) == 0 {
		return "not measured"
	}
	sorted := slices.Clone(ps)
	slices.SortStableFunc(sorted, func(a, b phaseRecord) int {
		return cmp.Compare(finishedOrInf(a), finishedOrInf(b))
	})
	m := sorted[len(sorted)/2]
	if !m.Finished {
		return fmt.Sprintf("did not finish in %s (%d/%d Healthy, %d Degraded)",
			minutes(m.BoundSeconds), m.Healthy, m.Workloads, m.Degraded)
	}
	return seconds(m.TotalSeconds)
}

// medianCell is the median over runs of the median workload's time.
func medianCell(ps []phaseRecord) string {
	v := medianOf(ps, func(p phaseRecord) float64 {
		if p.MedianSeconds == 0 {
			return math.Inf(1)
		}
		return p.MedianSeconds
	})
	if math.IsInf(v, 1) {
		return "—"
	}
	return seconds(v)
}

func finishedOrInf(p phaseRecord) float64 {
	if !p.Finished {
		return math.Inf(1)
	}
	return p.TotalSeconds
}

// medianOf is the median of f over xs, NaN values left out.
func medianOf[T any](xs []T, f func(T) float64) float64 {
	var vs []float64
	for _, x := range xs {
		if v := f(x); !math.IsNaN(v) {
			vs = append(vs, v)
		}
	}
	return middle(vs)
}

// middle is the median of vs (the upper one of an even count), NaN when
// vs is empty.
func middle(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

func perWorkload(n int64, workloads int) float64 {
	if workloads == 0 {
		return math.NaN()
	}
	return float64(n) / float64(workloads)
}

// minutes formats a bound, "25 min" or "12.5 min".
func minutes(s float64) string {
	return strconv.FormatFloat(s/60, 'f', -1, 64) + " min"
}

// seconds formats a duration in seconds; "—" for none.
func seconds(s float64) string {
	switch {
	case s == 0 || math.IsNaN(s):
		return "—"
	case s < 10:
		return fmt.Sprintf("%.1f s", s)
	}
	return fmt.Sprintf("%.0f s", s)
}
