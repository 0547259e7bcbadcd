package ui

import (
	"maps"
	"slices"
	"strings"
	gosync "sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/workload"
)

// What the view remembers, and for how long. The annotations say where a
// rollout is now; what came before is what the view saw change while it
// ran (and the Events, which the API server keeps an hour). At most, per
// workload: 50 status changes of ~200 bytes (10 KB), 6 runs (a canary
// judges each of its steps) of 2 metrics of 40 measurements of ~60 bytes
// (29 KB), and 120 samples of ~80 bytes of the Service it steers (10 KB):
// about 50 MB for 1,000 workloads that all roll without end. A workload
// that changes nothing holds one entry of each, a few hundred bytes.
const (
	// statusWindow and statusEntries bound the status changes kept per
	// workload: those of the last hour, at most 50 (the last always).
	statusWindow  = time.Hour
	statusEntries = 50
	// endpointWindow and endpointSamples bound the samples of ready
	// endpoints kept per Service a workload steers: those of the last 15
	// minutes, at most 120 (the last always); a sample is kept only when
	// the counts change.
	endpointWindow  = 15 * time.Minute
	endpointSamples = 120
	// runsKept is how many analysis runs are kept per workload, the last
	// ones; pointsPerMetric how many measurements per metric of a run.
	runsKept        = 6
	pointsPerMetric = 40
)

// Groups of ready endpoints: a pod's color, its canary track, or the
// workload's other pods; "other" is a pod of no workload.
const (
	groupCanary = "canary"
	groupStable = "stable"
	groupOther  = "other"
)

// histories is what the view saw change: the status of each workload,
// the measurements of its analysis runs, and the ready endpoints of each
// Service a workload steers. Keys are namespace/name.
type histories struct {
	clock     clock.PassiveClock
	mu        gosync.Mutex
	status    map[string][]statusEntry
	runs      map[string][]runHistory
	endpoints map[string][]endpointSample
	// steers names the Services each workload steers, so that a Service
	// no workload steers any more is forgotten.
	steers map[string][]string
}

// statusEntry is one status of a workload, from when it was seen.
type statusEntry struct {
	At       time.Time
	Revision int64
	Phase    string
	// Step is the canary step (plimsoll.dev/step), "" for none.
	Step    string
	Message string
}

// runHistory is the measurements of one analysis run seen by the view.
type runHistory struct {
	Stage, Hash string
	Started     time.Time
	// Points are the measurements of each metric, oldest first.
	Points map[string][]measurement
}

// measurement is one measurement of a metric as the run recorded it.
type measurement struct {
	At      time.Time
	Value   string
	Outcome strategies.Outcome
	Message string
}

// endpointSample is the ready endpoints of a Service from a moment on,
// counted by group.
type endpointSample struct {
	At     time.Time
	Groups []groupCount
}

// groupCount is how many ready endpoints a group has.
type groupCount struct {
	Group string
	Ready int
}

func newHistories(clk clock.PassiveClock) *histories {
	return &histories{clock: clk, status: map[string][]statusEntry{}, runs: map[string][]runHistory{},
		endpoints: map[string][]endpointSample{}, steers: map[string][]string{}}
}

// recordAll notes every workload the caches hold, once they are filled.
func (v *view) recordAll() {
	seen := map[string]bool{}
	for _, d := range list[*appsv1.Deployment](v, kindDeployments, "") {
		if key := byWorkload(d); key != "" && !seen[key] {
			seen[key] = true
			v.recordWorkload(d.Namespace, d.Labels[contract.LabelWorkload])
		}
	}
	for _, sk := range setKinds {
		for _, obj := range list[metav1.Object](v, sk.cache, metav1.NamespaceAll) {
			v.recordSet(sk.name, obj.GetNamespace(), obj.GetName())
		}
	}
}

