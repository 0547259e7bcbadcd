package strategies

import (
	"fmt"
	"time"
)

// SetCanary is what the canary strategy reads of a StatefulSet or a
// DaemonSet beside its progress: its steps, its size, what holds its
// update back (a StatefulSet's partition, a DaemonSet's OnDelete), where
// the revision is, and the commands given.
type SetCanary struct {
	// Steps are the parsed plimsoll.dev/steps.
	Steps []Step
	// Nodes reports a DaemonSet, whose steps are shares of its nodes.
	Nodes bool
	// Replicas is a StatefulSet's count, a DaemonSet's nodes that should
	// run its pod; Partition is a StatefulSet's live
	// spec.updateStrategy.rollingUpdate.partition: the ordinals from
	// Partition up run the new template.
	Replicas, Partition int32
	// OnDelete reports a DaemonSet held at the OnDelete update strategy:
	// its nodes take the new template only as plimsoll deletes their pods.
	OnDelete bool
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
	unit := "pods"
	if c.Nodes {
		unit = "nodes"
	}
	for ; ; k, p.Since = k+1, o.Now {
		p.Step = k + 1
		if k >= len(steps) || !steps[k].Pause && steps[k].Weight >= 100 {
			return planSetPromoted(o, p)
		}
		weight := weightAt(steps, k)
		updated := CanaryReplicas(weight, c.Replicas)
		reached := o.Progress.Observed && o.Progress.Updated >= updated && o.Progress.Ready >= c.Replicas
		if c.Nodes {
			p.UpdateTo = updated
		} else if partition := c.Replicas - updated; c.Partition != partition {
			p.Partition, reached = &partition, false
		}
		where := fmt.Sprintf("canary step %d/%d: %d%% (%d/%d %s updated)", k+1, len(steps), weight, updated, c.Replicas, unit)
		left := o.Deadline - o.Now.Sub(p.Since)
		switch step := steps[k]; {
		case !reached && left < 0:
			return planSetStepFailure(o, p, fmt.Sprintf("step %d/%d not reached within its deadline of %s (%s)", k+1, len(steps), o.Deadline, progressText(o.Progress)))
		case c.Paused:
			p.Status.Phase, p.Status.Message = PhasePaused, where+"; paused"
		case !reached:
			p.Status.Phase, p.Status.Message = PhaseProgressing, fmt.Sprintf("canary step %d/%d: going to %d%% (%d/%d %s)", k+1, len(steps), weight, updated, c.Replicas, unit)
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

// planSetPromoted plans the end of a canary's steps: a StatefulSet's
// partition 0, a DaemonSet's rolling update given back (which updates the
// other nodes by Git's maxUnavailable and maxSurge), and Healthy once
// every pod runs the template and is Ready. The pause command holds it
// before.
func planSetPromoted(o SetObserved, p SetPlan) SetPlan {
	c := o.Canary
	revision := describeRevision(p.Status.Revision, p.Status.Commit)
	switch {
	case o.Progress.Observed && o.Progress.Whole && c.Partition == 0 && !c.OnDelete:
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
	p.Release = c.OnDelete
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
	p.UpdateTo = 0
	if !p.Rollback {
		p.Partition, p.Release = nil, false // what runs stays as it is
	}
	p.RequeueAfter = 0
	return p
}
