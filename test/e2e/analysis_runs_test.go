//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	gosync "sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/test/internal/kit"
)

// Helpers of the analysis scenarios (analysis_scenarios_test.go): their
// workloads and analyses, and a watch of the runs a workload records.

// judgedSteps replaces examples/canary's steps: two analysed steps, then
// full promotion.
const judgedSteps = `plimsoll.dev/steps: "25%, 50%, 100%"`

// analysedCanaryWith is analysedCanary (errorRateAnalysis judging every
// step) with each old -> new pair of replace applied to the analysis; a
// pair that matches nothing fails the test.
func analysedCanaryWith(t *testing.T, version string, replace ...string) map[string]string {
	t.Helper()
	files := analysedCanary(t, version)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(files["analysis.yaml"], replace[i]) {
			t.Fatalf("errorRateAnalysis lacks %q", replace[i])
		}
		files["analysis.yaml"] = strings.Replace(files["analysis.yaml"], replace[i], replace[i+1], 1)
	}
	return files
}

// judgedCanary is examples/canary at version with steps judgedSteps, each
// judged by the analysis name, whose ConfigMap is doc; annotations are
// more lines for the Deployment's annotations ("key: value").
func judgedCanary(t *testing.T, version, name, doc string, annotations ...string) map[string]string {
	t.Helper()
	extra := ""
	for _, a := range annotations {
		extra += "\n    " + a
	}
	files := canaryExample(t, version, `plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`,
		judgedSteps+"\n    plimsoll.dev/analysis: "+name+extra)
	files["analysis.yaml"] = doc
	return files
}

// errorRatio is the query of errorRateAnalysis for one revision, as the
// daemon sends it once the arguments are substituted.
func errorRatio(ns, workload, hash string) string {
	sel := fmt.Sprintf(`{namespace=%q,workload=%q,hash=%q}`, ns, workload, hash)
	return fmt.Sprintf(`sum(rate(%s%s[5s])) / sum(rate(%s%s[5s]))`, metricErrors, sel, metricRequests, sel)
}

// scenario is one canary workload "api" judged by analyses, with a daemon
// syncing it and watches on its Service's endpoints and its runs.
type scenario struct {
	s         *syncTarget
	d         *kit.Daemon
	flags     []string // of the daemon
	endpoints *endpointWatch
	runs      *runWatch
}

