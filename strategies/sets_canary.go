package strategies

import (
	"fmt"
	"time"
)

// SetCanary is what the canary strategy reads of a StatefulSet beside
// its progress: its steps, its size, the partition it holds, where the
// revision is, and the commands given.
type SetCanary struct {
	// Steps are the parsed plimsoll.dev/steps.
	Steps []Step
	// Replicas is the StatefulSet's count, and Partition the live
	// spec.updateStrategy.rollingUpdate.partition: the ordinals from
	// Partition up run the new template.
	Replicas, Partition int32
	// Step is the recorded step, from 1 (0: none).
	Step int
	// Paused holds the revision where it is (the pause command).
	Paused bool
	// Promote and Abort are pending commands.
	Promote, Abort bool
}

// planSetCanary plans a StatefulSet's revision in flight under the canary
// strategy. Step k's weight is the share of ordinals that run the new
// template, the highest first: the partition is the count less the
// step's canary pods (CanaryReplicas), so 25% of 4 is one pod and
// partition 3, ordinal 3 updated. The StatefulSet controller replaces
// those ordinals one at a time, each once the one before is Ready, so
// that no more than one pod is ever down (its maxUnavailable of 1).
//
// No message counts pods, so that the status is written once a step:
// each write is an update of the StatefulSet, which its controller syncs
// again.
//
// A step is reached once the controller reports the step's partition
// with that many pods updated and every pod Ready; a pause step then
// waits for its time or a promote, and a weight step moves on at once.
// A step not reached within the deadline fails the revision, and with
// auto-rollback on its stable template is written back with partition 0,
// which replaces the updated ordinals. A promote moves on from a pause
// step, and from a weight step promotes fully; the pause command holds
// the step where it is.
//
// With steps "25%, pause, 50%, pause 1m, 100%" on 4 pods: partition 3
// (ordinal 3), then waiting for promote; partition 2 (ordinals 2 and 3),
// then a minute; partition 0, and Healthy once every pod is updated and
// Ready.
func planSetCanary(o SetObserved, p SetPlan) SetPlan {
	c, steps := o.Canary, o.Canary.Steps
	k := min(max(p.Step-1, 0), len(steps))
	if c.Promote && !c.Paused {
		if k < len(steps) && steps[k].Pause {
			p.Acted = fmt.Sprintf("moved on from step %d/%d", k+1, len(steps))
			k++
		} else {
			p.Acted, k = "promoted fully", len(steps)
		}
		p.Since = o.Now
	}
	for ; ; k, p.Since = k+1, o.Now {
		p.Step = k + 1
		if k >= len(steps) || !steps[k].Pause && steps[k].Weight >= 100 {
			return planSetPromoted(o, p)
		}
		weight := weightAt(steps, k)
		updated := CanaryReplicas(weight, c.Replicas)
		partition := c.Replicas - updated
		if c.Partition != partition {
			p.Partition = &partition
		}
		reached := o.Progress.Observed && c.Partition == partition && o.Progress.Updated >= updated && o.Progress.Ready >= c.Replicas
		where := fmt.Sprintf("canary step %d/%d: %d%% (%d/%d pods updated)", k+1, len(steps), weight, updated, c.Replicas)
		left := o.Deadline - o.Now.Sub(p.Since)
		switch step := steps[k]; {
		case !reached && left < 0:
			return planSetStepFailure(o, p, fmt.Sprintf("step %d/%d not reached within its deadline of %s (%s)", k+1, len(steps), o.Deadline, progressText(o.Progress)))
		case c.Paused:
			p.Status.Phase, p.Status.Message = PhasePaused, where+"; paused"
		case !reached:
			p.Status.Phase, p.Status.Message = PhaseProgressing, fmt.Sprintf("canary step %d/%d: going to %d%% (%d/%d pods)", k+1, len(steps), weight, updated, c.Replicas)
			p.RequeueAfter = left + time.Second
		case step.Pause && step.Duration == 0:
			p.Status.Phase, p.Status.Message = PhasePaused, where+"; waiting for promote"
		case step.Pause && o.Now.Before(p.Since.Add(step.Duration)):
			p.Status.Phase = PhaseProgressing
			p.Status.Message = fmt.Sprintf("%s; paused until %s", where, p.Since.Add(step.Duration).UTC().Format(time.TimeOnly))
			p.RequeueAfter = p.Since.Add(step.Duration).Sub(o.Now)
		default:
			continue // the step is done: the next one, from now
		}
		return p
	}
}

// planSetPromoted plans the end of a StatefulSet's canary steps:
// partition 0, every ordinal updated, and Healthy once every pod runs the
// template and is Ready. The pause command holds it before.
func planSetPromoted(o SetObserved, p SetPlan) SetPlan {
	c := o.Canary
	revision := describeRevision(p.Status.Revision, p.Status.Commit)
	switch {
	case o.Progress.Observed && o.Progress.Whole && c.Partition == 0:
		p.Status.Phase, p.Status.StableHash, p.Step = PhaseHealthy, o.Hash, 0
		p.Status.Message = fmt.Sprintf("%d/%d updated and Ready", o.Progress.Ready, o.Progress.Desired)
		return p
	case c.Paused:
		p.Status.Phase, p.Status.Message = PhasePaused, revision+": paused before updating every pod"
		return p
	}
	if c.Partition != 0 {
		p.Partition = new(int32)
	}
	left := o.Deadline - o.Now.Sub(p.Since)
	if left < 0 {
		return planSetStepFailure(o, p, fmt.Sprintf("not every pod updated and Ready within its deadline of %s (%s)", o.Deadline, progressText(o.Progress)))
	}
	p.Status.Phase, p.Status.Message = PhaseProgressing, revision+": promoted; updating every pod"
	p.RequeueAfter = left + time.Second
	return p
}

// planSetStepFailure fails a canary's revision at its step: rolled back
// (see planSetFailure), or, with nothing to roll back to, held at the
// partition it reached until an abort.
func planSetStepFailure(o SetObserved, p SetPlan, reason string) SetPlan {
	p = planSetFailure(o, p, reason)
	if !p.Rollback {
		p.Partition = nil // what runs stays as it is
	}
	p.RequeueAfter = 0
	return p
}
