package strategies

import (
	"fmt"
	"time"
)

// The analysis stages of blue-green and rolling revisions; a canary step's
// is stageOf(k).
const (
	// StagePrePromotion judges the new color before the swap.
	StagePrePromotion = "pre-promotion"
	// StagePostPromotion judges it after the swap, while the old color is
	// kept.
	StagePostPromotion = "post-promotion"
	// StageVerification judges a rolling revision once it is available.
	StageVerification = "verification"
)

// analysisRetry is how soon a run whose metric is due is planned again
// when the reconcile did not measure it (a measurement is taken before
// each plan, so this is rare: an analysis changed under a running run).
const analysisRetry = time.Second

// stageOf names the analysis stage of canary step k (from 0): "step 1".
func stageOf(k int) string { return fmt.Sprintf("step %d", k+1) }

// Judging reports whether a workload's analyses judge its recorded
// revision, for all three strategies: while the revision is in flight (not
// Healthy, or not yet what serves: serving is the hash of the template
// that does) or its run still runs (a blue-green post-promotion run goes
// on after the swap). The caller reads and binds the analyses, and takes
// the measurements due, only then.
func Judging(recorded Status, serving string, run *AnalysisRun) bool {
	return recorded.Phase != PhaseHealthy || recorded.Hash != serving || run.Running()
}

// analysisFailure says why run fails the revision of hash, "" when it
// does not: the workload has analyses, and run is theirs for that
// revision and failed.
func analysisFailure(specs []MetricSpec, run *AnalysisRun, hash string) string {
	if len(specs) > 0 && run != nil && run.Hash == hash && run.Verdict == VerdictFailed {
		return run.Summary(specs)
	}
	return ""
}

// canaryFailure says why the in-flight canary revision fails at this
// plan, "" when it does not: its progress deadline (see failedNow), or a
// failed analysis run of its template hash.
func canaryFailure(desired CanaryDesired, recorded Status, o CanaryObserved) string {
	if failedNow(o.Canary, o.Pods, desired.Hash, recorded, o.Now) {
		return deadlineReason(o.Canary)
	}
	return analysisFailure(o.Analysis, o.Run, desired.Hash)
}

// judgement is where one stage's analysis stands for a plan.
type judgement struct {
	// judged is true when the stage may end: no analysis, or its run
	// succeeded.
	judged bool
	// inconclusive is true when the stage's run is inconclusive.
	inconclusive bool
	// summary is the run in a few words, "" without analysis.
	summary string
	// requeue is when the run's next measurement is due, zero for none.
	requeue time.Duration
}

// judge runs the analysis of stage for the revision of hash: it starts
// the stage's run (into *run) once ready, and says when its next
// measurement is due.
func judge(run **AnalysisRun, specs []MetricSpec, stage, hash string, now time.Time, ready bool) judgement {
	if len(specs) == 0 {
		return judgement{judged: true}
	}
	if !(*run).Of(stage, hash) {
		if !ready {
			return judgement{}
		}
		started := StartRun(stage, hash, specs, now)
		*run = &started
	}
	r := **run
	j := judgement{judged: r.Verdict == VerdictSuccessful, inconclusive: r.Verdict == VerdictInconclusive, summary: r.Summary(specs)}
	if r.Verdict == VerdictRunning {
		due, wait := r.Due(specs, now)
		if len(due) > 0 {
			wait = analysisRetry
		}
		j.requeue = wait
	}
	return j
}

// judgeStep runs canary step k's analysis (see judge): its run starts
// once the step's traffic is in place (ready).
func judgeStep(plan *CanaryPlan, desired CanaryDesired, o CanaryObserved, k int, ready bool) (judged bool, analysis string) {
	j := judge(&plan.Run, o.Analysis, stageOf(k), desired.Hash, o.Now, ready)
	plan.RequeueAfter = sooner(plan.RequeueAfter, j.requeue)
	return j.judged, j.summary
}

// also is "; "+s for a message part that may be empty.
func also(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}
