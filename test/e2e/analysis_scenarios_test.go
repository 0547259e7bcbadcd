//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/test/internal/kit"
)

// The scenarios below judge examples/canary (4 replicas) with steps "25%,
// 50%, 100%": step 1 runs 1 canary pod of 4, step 2 runs 2, and each of
// the two has its own analysis run before the stable Deployment takes the
// new template. Each scenario starts from revision 1 Healthy (a first
// revision has no canary, so no analysis), rolls out revisions on top of
// it and asserts what a user sees: the annotations, the Events, the
// Service's ready endpoints, the Jobs.

func TestAnalysisScenarioInconclusive(t *testing.T) {
	p := startPrometheus(t)
	sc := startScenario(t, analysedCanary(t, "v1"), "--prometheus-url", p.url)
	ns := sc.s.ns
	mark := sc.endpoints.mark()

	t.Log("1. revision 2 answers 2% errors: step 1 is inconclusive, the workload waits for a person")
	h2 := sc.revision(t, 2, analysedCanary(t, "v2"))
	sc.publish(t, p, h2, 0.02)
	paused := waitForDeployment(t, ns, "api", "step 1 inconclusive",
		phaseIs(2, "Paused", "canary step 1/3", "analysis error-rate/ratio inconclusive", "promote or abort"))
	t.Logf("message: %s", paused.Annotations["plimsoll.dev/message"])
	r := recordedRun(t, paused)
	if m := r.Metrics[0]; r.Stage != "step 1" || r.Hash != h2 || r.Verdict != strategies.VerdictInconclusive ||
		m.Inconclusive != 1 || m.Successful != 0 || m.Failed != 0 || m.Value != "0.02" {
		t.Errorf("the run of step 1: %+v, want Inconclusive on one inconclusive measurement of 0.02", r)
	}
	if paused.Annotations["plimsoll.dev/failed-hash"] == h2 {
		t.Error("an inconclusive verdict set failed-hash")
	}
	waitFor(t, "an Analysis Warning for the inconclusive verdict", func(context.Context) (bool, error) {
		return analysisEvent(t, ns, corev1.EventTypeWarning, "step 1: analysis error-rate/ratio inconclusive: 0.02") == 1, nil
	})
	checkServing(t, sc.endpoints, 1, 4)
	raw := paused.Annotations["plimsoll.dev/analysis-run"]
	stays := func(context.Context) error {
		d := getDeployment(t, ns, "api")
		if a := d.Annotations; a["plimsoll.dev/phase"] != "Paused" || !strings.Contains(a["plimsoll.dev/message"], "canary step 1/3") ||
			a["plimsoll.dev/analysis-run"] != raw {
			return fmt.Errorf("phase %s, message %q, run %s", a["plimsoll.dev/phase"], a["plimsoll.dev/message"], a["plimsoll.dev/analysis-run"])
		}
		if c := *getDeployment(t, ns, "api-canary").Spec.Replicas; c != 1 {
			return fmt.Errorf("api-canary asks for %d pods, want 1", c)
		}
		return nil
	}
	holdsFor(t, "the workload paused at step 1, its run decided", 3*time.Second, stays)

	t.Log("2. the errors fall to 0.1%: the verdict stands until a person decides")
	p.exporter.set(ns, "api", h2, 50, 0.001)
	p.waitForValue(t, errorRatio(ns, "api", h2), valueBetween(0, 0.002))
	if err := stays(context.Background()); err != nil {
		t.Errorf("once the errors fell: %v", err)
	}

	t.Log("3. promote: step 2 (50%) runs an analysis of its own, which passes")
	promoted := time.Now()
	command(t, ns, "api", "promote")
	step2 := waitForDeployment(t, ns, "api", "step 2/3", phaseIs(2, "Progressing", "canary step 2/3"))
	t.Logf("after the promote: %s", step2.Annotations["plimsoll.dev/message"])
	first := sc.runs.waitFirst(t, 0, "the run of step 2", stageOf("step 2", h2))
	if m := first.run.Metrics[0]; first.run.Verdict != strategies.VerdictRunning || m.Taken() != 0 || first.run.Started.Before(promoted.Add(-time.Second)) {
		t.Errorf("step 2's run as first recorded: %s; want a new run, started after the promote at %s", first, promoted.Format("15:04:05.000"))
	}
	done := sc.waitCompleted(t, 2, h2, "registry.example/api:v2", mark, "step 2")
	if m := recordedRun(t, done).Metrics[0]; m.Successful != 3 || m.Inconclusive != 0 {
		t.Errorf("step 2's run: %+v, want 3 successful measurements", m)
	}
	// The promote moved on past step 1's run: it was never judged again.
	if s, ok := sc.runs.first(0, func(s runState) bool {
		return stageOf("step 1", h2)(s) && s.run.Verdict != strategies.VerdictRunning && s.raw != raw
	}); ok {
		t.Errorf("step 1's run changed after its inconclusive verdict: %s", s)
	}
	checkMetrics(t, sc.d,
		`plimsoll_rollout_commands_total{command="promote"} 1`,
		`plimsoll_analysis_runs_total{verdict="Inconclusive"} 1`,
		`plimsoll_analysis_runs_total{verdict="Successful"} 1`)
}