// startScenario commits files as revision 1 in a namespace of its own,
// starts a daemon with flags (and --interval 1s), and returns once
// revision 1 is Healthy with 4 ready endpoints, its watches running.
func startScenario(t *testing.T, files map[string]string, flags ...string) *scenario {
	t.Helper()
	sc := &scenario{s: newSyncTarget(t), flags: append([]string{"--interval", "1s"}, flags...)}
	sc.s.repo.Commit("api v1", files)
	sc.d = kit.StartDaemon(t, sc.s, sc.flags...)
	waitForDeployment(t, sc.s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	sc.endpoints = watchEndpoints(t, sc.s.ns, "api")
	sc.endpoints.waitReady(t, "4 stable endpoints", func(pods []string) bool { return len(pods) == 4 })
	sc.runs = watchRuns(t, sc.s.ns, "api")
	return sc
}

// revision commits files as the given revision and returns its template
// hash once the workload records it.
func (sc *scenario) revision(t *testing.T, revision int, files map[string]string) string {
	t.Helper()
	sc.s.repo.Commit(fmt.Sprintf("api revision %d", revision), files)
	return newHash(t, sc.s.ns, "api", revision)
}

// publish makes the suite's exporter publish traffic of the revision of
// hash, 50 requests/s with errorRatio of them errors, until the test ends.
func (sc *scenario) publish(t *testing.T, p *promServer, hash string, errorRatio float64) {
	t.Helper()
	p.exporter.set(sc.s.ns, "api", hash, 50, errorRatio)
	t.Cleanup(func() { p.exporter.stop(sc.s.ns, "api", hash) })
}

// waitFailed waits until the revision of hash is Degraded with each of
// contains in its message, and checks the failure of its step 1 run as a
// user sees it: the run Failed at step 1, failed-hash set, no run of step
// 2, an Analysis Warning, the canary out of the Service's endpoints and at
// 0, the stable back at 4 and never below its 3 pods of step 1 since mark.
func (sc *scenario) waitFailed(t *testing.T, revision int, hash string, mark int, contains ...string) *appsv1.Deployment {
	t.Helper()
	ns := sc.s.ns
	failed := waitForDeployment(t, ns, "api", fmt.Sprintf("revision %d Degraded", revision), phaseIs(revision, "Degraded", contains...))
	t.Logf("revision %d: %s", revision, failed.Annotations["plimsoll.dev/message"])
	r := recordedRun(t, failed)
	if r.Stage != "step 1" || r.Hash != hash || r.Verdict != strategies.VerdictFailed {
		t.Errorf("the run of revision %d: stage %q, hash %q, verdict %s; want step 1 of %s Failed", revision, r.Stage, r.Hash, r.Verdict, hash)
	}
	if got := failed.Annotations["plimsoll.dev/failed-hash"]; got != hash {
		t.Errorf("failed-hash %q, want %q", got, hash)
	}
	if s, ok := sc.runs.first(0, stageOf("step 2", hash)); ok {
		t.Errorf("revision %d failed at step 1 but a run of step 2 was recorded: %s", revision, s)
	}
	sc.endpoints.waitReady(t, "4 endpoints, none of the canary", func(pods []string) bool {
		return len(pods) == 4 && len(withPrefix(pods, "api-canary-")) == 0
	})
	waitForDeployment(t, ns, "api-canary", "scaled to 0", scaledTo(0))
	waitForDeployment(t, ns, "api", "back at 4", scaledTo(4))
	stablePods := func(pods []string) int { return len(pods) - len(withPrefix(pods, "api-canary-")) }
	if n := sc.endpoints.fewestSince(mark, stablePods); n < 3 {
		t.Errorf("revision %d: the stable had %d ready endpoints, want never fewer than its 3 of step 1; history:\n%s",
			revision, n, strings.Join(sc.endpoints.history(mark), "\n"))
	}
	waitFor(t, "an Analysis Warning for step 1", func(context.Context) (bool, error) {
		return analysisEvent(t, ns, corev1.EventTypeWarning, "step 1: analysis ") > 0, nil
	})
	return failed
}

// waitCompleted waits until the revision of hash is Healthy, and checks
// that each stage of passed ("step 1", ...) passed its own run, that the
// last run is step 2's and successful, that 4 pods run image with the
// canary at 0, and that the Service never had fewer than 4 ready
// endpoints since mark. It returns the workload as it ended.
func (sc *scenario) waitCompleted(t *testing.T, revision int, hash, image string, mark int, passed ...string) *appsv1.Deployment {
	t.Helper()
	ns := sc.s.ns
	done := waitForDeployment(t, ns, "api", fmt.Sprintf("revision %d Healthy", revision), phaseIs(revision, "Healthy"))
	for _, stage := range passed {
		if _, ok := sc.runs.first(0, func(s runState) bool {
			return stageOf(stage, hash)(s) && s.run.Verdict == strategies.VerdictSuccessful
		}); !ok {
			t.Errorf("revision %d completed without a successful run of %s; runs:\n%s", revision, stage, strings.Join(sc.runs.history(0), "\n"))
		}
	}
	if r := recordedRun(t, done); r.Stage != "step 2" || r.Hash != hash || r.Verdict != strategies.VerdictSuccessful {
		t.Errorf("the last run of revision %d: stage %q, hash %q, verdict %s; want step 2 of %s Successful", revision, r.Stage, r.Hash, r.Verdict, hash)
	}
	if c := done.Annotations["plimsoll.dev/command"]; c != "" {
		t.Errorf("command %q left on the workload", c)
	}
	waitForDeployment(t, ns, "api-canary", "scaled to 0", scaledTo(0))
	waitForPods(t, ns, "api", 4, image)
	if n, pods := sc.endpoints.minReadySince(mark); n < 4 {
		t.Errorf("revision %d: the Service had %d ready endpoints (%v), want never fewer than 4; history:\n%s",
			revision, n, pods, strings.Join(sc.endpoints.history(mark), "\n"))
	}
	return done
}

// recordedRun reads plimsoll.dev/analysis-run of d, all of it.
func recordedRun(t *testing.T, d *appsv1.Deployment) strategies.AnalysisRun {
	t.Helper()
	var r strategies.AnalysisRun
	raw := d.Annotations["plimsoll.dev/analysis-run"]
	if err := json.Unmarshal([]byte(raw), &r); err != nil || len(r.Metrics) == 0 {
		t.Fatalf("read plimsoll.dev/analysis-run of %s: %v (%q)", d.Name, err, raw)
	}
	return r
}

// analysisEvent adds up the Analysis Events of type eventType on
// Deployment api whose message contains text, an aggregated Event by its
// count.
func analysisEvent(t *testing.T, ns, eventType, text string) int32 {
	t.Helper()
	list, err := suite.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, e := range list.Items {
		if e.InvolvedObject.Name == "api" && e.Reason == "Analysis" && e.Type == eventType && strings.Contains(e.Message, text) {
			n += max(e.Count, 1)
		}
	}
	return n
}

// runState is one recorded state of a workload's analysis: its
// plimsoll.dev/analysis-run, and the phase and message written with it.
type runState struct {
	at             time.Time
	raw            string
	run            *strategies.AnalysisRun // nil: none recorded, or raw does not parse
	phase, message string
}

func (s runState) String() string {
	line := fmt.Sprintf("%s %s", s.at.Format("15:04:05.000"), s.phase)
	if r := s.run; r != nil {
		line += fmt.Sprintf(" [%s %.7s %s started %s", r.Stage, r.Hash, r.Verdict, r.Started.Format("15:04:05.000"))
		for _, m := range r.Metrics {
			line += fmt.Sprintf("; %s %s s=%d f=%d i=%d e=%d/%d last %s %q %q at %s", m.Name, m.Verdict, m.Successful, m.Failed,
				m.Inconclusive, m.Errors, m.ConsecutiveErrors, m.Outcome, m.Value, m.Message, m.At.Format("15:04:05.000"))
		}
		line += "]"
	} else if s.raw != "" {
		line += fmt.Sprintf(" [unreadable run %q]", s.raw)
	}
	return line + ": " + s.message
}

// stageOf is a runWatch condition: a run of stage for the revision of hash.
func stageOf(stage, hash string) func(runState) bool {
	return func(s runState) bool { return s.run != nil && s.run.Stage == stage && s.run.Hash == hash }
}

// runWatch follows one Deployment with an informer and records its
// analysis run, phase and message each time one of them changes, from the
// moment it is created until the test ends, so that a test sees the states
// a poll would miss (a run that ends and is replaced by the next step's at
// once).
type runWatch struct {
	mu     gosync.Mutex
	states []runState
}

// watchRuns starts following Deployment name in ns and returns once the
// initial list has been delivered.
func watchRuns(t *testing.T, ns, name string) *runWatch {
	t.Helper()
	w := &runWatch{}
	informer := appsinformers.NewFilteredDeploymentInformer(suite.client, ns, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name })
	// Registered before the informer's own cleanup, this runs after the
	// informer has stopped.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("analysis runs of %s:\n%s", name, strings.Join(w.history(0), "\n"))
		}
	})
	kit.RunInformer(t.Context(), t, informer, kit.OnAddOrUpdate(w.observe), "Deployment "+name)
	return w
}

