package sync

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/source"
)

// hold reports whether a sync window holds the fetched commit, and the
// status to record then. A commit the cluster already runs is not held,
// but nothing is written while the window is shut, drift included.
func (s *Syncer) hold(ctx context.Context, prev, fetched inventory.Status) (inventory.Status, bool, error) {
	held, until, reason := s.cfg.Windows.Held(s.cfg.Clock.Now().UTC())
	switch {
	case !held:
		return inventory.Status{}, false, nil
	case fetched.FetchedCommit == prev.Commit:
		fetched.State = contract.SyncSynced
		return fetched, true, nil
	}
	msg := fmt.Sprintf("commit %s held until %s: %s", revision.Short(fetched.FetchedCommit), until.Format(time.RFC3339), reason)
	if prev.State != contract.SyncHeld || prev.Message != msg {
		s.cfg.Events.Event(ctx, s.cfg.Store.Object(), corev1.EventTypeNormal, ReasonHeld, msg)
		s.cfg.Log.Info("sync held", "sync", s.cfg.Name, "commit", revision.Short(fetched.FetchedCommit), "until", until, "reason", reason)
	}
	fetched.State, fetched.Message = contract.SyncHeld, msg
	return fetched, true, fmt.Errorf("%w: %s", ErrHeld, msg)
}

// ancestry is an ancestry answer of the source, kept so that a held
// commit is not walked again at every poll.
type ancestry struct {
	commit, applied string
	descends        bool
}

// rewindVerdict is what a sync that holds rewinds does with a branch head
// (see judgeRewind).
type rewindVerdict struct {
	// hold is set when the head waits for a person; reason then says why.
	hold   bool
	reason string
	// accepted is set when a person accepted the head, which does not
	// descend from the commit applied: it goes on.
	accepted bool
}

// judgeRewind decides about head, a branch head other than the commit
// applied, given whether it descends from it (descends, or unknown, the
// source's error wrapping source.ErrAncestryUnknown) and the commit a
// person accepted ("" for none). A descendant goes on. Any other head is
// held unless accept names it: a rewind to an older commit, a force-push
// of another history, and a head whose history the clone cannot tell
// alike; an acceptance of another commit (the head held before a later
// push) accepts nothing.
func judgeRewind(head, applied string, descends bool, unknown error, accept string) rewindVerdict {
	if unknown == nil && descends {
		return rewindVerdict{}
	}
	if inventory.Accepts(accept, head) {
		return rewindVerdict{accepted: true}
	}
	reason := fmt.Sprintf("it does not descend from the applied commit %s (the branch was rewound or force-pushed)", revision.Short(applied))
	if unknown != nil {
		reason = fmt.Sprintf("cannot tell whether it descends from the applied commit %s: %s", revision.Short(applied), oneLine(unknown))
	}
	if accept != "" {
		reason += fmt.Sprintf("; %s names %s, not this commit", contract.AnnotationAcceptRewind, accept)
	}
	return rewindVerdict{hold: true, reason: reason}
}

// holdRewind reports, when Config.HoldRewinds is set, whether the fetched
// branch head is held as a rewind (see judgeRewind), and the status to
// record then. A head that is the commit applied, or a first sync, is
// never held. An error other than an undecidable ancestry (the clone
// could not be read) fails the sync.
func (s *Syncer) holdRewind(ctx context.Context, rec *inventory.Record, fetched inventory.Status) (inventory.Status, bool, error) {
	prev, head := rec.Status, fetched.FetchedCommit
	applied := prev.Commit
	if !s.cfg.HoldRewinds || applied == "" || head == applied {
		return inventory.Status{}, false, nil
	}
	descends, err := s.descends(ctx, head, applied)
	if err != nil && !errors.Is(err, source.ErrAncestryUnknown) {
		return inventory.Status{}, false, err
	}
	v := judgeRewind(head, applied, descends, err, rec.AcceptRewind)
	log := s.cfg.Log.With("sync", s.cfg.Name, "commit", revision.Short(head), "applied", revision.Short(applied))
	switch {
	case v.accepted:
		msg := fmt.Sprintf("commit %s accepted as a rewind from %s by %s=%s", revision.Short(head), revision.Short(applied), contract.AnnotationAcceptRewind, rec.AcceptRewind)
		s.cfg.Events.Event(ctx, s.cfg.Store.Object(), corev1.EventTypeNormal, ReasonRewindAccepted, msg)
		log.Info("rewind accepted; applying it")
		return inventory.Status{}, false, nil
	case !v.hold:
		return inventory.Status{}, false, nil
	}
	ref := s.cfg.Store.Object()
	msg := fmt.Sprintf("commit %s held: %s; to apply it, accept it: kubectl -n %s annotate --overwrite configmap %s %s=%s",
		revision.Short(head), v.reason, ref.Namespace, ref.Name, contract.AnnotationAcceptRewind, head)
	if prev.State != contract.SyncHeld || prev.Message != msg {
		s.cfg.Events.Event(ctx, ref, corev1.EventTypeWarning, ReasonRewindHeld, msg)
		log.Warn("rewind held until accepted", "reason", v.reason)
	}
	fetched.State, fetched.Message = contract.SyncHeld, msg
	return fetched, true, fmt.Errorf("%w: %s", ErrHeld, msg)
}

// descends asks the source whether commit descends from applied, once per
// pair: a held commit is judged at every poll until accepted, and its
// whole history would be walked each time.
func (s *Syncer) descends(ctx context.Context, commit, applied string) (bool, error) {
	if a := s.ancestry; a != nil && a.commit == commit && a.applied == applied {
		return a.descends, nil
	}
	d, err := s.cfg.Source.Descends(ctx, commit, applied)
	if err != nil {
		return false, err
	}
	s.ancestry = &ancestry{commit: commit, applied: applied, descends: d}
	return d, nil
}
