package strategies

import (
	"fmt"
	"time"
)

// analysisRetry is how soon a run whose metric is due is planned again
// when the reconcile did not measure it (a measurement is taken before
// each plan, so this is rare: an analysis changed under a running run).
const analysisRetry = time.Second

// stageOf names the analysis stage of canary step k (from 0): "step 1".
func stageOf(k int) string { return fmt.Sprintf("step %d", k+1) }

// canaryFailure says why the in-flight canary revision fails at this
// plan, "" when it does not: its progress deadline (see failedNow), or a
// failed analysis run of its template hash.
func canaryFailure(desired CanaryDesired, recorded Status, o CanaryObserved) string {
	if failedNow(o.Canary, o.Pods, desired.Hash, recorded, o.Now) {
		return deadlineReason(o.Canary)
	}
	if r := o.Run; r != nil && r.Hash == desired.Hash && r.Verdict == VerdictFailed && len(o.Analysis) > 0 {
		return r.Summary(o.Analysis)
	}
	return ""
}

// judgeStep runs canary step k's analysis: it starts the step's run once
// the step's traffic is in place (ready), and asks to plan again when its
// next measurement is due. judged is true when the step may end: the
// workload has no analysis, or the step's run succeeded. analysis is the
// run in a few words for the message ("" without analysis).
func judgeStep(plan *CanaryPlan, desired CanaryDesired, o CanaryObserved, k int, ready bool) (judged bool, analysis string) {
	if len(o.Analysis) == 0 {
		return true, ""
	}
	stage := stageOf(k)
	if !plan.Run.Of(stage, desired.Hash) {
		if !ready {
			return false, ""
		}
		run := StartRun(stage, desired.Hash, o.Analysis, o.Now)
		plan.Run = &run
	}
	run := *plan.Run
	if run.Verdict == VerdictRunning {
		due, wait := run.Due(o.Analysis, o.Now)
		if len(due) > 0 {
			wait = analysisRetry
		}
		plan.RequeueAfter = sooner(plan.RequeueAfter, wait)
	}
	return run.Verdict == VerdictSuccessful, run.Summary(o.Analysis)
}

// also is "; "+s for a message part that may be empty.
func also(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}
