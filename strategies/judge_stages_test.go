package strategies

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// TestPlanBlueGreenAnalysis walks revision 4 of web (N = 4, blue active on
// v3, green taking v4) through its pre- and post-promotion runs of
// errorRate (3 measurements 10s apart after 5s).
func TestPlanBlueGreenAnalysis(t *testing.T) {
	specs := []MetricSpec{errorRate}
	run := func(stage string, outcomes ...Outcome) *AnalysisRun {
		r := StartRun(stage, h4, specs, t0)
		for n, o := range outcomes {
			r = r.Record(specs, []Measurement{measurement(o, "0.1", time.Duration(n)*time.Second)})
		}
		return &r
	}
	s, f, i := OutcomeSuccessful, OutcomeFailed, OutcomeInconclusive
	blue := func() *appsv1.Deployment { return colorDeploy(ColorBlue, v3, sized(4)) }
	greenUp := func() *appsv1.Deployment { return colorDeploy(ColorGreen, v4, sized(4)) }
	greenStarting := colorDeploy(ColorGreen, v4, withSpecReplicas(4), withPods(4, 4, 2, 2))
	blueKept := at(30 * time.Second) // the scale-down time the swap recorded

	tests := []struct {
		name          string
		green         *appsv1.Deployment
		active        Color
		scaleDownAt   time.Time
		now           time.Duration
		run           *AnalysisRun
		promote       bool
		phase         Phase
		words         []string
		wantActive    Color
		stage         string
		verdict       Verdict
		failed        bool
		blueReplicas  *int32 // nil: no write of blue's count expected
		greenReplicas *int32
	}{
		{
			name:  "green not yet available: no run starts",
			green: greenStarting, active: ColorBlue,
			phase: PhaseProgressing, words: []string{"waiting for 4 available"}, wantActive: ColorBlue,
		},
		{
			name:  "green available: the pre-promotion run starts, no swap",
			green: greenUp(), active: ColorBlue,
			phase: PhaseProgressing, words: []string{"ready on green; analysis running"}, wantActive: ColorBlue,
			stage: StagePrePromotion, verdict: VerdictRunning,
		},
		{
			name:  "the pre-promotion run passed: swap, and the post-promotion run starts with it",
			green: greenUp(), active: ColorBlue, run: run(StagePrePromotion, s, s, s),
			phase: PhaseProgressing, words: []string{"serves from green"}, wantActive: ColorGreen,
			stage: StagePostPromotion, verdict: VerdictRunning,
		},
		{
			name:  "the pre-promotion run failed: never swapped, green to 0, traffic stays on blue",
			green: greenUp(), active: ColorBlue, run: run(StagePrePromotion, s, f),
			phase: PhaseDegraded, words: []string{"revision 4 failed pre-promotion", "error-rate/ratio failed: 0.1", "traffic stays on blue"},
			wantActive: ColorBlue, stage: StagePrePromotion, verdict: VerdictFailed, failed: true, greenReplicas: ptrTo(int32(0)),
		},
		{
			name:  "the pre-promotion run is inconclusive: Paused, no swap",
			green: greenUp(), active: ColorBlue, run: run(StagePrePromotion, i, i),
			phase: PhasePaused, words: []string{"inconclusive", "promote or abort"}, wantActive: ColorBlue,
			stage: StagePrePromotion, verdict: VerdictInconclusive,
		},
		{
			name:  "an inconclusive pre-promotion run and a promote: swap",
			green: greenUp(), active: ColorBlue, run: run(StagePrePromotion, i, i), promote: true,
			phase: PhaseProgressing, words: []string{"serves from green"}, wantActive: ColorGreen,
			stage: StagePostPromotion, verdict: VerdictRunning,
		},
		{
			name:  "a promote while the pre-promotion run runs waits for it",
			green: greenUp(), active: ColorBlue, run: run(StagePrePromotion, s), promote: true,
			phase: PhaseProgressing, words: []string{"analysis running"}, wantActive: ColorBlue,
			stage: StagePrePromotion, verdict: VerdictRunning,
		},
		{
			name:  "after the swap, the post-promotion run runs past the scale-down time: blue kept at 4",
			green: greenUp(), active: ColorGreen, scaleDownAt: blueKept, now: time.Minute, run: run(StagePostPromotion, s),
			phase: PhaseProgressing, words: []string{"serves from green", "blue kept until it passes"}, wantActive: ColorGreen,
			stage: StagePostPromotion, verdict: VerdictRunning,
		},
		{
			name:  "the post-promotion run passed after the scale-down time: blue to 0",
			green: greenUp(), active: ColorGreen, scaleDownAt: blueKept, now: time.Minute, run: run(StagePostPromotion, s, s, s),
			phase: PhaseProgressing, words: []string{"scaling blue down"}, wantActive: ColorGreen,
			stage: StagePostPromotion, verdict: VerdictSuccessful, blueReplicas: ptrTo(int32(0)),
		},
		{
			name:  "the post-promotion run failed: traffic back on blue at once, green to 0",
			green: greenUp(), active: ColorGreen, scaleDownAt: blueKept, now: 10 * time.Second, run: run(StagePostPromotion, f),
			phase: PhaseDegraded, words: []string{"revision 4 failed post-promotion", "traffic back on blue"}, wantActive: ColorBlue,
			stage: StagePostPromotion, verdict: VerdictFailed, failed: true, greenReplicas: ptrTo(int32(0)),
		},
		{
			name:  "the post-promotion run failed with no scale-down time recorded: traffic back on blue all the same",
			green: greenUp(), active: ColorGreen, now: 10 * time.Second, run: run(StagePostPromotion, f),
			phase: PhaseDegraded, words: []string{"revision 4 failed post-promotion", "traffic back on blue"}, wantActive: ColorBlue,
			stage: StagePostPromotion, verdict: VerdictFailed, failed: true, greenReplicas: ptrTo(int32(0)),
		},
		{
			name:  "the post-promotion run is inconclusive: Paused, blue kept",
			green: greenUp(), active: ColorGreen, scaleDownAt: blueKept, now: time.Minute, run: run(StagePostPromotion, i, i),
			phase: PhasePaused, words: []string{"inconclusive", "promote or abort (blue kept)"}, wantActive: ColorGreen,
			stage: StagePostPromotion, verdict: VerdictInconclusive,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := blueGreenDesired(4, true)
			o := BlueGreenObserved{Blue: blue(), Green: tt.green, Active: tt.active, ScaleDownAt: tt.scaleDownAt,
				Promote: tt.promote, Now: at(tt.now), Analysis: specs, Run: tt.run}
			plan := PlanBlueGreen(desired, progressing4, o)
			if plan.Status.Phase != tt.phase {
				t.Errorf("phase %s, want %s (message %q)", plan.Status.Phase, tt.phase, plan.Status.Message)
			}
			checkMessage(t, plan.Status.Message, tt.words)
			if plan.Active != tt.wantActive {
				t.Errorf("active %q, want %q", plan.Active, tt.wantActive)
			}
			checkRun(t, plan.Run, tt.stage, tt.verdict)
			if failed := plan.Status.FailedHash == h4; failed != tt.failed {
				t.Errorf("failed hash %q, want failed %v", plan.Status.FailedHash, tt.failed)
			}
			checkCount := func(c Color, want *int32) {
				got, ok := plan.Replicas[c]
				if want != nil && (!ok || got != *want) {
					t.Errorf("%s replicas %v (set %v), want %d", c, got, ok, *want)
				}
				if want == nil && ok && got == 0 {
					t.Errorf("%s scaled to 0, want it kept", c)
				}
			}
			checkCount(ColorBlue, tt.blueReplicas)
			checkCount(ColorGreen, tt.greenReplicas)
		})
	}
}

