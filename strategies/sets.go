package strategies

import (
	"fmt"
	"time"
)

// DefaultSetDeadline is how long a revision of a StatefulSet or a
// DaemonSet may take to have every pod updated and Ready before it
// fails: what a Deployment's progressDeadlineSeconds defaults to, 600s.
// These kinds have no deadline of their own; plimsoll.dev/progress-deadline
// sets another.
const DefaultSetDeadline = 10 * time.Minute

// SetObserved is what the rollout controller reads of a StatefulSet or a
// DaemonSet it rolls: its template, its controller's progress, the status
// plimsoll recorded on it.
type SetObserved struct {
	// Kind is "StatefulSet" or "DaemonSet", for messages.
	Kind string
	// Hash is the template hash of its live template, and Commit the
	// commit the sync applied that template from ("" when unknown: one
	// applied before the controller started, or by kubectl).
	Hash, Commit string
	// Recorded is the status plimsoll wrote on it, and Since when the
	// revision it records started (plimsoll.dev/step-since; zero: unknown).
	Recorded Status
	Since    time.Time
	// Progress is how far its controller got with Hash.
	Progress SetProgress
	// Deadline is how long a revision may take (DefaultSetDeadline when
	// the object sets none); AutoRollback whether a failed one is rolled
	// back.
	Deadline     time.Duration
	AutoRollback bool
	// StableKept reports whether a controller revision still holds the
	// template of Recorded.StableHash, which a rollback writes back.
	StableKept bool
	// Canary is the canary state of a StatefulSet rolled by partition;
	// nil under the rolling strategy.
	Canary *SetCanary
	// Now is the time of the observation.
	Now time.Time
}

// SetProgress is how far a StatefulSet's or a DaemonSet's controller got
// with its template: pods (a DaemonSet's: nodes that should run one) it
// wants, updated to the template, and Ready (available, for a DaemonSet).
type SetProgress struct {
	// Observed reports whether the controller has seen the object's
	// latest generation; the counts are of an older one until it has.
	Observed                bool
	Desired, Updated, Ready int32
	// Done reports whether every pod runs the template and is Ready, as
	// the kind's controller counts it: a StatefulSet's from its
	// partition up. Whole reports it of every pod, whatever the partition.
	Done, Whole bool
}

// SetPlan is the step planned for a StatefulSet or a DaemonSet.
type SetPlan struct {
	// Status is the status to record (written only when it differs), and
	// Since when its revision started.
	Status Status
	Since  time.Time
	// Rollback asks for the template of Status.StableHash to be written
	// back (the failed one is Status.FailedHash).
	Rollback bool
	// Replace asks for the pods of another revision than the live
	// template's that are not Ready to be deleted, so that the kind's
	// controller replaces them: after a rollback, the pod of the failed
	// revision a StatefulSet waits for would otherwise stay.
	Replace bool
	// Failed reports whether this step records the failure (for its
	// Event); Reason is why the revision failed.
	Failed bool
	Reason string
	// Step is the canary step to record, from 1 (0: none, the revision
	// runs whole); Partition, when set, the partition to write with it.
	Step      int
	Partition *int32
	// UpdateTo is how many of a canary DaemonSet's nodes should run its
	// template at this step: the controller deletes the pod of one more
	// node at a time, once every pod is available, until they do.
	UpdateTo int32
	// Release asks for a DaemonSet held at OnDelete to be given its
	// rolling update back: the one from Git.
	Release bool
	// RequeueAfter, when positive, is when to plan again although nothing
	// changes meanwhile (a timed pause running out).
	RequeueAfter time.Duration
	// Acted says what a promote or an abort did, for its Event.
	Acted string
}

// PlanSet plans the step of a StatefulSet or a DaemonSet under the
// rolling strategy: the kind's own rolling update, watched against a
// deadline.
//
//   - A template not recorded yet is a new revision (the next number):
//     Progressing from
//     now, or Healthy at once when its pods already run it (an object
//     adopted as it is). A template whose hash failed is rolled back at
//     once: it never runs again.
//   - The recorded template, every pod updated and Ready: Healthy, and it
//     is the stable one a later rollback restores; after a rollback, the
//     object stays Degraded, naming the failure, until Git changes.
//   - The recorded template still rolling past its deadline: Degraded,
//     its hash failed, and its stable template written back when there is
//     one and auto-rollback is on.
//   - After a rollback, until every pod is back: the failed revision's
//     pods that are not Ready are replaced; a Ready pod is never deleted.
//
// Under the canary strategy (o.Canary) a StatefulSet's new revision goes
// out by its partition, step by step (see planSetCanary), and outside a
// revision in flight its partition is 0.
func PlanSet(o SetObserved) SetPlan {
	c := o.Canary
	if c != nil {
		// The canary holds the partition itself: done is every pod.
		o.Progress.Done = o.Progress.Whole
	}
	p := planSet(o)
	if c != nil && p.Step == 0 {
		if c.Partition != 0 {
			p.Partition = new(int32)
		}
		p.Release = c.OnDelete
	}
	return p
}

