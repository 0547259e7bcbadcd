package strategies

import "fmt"

// RevisionAction is what a desired template means for the recorded
// revision: RevisionSame, RevisionNew or RevisionRefused.
type RevisionAction int

const (
	// RevisionSame: the Git template is the one of the recorded revision.
	// Only replicas or metadata changed; they are applied under the same
	// revision number.
	RevisionSame RevisionAction = iota + 1
	// RevisionNew: the Git template changed; it goes out as the next
	// revision.
	RevisionNew
	// RevisionRefused: the Git template is the one that failed. It is not
	// started until Git changes it or a retry clears the failed hash.
	RevisionRefused
)

// String returns the action's name, for messages and test output.
func (a RevisionAction) String() string {
	switch a {
	case RevisionSame:
		return "same"
	case RevisionNew:
		return "new"
	case RevisionRefused:
		return "refused"
	}
	return "unknown"
}

// RevisionDecision is the outcome of DecideRevision.
type RevisionDecision struct {
	Action RevisionAction
	// Revision is the revision number to record.
	Revision int64
}

// DecideRevision decides what the desired template hash from Git means for
// a workload whose recorded status is recorded (revision N, hash H, failed
// hash F; see ReadStatus):
//
//	D == F (F set)  refused, stays at N: a revision whose hash equals the
//	                failed hash is not started. F is checked first: after a
//	                failure H == F too, and the failed template must not
//	                come back as "same".
//	D == H          same, stays at N: replicas or metadata changed only.
//	otherwise       new, N+1.
//
// Worked through: a workload never rolled out (N 0, H "") gets revision 1
// for its first template. At N 3, H "5d9f01c2aa", F "": a commit that only
// scales to 6 replicas still hashes to 5d9f01c2aa and stays revision 3; a
// new image hashes to "7c4e1a2b9f" and becomes revision 4. If revision 4
// fails, F becomes 7c4e1a2b9f: while Git still hashes to it, the decision
// is refused at 4; a fix hashing to "0b3e66d1c8" becomes revision 5; a
// retry clears F (see Retry) and 7c4e1a2b9f is the same revision 4 again,
// started anew by the planner.
//
// A recorded hash with no revision (annotations edited by hand) counts as
// revision 1 when it is the same template.
func DecideRevision(recorded Status, desiredHash string) RevisionDecision {
	switch {
	case recorded.FailedHash != "" && desiredHash == recorded.FailedHash:
		return RevisionDecision{Action: RevisionRefused, Revision: recorded.Revision}
	case desiredHash == recorded.Hash:
		return RevisionDecision{Action: RevisionSame, Revision: max(recorded.Revision, 1)}
	default:
		return RevisionDecision{Action: RevisionNew, Revision: recorded.Revision + 1}
	}
}

// TakeRevision is what a workload records when it takes a template of
// hash from commit: the decision (see DecideRevision), and the status to
// record at once. A new revision starts Progressing with the message
// "rolling out revision N" and keeps the recorded failed and stable
// hashes; the same or a refused template keeps the recorded status, commit
// included: the commit is that of the revision (see RevisionCommit).
// Worked through: recorded revision 3 at hash H, Git hands off H' from
// commit C: revision 4, hash H', commit C, Progressing.
func TakeRevision(recorded Status, hash, commit string) (Status, RevisionDecision) {
	decision := DecideRevision(recorded, hash)
	status := recorded
	status.Commit = RevisionCommit(recorded, hash, commit)
	if decision.Action == RevisionNew {
		status = Status{Revision: decision.Revision, Hash: hash, FailedHash: recorded.FailedHash, StableHash: recorded.StableHash, Commit: commit,
			Phase: PhaseProgressing, Message: openingMessage(decision.Revision)}
	}
	return status, decision
}

// openingMessage is the message a new revision starts with (see TakeRevision).
func openingMessage(revision int64) string {
	return fmt.Sprintf("rolling out revision %d", revision)
}

// opening reports whether s is a revision's opening status, which the
// first plan of the revision replaces.
func opening(s Status) bool {
	return s.Phase == PhaseProgressing && s.Message == openingMessage(s.Revision)
}

// RevisionCommit is the commit a workload records for Git's template of
// hash handed over from commit: commit for a new revision, else the
// recorded one, so that a commit which leaves the template as it is (a
// ConfigMap changed, replicas scaled) writes nothing to the workload's
// Deployments. Worked through: revision 3 from commit a1b2c3d; commit
// e4f5a6b scales it to 6: still a1b2c3d; commit 0c9d8e7 changes the image:
// revision 4 from 0c9d8e7. A status that records no commit takes commit.
func RevisionCommit(recorded Status, hash, commit string) string {
	if DecideRevision(recorded, hash).Action == RevisionNew || recorded.Commit == "" {
		return commit
	}
	return recorded.Commit
}
