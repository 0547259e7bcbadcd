package strategies

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// TestPlanCanaryAnalysis walks revision 4 of web (N = 4, steps "25%, pause
// 30s, 50%, 100%") through its analysis: errorRate, 3 measurements 10s
// apart after 5s.
func TestPlanCanaryAnalysis(t *testing.T) {
	specs := []MetricSpec{errorRate}
	desired := canaryDesired(4, "25%, pause 30s, 50%, 100%")
	noRollback := desired
	noRollback.AutoRollback = false
	// run is errorRate's run at stage for hash, with outcomes recorded
	// 1s apart from t0.
	run := func(stage, hash string, outcomes ...Outcome) *AnalysisRun {
		r := StartRun(stage, hash, specs, t0)
		for n, o := range outcomes {
			r = r.Record(specs, []Measurement{measurement(o, "0.1", time.Duration(n)*time.Second)})
		}
		return &r
	}
	s, f, i := OutcomeSuccessful, OutcomeFailed, OutcomeInconclusive
	st := func(n int32) *appsv1.Deployment { return stableDeploy(v3, sized(n)) }
	cy := func(n int32) *appsv1.Deployment { return canaryDeploy(v4, sized(n)) }

	tests := []struct {
		name    string
		desired CanaryDesired
		stable  *appsv1.Deployment
		canary  *appsv1.Deployment
		pods    []Pod
		step    int
		now     time.Duration
		run     *AnalysisRun
		promote bool
		// want: the phase, words of the message, the step, the run's
		// stage and verdict after the plan, and the requeue.
		phase   Phase
		words   []string
		step2   int
		stage   string
		verdict Verdict
		requeue time.Duration
		failed  bool
	}{
		{
			name:   "step 1, traffic not in place yet: no run starts",
			stable: st(4), canary: cy(1), pods: []Pod{ready("c0")},
			phase: PhaseProgressing, words: []string{"going to 25% (1/4 pods)"},
		},
		{
			name:   "step 1, traffic in place: the step's run starts, the step waits; plan again at its first measurement, 5s on",
			stable: st(3), canary: cy(1), pods: []Pod{serving("c0")},
			phase: PhaseProgressing, words: []string{"canary step 1/4: 25% (1/4 pods serving); analysis running"},
			stage: "step 1", verdict: VerdictRunning, requeue: 5 * time.Second,
		},
		{
			name:   "step 1, one measurement of 3: the step waits for the next, 10s after the first",
			stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, now: 4 * time.Second, run: run("step 1", h4, s),
			phase: PhaseProgressing, words: []string{"analysis running: error-rate/ratio 1/3, last successful"},
			stage: "step 1", verdict: VerdictRunning, requeue: 6 * time.Second,
		},
		{
			name:   "step 1, the run passed: on to step 2 at once",
			stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, now: 30 * time.Second, run: run("step 1", h4, s, s, s),
			phase: PhaseProgressing, step2: 1, stage: "step 1", verdict: VerdictSuccessful, requeue: atOnce,
		},
		{
			name:   "step 1, the run failed: the revision fails; the message names the metric and the value",
			stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, now: 30 * time.Second, run: run("step 1", h4, s, f),
			phase: PhaseDegraded, words: []string{"revision 4 failed on the canary", "analysis error-rate/ratio failed: 0.1"},
			stage: "step 1", verdict: VerdictFailed, failed: true,
		},
		{
			name:    "step 1, the run failed, auto-rollback off: Degraded, held",
			desired: noRollback, stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, run: run("step 1", h4, f),
			phase: PhaseDegraded, words: []string{"error-rate/ratio failed", "auto-rollback is off"},
			stage: "step 1", verdict: VerdictFailed, failed: true,
		},
		{
			name:   "step 1, the run is inconclusive: Paused until promote or abort",
			stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, run: run("step 1", h4, i, i),
			phase: PhasePaused, words: []string{"inconclusive", "promote or abort"},
			stage: "step 1", verdict: VerdictInconclusive,
		},
		{
			name:   "step 1 inconclusive, promote: on to step 2 (not a full promotion)",
			stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, run: run("step 1", h4, i, i), promote: true,
			phase: PhaseProgressing, words: []string{"canary step 2/4"}, step2: 1, stage: "step 2", verdict: VerdictRunning, requeue: 5 * time.Second,
		},
		{
			name:   "step 2 (pause 30s) begins: its own run starts",
			stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, step: 1, run: run("step 1", h4, s, s, s),
			phase: PhaseProgressing, words: []string{"paused until 12:00:30", "analysis running"}, step2: 1,
			stage: "step 2", verdict: VerdictRunning, requeue: 5 * time.Second,
		},
		{
			name:   "step 2, the pause is over and the run still runs: the step waits for it",
			stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, step: 1, now: time.Minute, run: run("step 2", h4, s),
			phase: PhaseProgressing, words: []string{"canary step 2/4", "analysis running"}, step2: 1,
			stage: "step 2", verdict: VerdictRunning, requeue: analysisRetry,
		},
		{
			name:   "step 2, the run passed before the pause is over: the pause still holds",
			stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, step: 1, now: 10 * time.Second, run: run("step 2", h4, s, s, s),
			phase: PhaseProgressing, words: []string{"paused until 12:00:30"}, step2: 1,
			stage: "step 2", verdict: VerdictSuccessful, requeue: 20 * time.Second,
		},
		{
			name:   "a run of another revision does not count: a new one starts",
			stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, run: run("step 1", h3, s, s, s),
			phase: PhaseProgressing, words: []string{"analysis running"}, stage: "step 1", verdict: VerdictRunning, requeue: 5 * time.Second,
		},
		{
			name:   "a failed run of another revision fails nothing",
			stable: st(3), canary: cy(1), pods: []Pod{serving("c0")}, run: run("step 1", h3, f),
			phase: PhaseProgressing, stage: "step 1", verdict: VerdictRunning, requeue: 5 * time.Second,
		},
		{
			name:   "step 4, 100%: no analysis; the stable takes the template",
			stable: st(2), canary: cy(2), pods: []Pod{serving("c0"), serving("c1")}, step: 3, run: run("step 3", h4, s, s, s),
			phase: PhaseProgressing, words: []string{"promoting the stable Deployment"}, step2: 3, stage: "step 3", verdict: VerdictSuccessful,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := tt.desired
			if desired.Steps == nil {
				desired = canaryDesired(4, "25%, pause 30s, 50%, 100%")
			}
			o := CanaryObserved{Stable: tt.stable, Canary: tt.canary, Pods: tt.pods, ServiceSelectsServing: true,
				Step: tt.step, StepSince: t0, Promote: tt.promote, Now: at(tt.now), Analysis: specs, Run: tt.run}
			plan := PlanCanary(desired, progressing4, o)
			if plan.Status.Phase != tt.phase {
				t.Errorf("phase %s, want %s (message %q)", plan.Status.Phase, tt.phase, plan.Status.Message)
			}
			checkMessage(t, plan.Status.Message, tt.words)
			if plan.Step != tt.step2 {
				t.Errorf("step %d, want %d", plan.Step, tt.step2)
			}
			checkRun(t, plan.Run, tt.stage, tt.verdict)
			if plan.RequeueAfter != tt.requeue {
				t.Errorf("requeue %s, want %s", plan.RequeueAfter, tt.requeue)
			}
			if failed := plan.Status.FailedHash == h4; failed != tt.failed {
				t.Errorf("failed hash %q, want failed %v", plan.Status.FailedHash, tt.failed)
			}
			if tt.failed && desired.AutoRollback {
				if plan.CanaryReplicas == nil || *plan.CanaryReplicas != 0 || plan.StableReplicas == nil || *plan.StableReplicas != 4 ||
					len(plan.Unlabel) != 1 || plan.Actions[0].Kind != ActionUnlabel {
					t.Errorf("a failed run must unlabel first, canary to 0, stable to 4: %+v", plan.Actions)
				}
			}
		})
	}
}