// checkServer is a web check for analyses on a loopback port of the test
// process, which the daemon (on this host) reaches: GET /check answers
// {"status":{"ok":<ok>}} with ok as the test sets it.
type checkServer struct {
	url      string
	ok       atomic.Bool
	requests atomic.Int64 // GET /check answered
	strays   atomic.Int64 // anything else
}

func startCheckServer(t *testing.T) *checkServer {
	t.Helper()
	c := &checkServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/check" {
			c.strays.Add(1)
			http.NotFound(w, r)
			return
		}
		c.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":{"ok":%t}}`, c.ok.Load())
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL + "/check"
	return c
}

// webCheckAnalysis is an analysis "web-check" of one metric "ok" asking
// url for {.status.ok} once a second, 2 measurements; true passes, and
// anything else fails at once.
func webCheckAnalysis(url string) string {
	return kit.AnalysisDoc("web-check", fmt.Sprintf(`metrics:
- name: ok
  interval: 1s
  count: 2
  timeout: 5s
  successCondition: result == true
  web:
    url: %s
    jsonPath: '{.status.ok}'
`, url))
}

// TestAnalysisScenarioWebCheck gates the canary steps on an HTTP check: a
// revision whose check answers false fails at step 1 and its canary
// leaves the Service; the next one, whose check answers true, completes.
func TestAnalysisScenarioWebCheck(t *testing.T) {
	check := startCheckServer(t)
	doc := webCheckAnalysis(check.url)
	sc := startScenario(t, judgedCanary(t, "v1", "web-check", doc))
	if n := check.requests.Load(); n != 0 {
		t.Errorf("the check was asked %d times for a first revision, which has no canary", n)
	}

	t.Log("1. the check answers false: revision 2 fails at step 1")
	mark := sc.endpoints.mark()
	h2 := sc.revision(t, 2, judgedCanary(t, "v2", "web-check", doc))
	failed := sc.waitFailed(t, 2, h2, mark, "revision 2 failed on the canary", "analysis web-check/ok failed: false")
	if m := recordedRun(t, failed).Metrics[0]; m.Failed != 1 || m.Successful != 0 || m.Value != "false" {
		t.Errorf("the run of revision 2: %+v, want one failed measurement of false", m)
	}
	asked := check.requests.Load()
	if asked == 0 {
		t.Error("the check server saw no request, yet revision 2 failed on it")
	}

	t.Log("2. the check answers true: revision 3 completes")
	check.ok.Store(true)
	mark = sc.endpoints.mark()
	h3 := sc.revision(t, 3, judgedCanary(t, "v3", "web-check", doc))
	done := sc.waitCompleted(t, 3, h3, "registry.example/api:v3", mark, "step 1", "step 2")
	if m := recordedRun(t, done).Metrics[0]; m.Successful != 2 || m.Value != "true" {
		t.Errorf("step 2's run of revision 3: %+v, want 2 successful measurements of true", m)
	}
	// Two steps of 2 measurements each.
	if n := check.requests.Load() - asked; n < 4 {
		t.Errorf("the check server saw %d requests for revision 3, want at least 4", n)
	}
	if n := check.strays.Load(); n != 0 {
		t.Errorf("the check server saw %d requests other than GET /check", n)
	}
	t.Logf("the check server answered %d requests", check.requests.Load())
}