// recordWorkload notes the status and the analysis run of workload
// ns/name as its Deployments say now, and starts the history of the
// Services it steers; a workload without Deployments is forgotten.
func (v *view) recordWorkload(ns, name string) {
	if name == "" {
		return
	}
	key := ns + "/" + name
	deploys := indexed[*appsv1.Deployment](v, kindDeployments, key)
	w, ok := workload.Describe(ns, name, deploys)
	if !ok {
		v.hist.forgetWorkload(key)
		return
	}
	primary := findDeployment(deploys, w.Primary)
	entry := statusEntry{Revision: w.Revision, Phase: w.Phase, Message: w.Message}
	if primary != nil {
		entry.Step = primary.Annotations[contract.AnnotationStep]
	}
	services := workload.ServiceNames(deploys)
	for i := range services {
		services[i] = ns + "/" + services[i]
	}
	fresh := v.hist.noteWorkload(key, entry, w.Analysis, services)
	for _, svc := range fresh {
		v.recordEndpoints(ns, svc[len(ns)+1:])
	}
}

// recordEndpoints notes the ready endpoints of Service ns/name, by group,
// when a workload steers it.
func (v *view) recordEndpoints(ns, name string) {
	key := ns + "/" + name
	if name == "" || !v.hist.steered(key) {
		return
	}
	ready := strategies.ReadyPods(indexed[*discoveryv1.EndpointSlice](v, kindEndpointSlices, key))
	counts := map[string]int{}
	for _, pod := range ready {
		p, _ := get[*corev1.Pod](v, kindPods, ns, pod)
		counts[v.groupOf(p)]++
	}
	sample := endpointSample{}
	for _, g := range slices.Sorted(maps.Keys(counts)) {
		sample.Groups = append(sample.Groups, groupCount{Group: g, Ready: counts[g]})
	}
	v.hist.noteEndpoints(key, sample)
}

// groupOf is the group of a ready endpoint's pod (nil when the view does
// not hold it: a pod of no workload): its color, or the canary or the
// stable Deployment whose ReplicaSet controls it. A canary's pod handed
// over to the stable Deployment at a promotion keeps its track label and
// its name, and is the stable's.
func (v *view) groupOf(p *corev1.Pod) string {
	switch {
	case p == nil:
		return groupOther
	case p.Labels[contract.LabelColor] != "":
		return p.Labels[contract.LabelColor]
	}
	if ref := metav1.GetControllerOf(p); ref != nil {
		if rs, ok := get[*appsv1.ReplicaSet](v, kindReplicaSets, p.Namespace, ref.Name); ok {
			if d := metav1.GetControllerOf(rs); d != nil && strings.HasSuffix(d.Name, contract.SuffixCanary) {
				return groupCanary
			}
			return groupStable
		}
	}
	if p.Labels[contract.LabelTrack] != "" {
		return groupCanary // without an owner: a canary's, being handed over
	}
	return groupStable
}

// noteWorkload records a workload's status when it changed, the new
// measurements of its run, and the Services it steers; it returns the
// Services whose history starts now.
func (h *histories) noteWorkload(key string, e statusEntry, run *strategies.AnalysisRun, services []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	e.At = now
	entries := h.status[key]
	if n := len(entries); n == 0 || !sameStatus(entries[n-1], e) {
		entries = append(entries, e)
	}
	h.status[key] = keepRecent(entries, now, statusWindow, statusEntries, func(e statusEntry) time.Time { return e.At })
	if run != nil && run.Hash != "" {
		h.runs[key] = noteRun(h.runs[key], *run)
	}
	var fresh []string
	for _, svc := range services {
		if _, ok := h.endpoints[svc]; !ok {
			h.endpoints[svc] = nil
			fresh = append(fresh, svc)
		}
	}
	before := h.steers[key]
	h.steers[key] = services
	h.dropUnsteered(before)
	return fresh
}

// forgetWorkload drops what the view kept of a workload that is gone.
func (h *histories) forgetWorkload(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.status, key)
	delete(h.runs, key)
	before := h.steers[key]
	delete(h.steers, key)
	h.dropUnsteered(before)
}