// TestPlanCanaryWithoutAnalysis checks that a workload without analyses
// keeps its recorded run (for users to read) and is not held by it.
func TestPlanCanaryWithoutAnalysis(t *testing.T) {
	specs := []MetricSpec{errorRate}
	old := StartRun("step 1", h3, specs, t0).Record(specs, []Measurement{measurement(OutcomeFailed, "0.2", 0)})
	o := CanaryObserved{Stable: stableDeploy(v3, sized(3)), Canary: canaryDeploy(v4, sized(1)), Pods: []Pod{serving("c0")},
		ServiceSelectsServing: true, StepSince: t0, Now: t0, Run: &old}
	plan := PlanCanary(canaryDesired(4, "25%, 100%"), progressing4, o)
	if plan.Run != &old || plan.Step != 1 || plan.Status.FailedHash != "" {
		t.Errorf("run %p (want %p), step %d (want 1), failed %q", plan.Run, &old, plan.Step, plan.Status.FailedHash)
	}
}

// checkRun checks the run a plan records: none for stage "", else the run
// of stage with verdict.
func checkRun(t *testing.T, run *AnalysisRun, stage string, verdict Verdict) {
	t.Helper()
	switch {
	case stage == "" && run != nil:
		t.Errorf("run %+v, want none", run)
	case stage != "" && (run == nil || run.Stage != stage || run.Verdict != verdict):
		t.Errorf("run %+v, want stage %q verdict %s", run, stage, verdict)
	}
}

// TestJudging: a workload's analyses judge its revision while it is in
// flight or its run runs, and not once it serves Healthy with its run
// decided.
func TestJudging(t *testing.T) {
	healthy := Status{Phase: PhaseHealthy, Revision: 4, Hash: h4}
	running := &AnalysisRun{Hash: h4, Verdict: VerdictRunning}
	decided := &AnalysisRun{Hash: h4, Verdict: VerdictSuccessful}
	tests := []struct {
		name     string
		recorded Status
		serving  string
		run      *AnalysisRun
		want     bool
	}{
		{"Healthy, serving, run decided", healthy, h4, decided, false},
		{"Healthy, serving, no run", healthy, h4, nil, false},
		{"Healthy, its post-promotion run runs", healthy, h4, running, true},
		{"Progressing", Status{Phase: PhaseProgressing, Revision: 4, Hash: h4}, h4, nil, true},
		{"Paused at a canary step", Status{Phase: PhasePaused, Revision: 4, Hash: h4}, h3, nil, true},
		{"recorded, not serving yet", healthy, h3, decided, true},
	}
	for _, tt := range tests {
		if got := Judging(tt.recorded, tt.serving, tt.run); got != tt.want {
			t.Errorf("%s: Judging = %v, want %v", tt.name, got, tt.want)
		}
	}
}