// smokeAnalysis is an analysis "smoke-test" of one Job metric "smoke": a
// Job of one container running the image given by the argument image
// (default registry.example/smoke:v1), which kwok's stages complete unless
// the image contains "job-fails".
var smokeAnalysis = kit.AnalysisDoc("smoke-test", `args:
- name: image
  value: registry.example/smoke:v1
metrics:
- name: smoke
  job:
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: smoke
          image: '{{args.image}}'
          args: ["--target", "http://{{args.service}}.{{args.namespace}}"]
`)

// smokeJob reads the Job that the measurement recorded in run names
// ("job <name> succeeded"), checking that its name is the run's: it
// starts with "api-smoke-<hash>-", ends with the measurement's number -0,
// and that it is owned by Deployment api.
func smokeJob(t *testing.T, ns string, owner *appsv1.Deployment, run *strategies.AnalysisRun, outcome string) *batchv1.Job {
	t.Helper()
	value := run.Metrics[0].Value
	name, ok := strings.CutPrefix(strings.TrimSuffix(value, " "+outcome), "job ")
	if !ok || !strings.HasSuffix(value, " "+outcome) {
		t.Fatalf("the %s run's value %q, want \"job <name> %s\"", run.Stage, value, outcome)
	}
	if prefix := "api-smoke-" + run.Hash[:min(len(run.Hash), 10)] + "-"; !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, "-0") || len(name) > 63 {
		t.Errorf("the Job of %s is named %q, want %s<run>-0, at most 63 characters", run.Stage, name, prefix)
	}
	j, err := suite.client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the Job of %s: %v", run.Stage, err)
	}
	if ref := metav1.GetControllerOf(j); ref == nil || ref.Kind != "Deployment" || ref.Name != "api" || ref.UID != owner.UID {
		t.Errorf("Job %s is controlled by %+v, want Deployment api (%s)", name, ref, owner.UID)
	}
	return j
}

// jobCondition returns the condition of type ct of j that is True.
func jobCondition(j *batchv1.Job, ct batchv1.JobConditionType) (batchv1.JobCondition, bool) {
	for _, c := range j.Status.Conditions {
		if c.Type == ct && c.Status == corev1.ConditionTrue {
			return c, true
		}
	}
	return batchv1.JobCondition{}, false
}

