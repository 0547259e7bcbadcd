package strategies

import (
	"fmt"
	"time"
)

// A blue-green workload while Git asks for the template that failed.

// planBlueGreenRefused plans the step while the Git template is the failed
// one: it is not started, and where it runs it is undone. With A the
// active color and F the failed template:
//
//	A runs F, O runs another template: O to N; once O is available the
//	    active Service swaps back to O and A scales to zero
//	A runs F, O has nothing else: stays, Degraded (nothing to go back to)
//	A does not run F: A stays at N; O scales to zero if it runs F, or
//	    when its scale-down time has come
//	A does not run F, O does, auto-rollback off and no abort: O is held
//	    at N, as the plan that recorded its failure left it
//
// A revision aborted in this plan records its own revision and hash; one
// refused by DecideRevision keeps the recorded ones.
func planBlueGreenRefused(plan BlueGreenPlan, desired BlueGreenDesired, recorded Status, o BlueGreenObserved, n int32) BlueGreenPlan {
	failed := plan.Status.FailedHash
	if failed == recorded.FailedHash && recorded.Hash != "" {
		// Refused by DecideRevision, not aborted in this plan: the
		// recorded revision and hash stay.
		plan.Status.Hash = recorded.Hash
	}
	plan.Status.Phase = PhaseDegraded
	active, old := o.Active, o.Active.Other()
	if c := failedIdle(o, failed); c != "" {
		switch {
		case heldFailure(desired.AutoRollback, o.Abort, o.Deployment(c), failed):
			// As the plan that recorded the failure left it.
			plan.Replicas[c], plan.Roles[c], plan.Preview = n, RolePreview, c
			if active != "" {
				plan.Active, plan.Replicas[active], plan.Roles[active] = active, n, RoleActive
			}
			plan.ScaleDownAt = time.Time{}
			plan.Status.Message = keepDegraded(recorded, "",
				fmt.Sprintf("template %s failed on %s; auto-rollback is off; %s; abort to undo it", failed, c, trafficStays(active)))
			return plan
		case o.Abort && plan.Acted == "" && heldFailure(desired.AutoRollback, false, o.Deployment(c), failed):
			plan.Acted = fmt.Sprintf("aborted revision %d", plan.Status.Revision)
		}
	}
	if active == "" {
		// Nothing serves from a color yet: the failed color goes to zero.
		for _, c := range []Color{ColorBlue, ColorGreen} {
			if d := o.Deployment(c); d != nil && hashOf(d) == failed {
				plan.Replicas[c], plan.Roles[c] = 0, RoleIdle
			}
		}
		plan.Status.Message = keepDegraded(recorded, plan.Acted, fmt.Sprintf("template %s failed; not started again until Git changes it or a retry", failed))
		return plan
	}
	plan.Active, plan.Preview = active, active
	plan.Roles[active] = RoleActive
	da, do := o.Deployment(active), o.Deployment(old)
	switch {
	case hashOf(da) == failed && do != nil && hashOf(do) != failed:
		plan.Replicas[old], plan.Roles[old] = n, RolePreview
		if fullyAvailable(do, n) {
			// Swap back at once: the old color is still at full size.
			plan.Active, plan.Preview = old, old
			plan.Roles[old], plan.Roles[active] = RoleActive, RoleIdle
			plan.Replicas[active] = 0
			plan.ScaleDownAt = time.Time{}
			plan.Status.Message = fmt.Sprintf("revision %d failed; traffic back on %s", plan.Status.Revision, old)
		} else {
			plan.Replicas[active] = n
			plan.Status.Message = fmt.Sprintf("revision %d failed; bringing %s back: %s", plan.Status.Revision, old, waitingFor(n))
		}
	case hashOf(da) == failed:
		plan.Replicas[active] = n
		plan.Status.Message = fmt.Sprintf("revision %d failed on %s; no other color to go back to", plan.Status.Revision, active)
	default:
		plan.Replicas[active] = n
		plan.Status.Message = keepDegraded(recorded, plan.Acted,
			fmt.Sprintf("template %s failed; %s; not started again until Git changes it or a retry", failed, trafficStays(active)))
		if do != nil {
			plan.Roles[old] = RoleIdle
			scaleDue := !o.ScaleDownAt.IsZero() && !o.Now.Before(o.ScaleDownAt)
			if hashOf(do) == failed || scaleDue || o.ScaleDownAt.IsZero() {
				plan.Replicas[old], plan.ScaleDownAt = 0, time.Time{}
			} else {
				plan.RequeueAfter = o.ScaleDownAt.Sub(o.Now)
			}
		}
	}
	return plan
}

// failedIdle is the color that carries the failed template without the
// active Service selecting it, "" when there is none.
func failedIdle(o BlueGreenObserved, failed string) Color {
	for _, c := range []Color{ColorBlue, ColorGreen} {
		if c != o.Active && o.Deployment(c) != nil && hashOf(o.Deployment(c)) == failed {
			return c
		}
	}
	return ""
}

// keepDegraded keeps the recorded message of a workload already Degraded,
// so that planning again writes nothing; an abort just acted on names
// itself.
func keepDegraded(recorded Status, acted, message string) string {
	switch {
	case acted != "":
		return acted + "; " + message
	case recorded.Phase == PhaseDegraded && recorded.Message != "":
		return recorded.Message
	}
	return message
}