// planSet is PlanSet but for the partition outside a canary's steps.
func planSet(o SetObserved) SetPlan {
	rec := o.Recorded
	p := SetPlan{Status: rec, Since: o.Since}
	if o.Canary != nil {
		p.Step = o.Canary.Step
	}
	if o.Hash != rec.Hash {
		if o.Hash == rec.FailedHash && rec.Phase == PhaseDegraded && rec.Hash == rec.StableHash && rec.Hash != "" {
			// The rollback is recorded and its template not seen yet (the
			// status is written first), or kubectl wrote the failed
			// template again: write the stable one (again).
			p.Rollback = o.AutoRollback && o.StableKept
			return p
		}
		if o.Hash == rec.FailedHash {
			return planSetFailure(o, p, fmt.Sprintf("template %s failed before", o.Hash))
		}
		p.Status.Hash, p.Status.Revision, p.Status.Commit, p.Since, p.Step = o.Hash, rec.Revision+1, o.Commit, o.Now, 0
		if o.Hash != rec.StableHash {
			p.Status.FailedHash = "" // Git moved on from the failed template
		}
	}
	if c := o.Canary; c != nil && o.Hash != p.Status.StableHash && p.Status.StableHash != "" {
		switch {
		case c.Abort && o.Hash == p.Status.Hash:
			o.AutoRollback = true
			p = planSetFailure(o, p, "aborted by a command")
			p.Acted = fmt.Sprintf("aborted revision %d", p.Status.Revision)
			return p
		case p.Status.FailedHash != o.Hash:
			return planSetCanary(o, p)
		}
	}
	failed, rolledBack := p.Status.FailedHash, p.Status.FailedHash != "" && o.Hash == rec.StableHash
	done := o.Progress.Observed && o.Progress.Done
	switch {
	case failed == o.Hash:
		// Failed, and not rolled back: it stays so until Git changes.
		p.Status.Phase = PhaseDegraded
	case rolledBack && done:
		p.Status.Phase = PhaseDegraded
		if rec.Phase != PhaseDegraded || rec.Message == "" {
			p.Status.Message = fmt.Sprintf("template %s failed; the %s runs its stable template again", failed, o.Kind)
		}
	case rolledBack:
		// Rolled back, not done yet: the failed pods make way, once the
		// controller counts from the stable template.
		p.Status.Phase, p.Replace = PhaseDegraded, o.Progress.Observed
	case done:
		p.Status.Phase, p.Status.StableHash = PhaseHealthy, o.Hash
		p.Status.Message = fmt.Sprintf("%d/%d updated and Ready", o.Progress.Ready, o.Progress.Desired)
	case !p.Since.IsZero() && o.Now.Sub(p.Since) > o.Deadline:
		return planSetFailure(o, p, fmt.Sprintf("not every pod updated and Ready within its deadline of %s (%s)", o.Deadline, progressText(o.Progress)))
	default:
		// The message does not count pods: each status written is an
		// update of the object, which its controller syncs again.
		p.Status.Phase = PhaseProgressing
		p.Status.Message = fmt.Sprintf("updating every pod, within %s", o.Deadline)
	}
	return p
}

// planSetFailure records the live template as failed, and plans its
// rollback to the stable one when there is one and auto-rollback is on.
func planSetFailure(o SetObserved, p SetPlan, reason string) SetPlan {
	p.Status.Phase, p.Status.FailedHash, p.Failed, p.Reason = PhaseDegraded, o.Hash, true, reason
	failed := fmt.Sprintf("revision %d (template %s)", p.Status.Revision, o.Hash)
	switch {
	case !o.AutoRollback:
		p.Status.Message = fmt.Sprintf("%s failed: %s; auto-rollback is off", failed, reason)
	case o.Recorded.StableHash == "" || o.Recorded.StableHash == o.Hash || !o.StableKept:
		p.Status.Message = fmt.Sprintf("%s failed: %s; no previous template to roll back to", failed, reason)
	default:
		p.Rollback, p.Step = true, 0
		p.Status.Hash, p.Since = o.Recorded.StableHash, o.Now
		p.Status.Message = fmt.Sprintf("%s failed: %s; rolled back to template %s", failed, reason, o.Recorded.StableHash)
	}
	return p
}

// progressText says how far a rolling update got.
func progressText(p SetProgress) string {
	if !p.Observed {
		return "waiting for its controller to see the new template"
	}
	return fmt.Sprintf("%d/%d updated, %d/%d Ready", p.Updated, p.Desired, p.Ready, p.Desired)
}