// TestAnalysisScenarioJob gates the canary steps on a Job: with an image
// that succeeds, each step's run starts a Job named for it, owned by the
// workload's Deployment, and the revision completes; with an image that
// fails ("job-fails", see hack/kwok/stages.yaml), the revision fails at
// step 1 with the Job's failure in its message.
func TestAnalysisScenarioJob(t *testing.T) {
	sc := startScenario(t, judgedCanary(t, "v1", "smoke-test", smokeAnalysis))
	ns := sc.s.ns
	api := getDeployment(t, ns, "api")

	t.Log("1. the smoke Job succeeds: revision 2 completes, one Job a step")
	mark := sc.endpoints.mark()
	h2 := sc.revision(t, 2, judgedCanary(t, "v2", "smoke-test", smokeAnalysis))
	sc.waitCompleted(t, 2, h2, "registry.example/api:v2", mark, "step 1", "step 2")
	names := map[string]bool{}
	for _, stage := range []string{"step 1", "step 2"} {
		s := sc.runs.waitFirst(t, 0, stage+" successful", func(s runState) bool {
			return stageOf(stage, h2)(s) && s.run.Verdict == strategies.VerdictSuccessful
		})
		j := smokeJob(t, ns, api, s.run, "succeeded")
		names[j.Name] = true
		if _, ok := jobCondition(j, batchv1.JobComplete); !ok || j.Status.Succeeded != 1 {
			t.Errorf("Job %s of %s: succeeded %d, conditions %+v; want Complete", j.Name, stage, j.Status.Succeeded, j.Status.Conditions)
		}
		if args := strings.Join(j.Spec.Template.Spec.Containers[0].Args, " "); args != "--target http://api."+ns {
			t.Errorf("Job %s runs with args %q, want the arguments substituted", j.Name, args)
		}
		if got := j.Spec.Template.Spec.Containers[0].Image; got != "registry.example/smoke:v1" {
			t.Errorf("Job %s runs %s, want registry.example/smoke:v1", j.Name, got)
		}
	}
	jobs, err := suite.client.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "plimsoll.dev/workload=api"})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 2 || len(names) != 2 {
		var got []string
		for _, j := range jobs.Items {
			got = append(got, j.Name)
		}
		t.Errorf("Jobs of the workload: %v, want one for each step's run: %v", got, names)
	}

	t.Log("2. the smoke Job fails: revision 3 fails at step 1, naming the Job's failure")
	mark = sc.endpoints.mark()
	h3 := sc.revision(t, 3, judgedCanary(t, "v3", "smoke-test", smokeAnalysis,
		"plimsoll.dev/analysis-args: image=registry.example/smoke:job-fails"))
	failed := sc.waitFailed(t, 3, h3, mark, "revision 3 failed on the canary", "analysis smoke-test/smoke failed: job api-smoke-")
	r := recordedRun(t, failed)
	j := smokeJob(t, ns, api, &r, "failed")
	c, ok := jobCondition(j, batchv1.JobFailed)
	if !ok {
		t.Fatalf("Job %s: conditions %+v, want Failed", j.Name, j.Status.Conditions)
	}
	if msg := failed.Annotations["plimsoll.dev/message"]; !strings.Contains(msg, j.Name+" failed") || !strings.Contains(msg, c.Reason) || !strings.Contains(msg, c.Message) {
		t.Errorf("message %q does not name Job %s's failure %q: %q", msg, j.Name, c.Reason, c.Message)
	}
	if m := r.Metrics[0]; m.Failed != 1 || m.Successful != 0 {
		t.Errorf("the run of revision 3: %+v, want one failed measurement", m)
	}
	// The Job's pod failed as kwok's pod-job-fail stage makes it.
	pods, err := suite.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + j.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("Job %s has %d pods, want 1 (backoffLimit 0)", j.Name, len(pods.Items))
	}
	pod := pods.Items[0]
	if len(pod.Status.ContainerStatuses) != 1 || pod.Status.Phase != corev1.PodFailed {
		t.Fatalf("pod %s: phase %s, container statuses %+v; want Failed", pod.Name, pod.Status.Phase, pod.Status.ContainerStatuses)
	}
	if term := pod.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 1 || term.Reason != "Error" {
		t.Errorf("pod %s: container state %+v, want terminated with exit code 1, reason Error", pod.Name, pod.Status.ContainerStatuses[0].State)
	}
}