// TestPlanBlueGreenFirstRevisionUnjudged checks that a first revision,
// with nothing serving to compare it with, is not held by the analysis.
func TestPlanBlueGreenFirstRevisionUnjudged(t *testing.T) {
	o := BlueGreenObserved{Blue: colorDeploy(ColorBlue, v4, sized(4)), Now: t0, Analysis: []MetricSpec{errorRate}}
	plan := PlanBlueGreen(blueGreenDesired(4, true), progressing4, o)
	if plan.Active != ColorBlue || plan.Run != nil {
		t.Errorf("active %q, run %+v; want blue selected and no run", plan.Active, plan.Run)
	}
}

// TestPlanRollingVerification walks revision 4 of web (rolling, complete
// on v4, v3's ReplicaSet to roll back to) through its verification run.
func TestPlanRollingVerification(t *testing.T) {
	specs := []MetricSpec{errorRate}
	run := func(outcomes ...Outcome) *AnalysisRun {
		r := StartRun(StageVerification, h4, specs, t0)
		for n, o := range outcomes {
			r = r.Record(specs, []Measurement{measurement(o, "0.1", time.Duration(n)*time.Second)})
		}
		return &r
	}
	s, f, i := OutcomeSuccessful, OutcomeFailed, OutcomeInconclusive
	tests := []struct {
		name     string
		run      *AnalysisRun
		rsets    []*appsv1.ReplicaSet
		phase    Phase
		words    []string
		template TemplateSource
		verdict  Verdict
		requeue  time.Duration
	}{
		{name: "complete: the verification starts, not Healthy yet", rsets: []*appsv1.ReplicaSet{rs3, rs4},
			phase: PhaseProgressing, words: []string{"4/4 available; verifying: analysis running"}, template: TemplateGit,
			verdict: VerdictRunning, requeue: 5 * time.Second},
		{name: "the verification passed: Healthy", rsets: []*appsv1.ReplicaSet{rs3, rs4}, run: run(s, s, s),
			phase: PhaseHealthy, words: []string{"4/4 available"}, template: TemplateGit, verdict: VerdictSuccessful},
		{name: "the verification failed: rolled back to v3", rsets: []*appsv1.ReplicaSet{rs3, rs4}, run: run(f),
			phase: PhaseDegraded, words: []string{"verification: analysis error-rate/ratio failed: 0.1", "rolled back to revision 3"}, template: TemplateRollback,
			verdict: VerdictFailed},
		{name: "the verification is inconclusive: Paused", rsets: []*appsv1.ReplicaSet{rs3, rs4}, run: run(i, i),
			phase: PhasePaused, words: []string{"inconclusive", "promote or abort"}, template: TemplateGit, verdict: VerdictInconclusive},
		{name: "nothing to roll back to: no verification", rsets: []*appsv1.ReplicaSet{rs4},
			phase: PhaseHealthy, words: []string{"4/4 available"}, template: TemplateGit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanRolling(desiredN(4), progressing4, RollingObserved{Deployment: deployment(v4), ReplicaSets: tt.rsets,
				Analysis: specs, Run: tt.run, Now: t0})
			if plan.Status.Phase != tt.phase || plan.Template != tt.template {
				t.Errorf("phase %s, template %s; want %s, %s (message %q)", plan.Status.Phase, plan.Template, tt.phase, tt.template, plan.Status.Message)
			}
			checkMessage(t, plan.Status.Message, tt.words)
			stage := ""
			if tt.verdict != "" {
				stage = StageVerification
			}
			checkRun(t, plan.Run, stage, tt.verdict)
			if plan.RequeueAfter != tt.requeue {
				t.Errorf("requeue %s, want %s", plan.RequeueAfter, tt.requeue)
			}
			if failed := plan.Status.FailedHash == h4; failed != (tt.verdict == VerdictFailed) {
				t.Errorf("failed hash %q", plan.Status.FailedHash)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	specs := []MetricSpec{errorRate}
	running := StartRun(StageVerification, h4, specs, t0)
	inconclusive := running.Record(specs, []Measurement{measurement(OutcomeInconclusive, "0.02", 0), measurement(OutcomeInconclusive, "0.02", time.Second)})
	passed := running.Record(specs, []Measurement{measurement(OutcomeSuccessful, "0", 0), measurement(OutcomeSuccessful, "0", 0), measurement(OutcomeSuccessful, "0", 0)})
	if got := inconclusive.Decide(h4, true); got.Verdict != VerdictSuccessful {
		t.Errorf("promote of an inconclusive run: %s, want Successful", got.Verdict)
	}
	got := running.Decide(h4, false)
	if got.Verdict != VerdictFailed || !strings.Contains(got.Summary(specs), "aborted by a command") {
		t.Errorf("abort of a running run: %s %q, want Failed naming the abort", got.Verdict, got.Summary(specs))
	}
	if running.Verdict != VerdictRunning {
		t.Error("Decide changed the run it was called on")
	}
	if got := passed.Decide(h4, false); got != &passed {
		t.Error("an abort changed a passed run")
	}
	if got := running.Decide(h3, true); got != &running {
		t.Error("a promote changed the run of another revision")
	}
}