// forgetService drops the history of a Service that is gone.
func (h *histories) forgetService(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.endpoints[key]; ok {
		h.endpoints[key] = nil
	}
}

// dropUnsteered drops the histories of those of services no workload
// steers any more. h.mu must be held.
func (h *histories) dropUnsteered(services []string) {
	for _, svc := range services {
		steered := false
		for _, list := range h.steers {
			if slices.Contains(list, svc) {
				steered = true
				break
			}
		}
		if !steered {
			delete(h.endpoints, svc)
		}
	}
}

// steered reports whether a workload steers Service key.
func (h *histories) steered(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.endpoints[key]
	return ok
}

// noteEndpoints records a sample of Service key when its counts changed.
func (h *histories) noteEndpoints(key string, s endpointSample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	samples, ok := h.endpoints[key]
	if !ok {
		return
	}
	now := h.clock.Now()
	s.At = now
	if n := len(samples); n == 0 || !slices.Equal(samples[n-1].Groups, s.Groups) {
		samples = append(samples, s)
	}
	h.endpoints[key] = keepRecent(samples, now, endpointWindow, endpointSamples, func(s endpointSample) time.Time { return s.At })
}

// noteRun adds the last measurements of run to the runs kept, the run
// itself when it is new.
func noteRun(runs []runHistory, run strategies.AnalysisRun) []runHistory {
	i := slices.IndexFunc(runs, func(r runHistory) bool {
		return r.Stage == run.Stage && r.Hash == run.Hash && r.Started.Equal(run.Started)
	})
	if i < 0 {
		runs = append(runs, runHistory{Stage: run.Stage, Hash: run.Hash, Started: run.Started, Points: map[string][]measurement{}})
		if len(runs) > runsKept {
			runs = slices.Delete(runs, 0, len(runs)-runsKept)
		}
		i = len(runs) - 1
	}
	r := &runs[i]
	for _, m := range run.Metrics {
		if m.At.IsZero() || m.Pending {
			continue
		}
		points := r.Points[m.Name]
		if n := len(points); n > 0 && points[n-1].At.Equal(m.At) {
			continue
		}
		points = append(points, measurement{At: m.At, Value: m.Value, Outcome: m.Outcome, Message: m.Message})
		if len(points) > pointsPerMetric {
			points = slices.Delete(points, 0, len(points)-pointsPerMetric)
		}
		r.Points[m.Name] = points
	}
	return runs
}

// workloadHistory returns copies of what the view kept of a workload.
func (h *histories) workloadHistory(key string) ([]statusEntry, []runHistory) {
	h.mu.Lock()
	defer h.mu.Unlock()
	runs := make([]runHistory, 0, len(h.runs[key]))
	for _, r := range h.runs[key] {
		c := r
		c.Points = map[string][]measurement{}
		for k, v := range r.Points {
			c.Points[k] = slices.Clone(v)
		}
		runs = append(runs, c)
	}
	return slices.Clone(h.status[key]), runs
}

// endpointHistory returns a copy of the samples of Service key.
func (h *histories) endpointHistory(key string) []endpointSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.endpoints[key])
}

// sameStatus reports whether two entries say the same.
func sameStatus(a, b statusEntry) bool {
	return a.Revision == b.Revision && a.Phase == b.Phase && a.Step == b.Step && a.Message == b.Message
}

// keepRecent drops the entries older than window before now, and the
// oldest beyond most, but always keeps the last: it is the state now.
func keepRecent[T any](entries []T, now time.Time, window time.Duration, most int, at func(T) time.Time) []T {
	drop := 0
	for drop < len(entries)-1 && (len(entries)-drop > most || now.Sub(at(entries[drop])) > window) {
		drop++
	}
	return slices.Delete(entries, 0, drop)
}

// findDeployment returns the Deployment named name among deploys.
func findDeployment(deploys []*appsv1.Deployment, name string) *appsv1.Deployment {
	for _, d := range deploys {
		if d.Name == name {
			return d
		}
	}
	return nil
}