// TestAnalysisScenarioSIGKILL kills the daemon in the middle of step 1's
// run (5 measurements 3s apart, the canary at 0.1% errors), after 2
// measurements, and starts it again 5s later: the run resumes with its
// counts and its start, takes exactly its 5 measurements, and the
// revision completes as it would have without the kill.
func TestAnalysisScenarioSIGKILL(t *testing.T) {
	const count, interval = 5, 3 * time.Second
	files := func(version string) map[string]string {
		return analysedCanaryWith(t, version, "interval: 2s\n      count: 3", "interval: 3s\n      count: 5")
	}
	p := startPrometheus(t)
	sc := startScenario(t, files("v1"), "--prometheus-url", p.url)
	ns := sc.s.ns
	mark := sc.endpoints.mark()

	h2 := sc.revision(t, 2, files("v2"))
	sc.publish(t, p, h2, 0.001)
	sc.runs.waitFirst(t, 0, "2 successful measurements of step 1", func(s runState) bool {
		return stageOf("step 1", h2)(s) && s.run.Metrics[0].Successful >= 2
	})
	sc.d.Kill(t)
	killed := getDeployment(t, ns, "api")
	atKill := recordedRun(t, killed)
	t.Logf("killed the daemon at %s: %s", killed.Annotations["plimsoll.dev/phase"], killed.Annotations["plimsoll.dev/message"])
	time.Sleep(5 * time.Second)
	if now := getDeployment(t, ns, "api").Annotations["plimsoll.dev/analysis-run"]; now != killed.Annotations["plimsoll.dev/analysis-run"] {
		t.Errorf("the run changed while no daemon ran: %s", now)
	}
	restart := sc.runs.mark()
	sc.d = kit.StartDaemon(t, sc.s, sc.flags...)

	after := sc.runs.waitFirst(t, restart, "the first run written after the restart", func(s runState) bool {
		return s.raw != killed.Annotations["plimsoll.dev/analysis-run"]
	})
	t.Logf("first run after the restart: %s", after)
	if r := after.run; r == nil || r.Stage != "step 1" || r.Hash != h2 || !r.Started.Equal(atKill.Started) || r.Metrics[0].Successful < 2 ||
		r.Metrics[0].Successful < atKill.Metrics[0].Successful {
		t.Errorf("the first run after the restart is not step 1's resumed (stage step 1, started %s, at least %d successful)",
			atKill.Started.Format(time.RFC3339Nano), atKill.Metrics[0].Successful)
	}
	ended := sc.runs.waitFirst(t, restart, "step 1's verdict", func(s runState) bool {
		return stageOf("step 1", h2)(s) && s.run.Verdict != strategies.VerdictRunning
	})
	if m := ended.run.Metrics[0]; ended.run.Verdict != strategies.VerdictSuccessful || m.Successful != count || m.Failed != 0 || m.Inconclusive != 0 {
		t.Errorf("step 1's run ended %s, want Successful with exactly %d successful measurements", ended, count)
	}
	// From the kill on, step 1's run only ever grows from where it stood,
	// and its next measurement came interval after the last one recorded.
	last := atKill.Metrics[0]
	for _, s := range sc.runs.since(restart) {
		if !stageOf("step 1", h2)(s) {
			continue
		}
		m := s.run.Metrics[0]
		if !s.run.Started.Equal(atKill.Started) || m.Successful < last.Successful || m.Successful > count {
			t.Errorf("step 1's run went from %d successful to %s", last.Successful, s)
		}
		if m.At.After(last.At) && m.At.Sub(last.At) < interval-100*time.Millisecond {
			t.Errorf("a measurement at %s came %s after the one before, want at least %s; %s",
				m.At.Format("15:04:05.000"), m.At.Sub(last.At), interval, s)
		}
		last = m
	}
	t.Logf("step 1's run from the restart on:\n%s", strings.Join(sc.runs.history(restart), "\n"))
	step2 := sc.runs.waitFirst(t, 0, "the run of step 2", stageOf("step 2", h2))
	if step2.at.Before(ended.at) {
		t.Errorf("step 2's run began at %s, before step 1's ended at %s", step2.at.Format("15:04:05.000"), ended.at.Format("15:04:05.000"))
	}
	done := sc.waitCompleted(t, 2, h2, "registry.example/api:v2", mark, "step 1", "step 2")
	if m := recordedRun(t, done).Metrics[0]; m.Successful != count {
		t.Errorf("step 2's run: %+v, want %d successful measurements", m, count)
	}
	// A finished run is never started again, nor a running one anew.
	for _, stage := range []string{"step 1", "step 2"} {
		if n := analysisEvent(t, ns, corev1.EventTypeNormal, stage+": analysis started"); n != 1 {
			t.Errorf("%d Events %q, want 1", n, stage+": analysis started")
		}
	}
	if n := analysisEvent(t, ns, corev1.EventTypeNormal, "step 1: analysis successful"); n != 1 {
		t.Errorf("%d Events %q, want 1", n, "step 1: analysis successful")
	}
}