// observe records d's analysis state when it differs from the last one.
func (w *runWatch) observe(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	a := d.Annotations
	s := runState{at: time.Now(), raw: a["plimsoll.dev/analysis-run"], phase: a["plimsoll.dev/phase"], message: a["plimsoll.dev/message"]}
	if s.raw != "" {
		var r strategies.AnalysisRun
		if err := json.Unmarshal([]byte(s.raw), &r); err == nil {
			s.run = &r
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.states); n > 0 && w.states[n-1].raw == s.raw && w.states[n-1].phase == s.phase && w.states[n-1].message == s.message {
		return
	}
	w.states = append(w.states, s)
}

// mark returns a position in the recorded states: the next one's index.
func (w *runWatch) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.states)
}

// since returns the states recorded from mark on.
func (w *runWatch) since(mark int) []runState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]runState(nil), w.states[min(mark, len(w.states)):]...)
}

// first returns the first state from mark on for which cond holds.
func (w *runWatch) first(mark int, cond func(runState) bool) (runState, bool) {
	for _, s := range w.since(mark) {
		if cond(s) {
			return s, true
		}
	}
	return runState{}, false
}

// waitFirst waits until a state from mark on satisfies cond and returns
// the first that does, failing the test after the suite's timeout.
func (w *runWatch) waitFirst(t *testing.T, mark int, describe string, cond func(runState) bool) runState {
	t.Helper()
	var found runState
	waitFor(t, describe, func(context.Context) (bool, error) {
		var ok bool
		found, ok = w.first(mark, cond)
		return ok, nil
	})
	return found
}

// history returns the states from mark on as lines for t.Log.
func (w *runWatch) history(mark int) []string {
	var lines []string
	for _, s := range w.since(mark) {
		lines = append(lines, s.String())
	}
	return lines
}

// TestAnalysisScenarioInconclusive judges a canary whose errors (2%) are
// neither below errorRateAnalysis's 1% nor at its 5%: the workload pauses
// at step 1 for a person, stays there even once the errors fall, and a
// promote moves it on to step 2, whose own run then passes.
