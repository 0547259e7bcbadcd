package strategies

import (
	"fmt"
	"strconv"

	"plimsoll.dev/plimsoll/contract"
)

// Phase is the state of a workload's rollout, recorded in
// plimsoll.dev/phase: PhaseProgressing, PhasePaused, PhaseHealthy or
// PhaseDegraded.
type Phase string

// Status is the rollout status of a workload as recorded in its status
// annotations. The planners read the recorded Status and return the one to
// record; nothing else carries rollout state between two reconciles, so a
// controller restarted at any point resumes from these values.
type Status struct {
	// Phase is plimsoll.dev/phase; empty before the first plan.
	Phase Phase
	// Revision is plimsoll.dev/revision; 0 means never rolled out.
	Revision int64
	// Hash is plimsoll.dev/template-hash: the TemplateHash of the Git
	// template of Revision.
	Hash string
	// FailedHash is plimsoll.dev/failed-hash: a template hash that failed
	// and is not started again until Git changes it or Retry clears it.
	FailedHash string
	// StableHash is plimsoll.dev/stable-hash: the hash of the last
	// revision of a rolling workload that was Healthy, which an automatic
	// rollback restores (see rollbackTarget); empty before the first.
	StableHash string
	// Commit is plimsoll.dev/commit: the Git commit the desired state came
	// from.
	Commit string
	// Message is plimsoll.dev/message: one human line.
	Message string
}

// ReadStatus reads a Status from the annotations of a workload's Deployment.
// A missing key reads as the zero value, so a Deployment plimsoll never
// wrote reads as revision 0. A revision that is not a non-negative integer
// or an unknown phase is an error naming the annotation: the caller should
// report it rather than plan from a guess.
func ReadStatus(annotations map[string]string) (Status, error) {
	s := Status{
		Phase:      Phase(annotations[contract.AnnotationPhase]),
		Hash:       annotations[contract.AnnotationTemplateHash],
		FailedHash: annotations[contract.AnnotationFailedHash],
		StableHash: annotations[contract.AnnotationStableHash],
		Commit:     annotations[contract.AnnotationCommit],
		Message:    annotations[contract.AnnotationMessage],
	}
	switch s.Phase {
	case "", PhaseProgressing, PhasePaused, PhaseHealthy, PhaseDegraded:
	default:
		return Status{}, fmt.Errorf("read annotation %s: unknown phase %q", contract.AnnotationPhase, s.Phase)
	}
	if v, ok := annotations[contract.AnnotationRevision]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return Status{}, fmt.Errorf("read annotation %s: %q is not a non-negative integer", contract.AnnotationRevision, v)
		}
		s.Revision = n
	}
	return s, nil
}

// Annotations returns s as status annotations. Empty values are left out:
// an annotation absent from the result must be absent from the object
// (server-side apply removes a key its field manager applied before and
// applies no more). Revision 0 is left out too.
func (s Status) Annotations() map[string]string {
	a := map[string]string{}
	set := func(key, value string) {
		if value != "" {
			a[key] = value
		}
	}
	set(contract.AnnotationPhase, string(s.Phase))
	if s.Revision > 0 {
		set(contract.AnnotationRevision, strconv.FormatInt(s.Revision, 10))
	}
	set(contract.AnnotationTemplateHash, s.Hash)
	set(contract.AnnotationFailedHash, s.FailedHash)
	set(contract.AnnotationStableHash, s.StableHash)
	set(contract.AnnotationCommit, s.Commit)
	set(contract.AnnotationMessage, s.Message)
	return a
}

// Retry returns the status to record when a user asks to retry: the failed
// hash is cleared, so that the next plan starts the Git template again
// instead of refusing it. A Degraded workload stays Degraded, with the
// message "retrying revision N", until the Deployment makes progress again:
// its ProgressDeadlineExceeded condition outlives the retry until then and
// must not be read as a new failure. The caller records the result and
// clears the command in the same write.
func Retry(recorded Status) Status {
	s := recorded
	s.FailedHash = ""
	if s.Phase == PhaseDegraded {
		s.Message = fmt.Sprintf("retrying revision %d", s.Revision)
	}
	return s
}

// AtRest reports whether a workload recorded with status s has no
// rollout going: Healthy, or Degraded with its failure recorded. Its plan
// then only keeps what runs as it should be (a count or a selector
// changed by hand comes back), which a one-shot sync does too; a rollout
// that is Progressing or Paused is followed by the daemon.
func (s Status) AtRest() bool {
	return s.Phase == PhaseHealthy || s.Phase == PhaseDegraded
}
