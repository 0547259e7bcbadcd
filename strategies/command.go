package strategies

import (
	"fmt"
	"strings"

	"plimsoll.dev/plimsoll/contract"
)

// Held is what a command acts on before any plan: the recorded status,
// whether the rollout is paused (a rolling Deployment's spec.paused, a
// progressive workload's plimsoll.dev/paused) and the analysis run.
type Held struct {
	Status Status
	Paused bool
	Run    *AnalysisRun
}

// Commanded is a command read and applied to what it holds: the same
// rules for the three strategies, so that a command reads alike on each.
type Commanded struct {
	// Name is the command as written, trimmed; "" for none.
	Name string
	// Held is the status, pause and run after the command.
	Held Held
	// Promote and Abort are for a progressive planner, which decides
	// what they do at the stage the rollout is at. A rolling workload
	// has no stages: ApplyCommand decides its verification at once.
	Promote, Abort bool
	// Did is what the command did, for its Event; "" while a progressive
	// planner is still to say (see Describe).
	Did string
	// lifted says that a promote lifted the pause command's hold first.
	lifted bool
}

// ApplyCommand applies command name to held, for a progressive strategy
// or not:
//
//   - pause and resume set Paused;
//   - retry clears the failed hash (see Retry) and the failed analysis
//     run with it, so that the revision is judged afresh; a workload
//     with nothing failed keeps everything, an analysis under way too;
//   - promote and abort go to a progressive planner; a promote lifts a
//     pause first, as Argo Rollouts' does: the user asks the rollout to
//     go on. On a rolling workload they accept or fail the verification
//     of the revision that runs (see AnalysisRun.Decide), the one thing
//     there is to decide;
//   - anything else is ignored, and its Event says so.
//
// A command with nothing to act on changes nothing, and its Event says
// why ("nothing to resume: the rollout is not paused").
func ApplyCommand(name string, held Held, progressive bool) Commanded {
	c := Commanded{Name: strings.TrimSpace(name), Held: held}
	switch c.Name {
	case "":
	case contract.CommandPause:
		c.Held.Paused, c.Did = true, "paused"
		if held.Paused {
			c.Did = "already paused"
		}
	case contract.CommandResume:
		c.Held.Paused, c.Did = false, "resumed"
		switch {
		case held.Paused:
		case held.Status.Phase == PhasePaused:
			// A step's pause, or an analysis's inconclusive verdict.
			c.Did = "nothing to resume: the rollout waits for promote or abort"
		default:
			c.Did = "nothing to resume: the rollout is not paused"
		}
	case contract.CommandRetry:
		if held.Status.FailedHash == "" && held.Status.Phase != PhaseDegraded {
			c.Did = fmt.Sprintf("nothing to retry: revision %d has not failed", held.Status.Revision)
			break
		}
		c.Held.Status, c.Held.Run = Retry(held.Status), nil
		c.Did = "cleared the failed template; the Git template goes out again"
	case contract.CommandPromote, contract.CommandAbort:
		promote := c.Name == contract.CommandPromote
		if progressive {
			c.Promote, c.Abort = promote, !promote
			c.lifted = promote && held.Paused
			c.Held.Paused = held.Paused && !promote
			break
		}
		c.Held.Run = held.Run.Decide(held.Status.Hash, promote)
		switch {
		case c.Held.Run == held.Run:
			c.Did = "nothing to " + c.Name + ": no verification is running or inconclusive"
		case promote:
			c.Did = fmt.Sprintf("accepted the verification of revision %d", held.Status.Revision)
		default:
			c.Did = fmt.Sprintf("failed the verification of revision %d", held.Status.Revision)
		}
	default:
		c.Did = fmt.Sprintf("ignored unknown command %q (want pause, resume, retry, promote or abort)", c.Name)
	}
	return c
}

// Describe says what the command did, for its Event: what ApplyCommand
// said, else the planner's account acted of a promote or an abort, else
// that there was nothing to do; a promote that lifted a pause says so
// first ("lifted the pause; moved on from step 2/5"), and a pause that a
// canary's hand-over goes through says so after ("paused; revision 4 is
// being promoted: its hand-over finishes first").
func (c Commanded) Describe(acted string) string {
	did := c.Did
	switch {
	case did != "" && c.Name == contract.CommandPause && acted != "":
		did += "; " + acted // a pause the hand-over goes through
	case did != "":
	case acted != "":
		did = acted
	case c.Promote || c.Abort:
		did = "nothing to " + c.Name
		if s := c.Held.Status; s.Phase == PhaseDegraded && s.FailedHash != "" && s.FailedHash == s.Hash {
			did += fmt.Sprintf(": revision %d failed; a retry starts it again", s.Revision)
		}
	}
	if c.lifted {
		return "lifted the pause; " + did
	}
	return did
}

// lateCommand says what a pending promote or abort does once revision
// is promoted, or being promoted (state): nothing, and why. Going back
// is then a commit of the previous revision. A canary's hand-over under
// way goes through an abort: its canary pods serve and the stable runs
// none of its own, so taking them out would leave the Service empty.
func lateCommand(promote, abort bool, revision int64, state string) string {
	switch {
	case abort:
		return fmt.Sprintf("too late to abort: revision %d %s; commit the previous revision to Git to go back", revision, state)
	case promote:
		return fmt.Sprintf("nothing to promote: revision %d %s", revision, state)
	}
	return ""
}