// TestAnalysisScenarioNoData judges a revision that has no data to be
// judged on, with 2 errors in a row tolerated and a measurement every 2s:
// each error is counted, none counts toward a pass, and the third in a
// row fails the revision at step 1. Data that comes back later changes
// nothing.
func TestAnalysisScenarioNoData(t *testing.T) {
	files := func(t *testing.T, version string) map[string]string {
		return analysedCanaryWith(t, version, "initialDelay: 3s\n      interval: 2s\n      count: 3",
			"initialDelay: 1s\n      interval: 2s\n      count: 3\n      consecutiveErrorLimit: 2")
	}
	cases := []struct {
		name string
		// before runs before revision 2 is committed, after once its hash
		// is known; repair once it failed.
		before func(t *testing.T, p *promServer)
		after  func(t *testing.T, p *promServer, sc *scenario, hash string)
		repair func(t *testing.T, p *promServer, sc *scenario, hash string)
		// want is in the message of every error measurement.
		want string
	}{
		{
			name:   "Prometheus stopped",
			before: func(t *testing.T, p *promServer) { p.stop(t) },
			after:  func(t *testing.T, p *promServer, sc *scenario, hash string) { sc.publish(t, p, hash, 0.001) },
			repair: func(t *testing.T, p *promServer, _ *scenario, _ string) { p.start(t) },
			want:   "connection refused",
		},
		{
			name:   "series absent",
			before: func(*testing.T, *promServer) {},
			after:  func(*testing.T, *promServer, *scenario, string) {},
			repair: func(t *testing.T, p *promServer, sc *scenario, hash string) { sc.publish(t, p, hash, 0.001) },
			want:   "query returned no data",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := startPrometheus(t)
			sc := startScenario(t, files(t, "v1"), "--prometheus-url", p.url)
			ns := sc.s.ns
			mark := sc.endpoints.mark()
			tc.before(t, p)
			h2 := sc.revision(t, 2, files(t, "v2"))
			tc.after(t, p, sc, h2)
			failed := sc.waitFailed(t, 2, h2, mark, "analysis error-rate/ratio failed: 3 errors in a row", tc.want)
			if m := recordedRun(t, failed).Metrics[0]; m.Errors != 3 || m.ConsecutiveErrors != 3 || m.Successful+m.Failed+m.Inconclusive != 0 {
				t.Errorf("the run of revision 2: %+v, want 3 errors and nothing else", m)
			}
			// Every measurement was an error that says why, counted one
			// at a time; none was taken for a pass.
			var errs []int
			for _, s := range sc.runs.since(0) {
				if !stageOf("step 1", h2)(s) {
					continue
				}
				m := s.run.Metrics[0]
				if m.Successful+m.Failed+m.Inconclusive != 0 || (m.Errors > 0 && !strings.Contains(m.Message, tc.want)) {
					t.Errorf("want only errors naming %q: %s", tc.want, s)
				}
				if len(errs) == 0 || errs[len(errs)-1] != m.Errors {
					errs = append(errs, m.Errors)
				}
			}
			if fmt.Sprint(errs) != "[0 1 2 3]" {
				t.Errorf("step 1's errors went %v, want [0 1 2 3]; runs:\n%s", errs, strings.Join(sc.runs.history(0), "\n"))
			}
			checkMetrics(t, sc.d,
				fmt.Sprintf(`plimsoll_analysis_measurements_total{metric="error-rate/ratio",namespace=%q,outcome="Error"} 3`, ns),
				`plimsoll_analysis_runs_total{verdict="Failed"} 1`)

			tc.repair(t, p, sc, h2)
			p.waitForValue(t, errorRatio(ns, "api", h2), valueBetween(0, 0.002))
			holdsFor(t, "the failed revision staying out with data back", 3*time.Second, func(context.Context) error {
				d := getDeployment(t, ns, "api")
				if d.Annotations["plimsoll.dev/phase"] != "Degraded" || d.Annotations["plimsoll.dev/failed-hash"] != h2 {
					return fmt.Errorf("phase %s: %s", d.Annotations["plimsoll.dev/phase"], d.Annotations["plimsoll.dev/message"])
				}
				if c := *getDeployment(t, ns, "api-canary").Spec.Replicas; c != 0 {
					return fmt.Errorf("api-canary asks for %d pods", c)
				}
				return nil
			})
		})
	}
}
