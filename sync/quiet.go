package sync

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/sync/apply"
)

// verifyEvery is how long polls may go without a full sync while nothing
// changes: a full sync then reads every object again even though no watch
// saw a change. It is the rollout controller's resync period too.
const verifyEvery = 10 * time.Minute

// configMapsScope is the scope a Watch follows besides those of the plan:
// the sync record's own ConfigMaps.
var configMapsScope = corev1.SchemeGroupVersion.WithResource("configmaps")

// quietMark is what a full sync left for the polls after it: the commit
// it applied and the moment of the Watch it read the cluster at. While
// the branch head is still that commit and nothing the sync wrote has
// changed since, a poll has nothing to do, and does nothing: no render, no
// request, no write.
type quietMark struct {
	commit string
	mark   apply.WatchMark
	scopes []apply.Scope
	at     time.Time
}

// appliedPass is a sync that reached Synced: its commit, the scopes of
// its plan and whether they hold every object (see apply.Plan.Scopes),
// and whether prunes wait. It keeps the scopes, not the plan: a plan holds
// every object of the commit twice, as Git has it and as it was live
// (about 30 MiB over 300 + 300 workloads), which the polls after it never read.
type appliedPass struct {
	commit   string
	scopes   []apply.Scope
	complete bool
	waiting  bool
}

// poll is one turn of Run: nothing at all when quietPoll says so, a full
// sync otherwise, which leaves the quiet mark for the polls after it.
func (s *Syncer) poll(ctx context.Context) error {
	start := s.cfg.Clock.Now()
	head, quiet := s.quietPoll(ctx)
	if quiet {
		s.cfg.Metrics.quietPoll(s.cfg.Clock.Since(start))
		return nil
	}
	s.quiet = nil
	var mark apply.WatchMark
	if s.cfg.Watch != nil {
		mark = s.cfg.Watch.Mark() // before anything is read: what changes after counts
	}
	err := s.syncOnce(ctx, head)
	if p := s.applied; err == nil && p != nil && !p.waiting && s.cfg.Watch != nil {
		scopes := s.watchScopes(p.scopes)
		s.cfg.Watch.Follow(scopes)
		if p.complete {
			s.quiet = &quietMark{commit: p.commit, mark: mark, scopes: scopes, at: start}
		}
	}
	return err
}

// quietPoll reports whether this poll can skip the sync, and the branch
// head it found ("" if it did not look, or could not). It never says yes
// to a poll after a failure, a held change, prunes that wait, a request or
// a Trigger, or verifyEvery after the last full sync.
func (s *Syncer) quietPoll(ctx context.Context) (head string, quiet bool) {
	q := s.quiet
	if s.cfg.Watch == nil || q == nil || s.full.Swap(false) || s.cfg.Clock.Since(q.at) >= verifyEvery {
		return "", false
	}
	head, err := s.cfg.Source.Head(ctx)
	if err != nil {
		return "", false // the sync asks again, and records the failure
	}
	return head, head == q.commit && s.cfg.Watch.Unchanged(q.mark, q.scopes)
}

// watchScopes are the scopes a poll must see unchanged: those of the
// plan applied (planned), but for Deployments (the rollout controller
// writes them, and keeps them as Git says), and the sync record's own
// ConfigMaps, labelled with the sync's name like everything it applied.
func (s *Syncer) watchScopes(planned []apply.Scope) []apply.Scope {
	record := apply.Scope{Resource: configMapsScope, Namespace: s.cfg.Store.Object().Namespace}
	scopes := []apply.Scope{record}
	for _, sc := range planned {
		if sc.Resource != apply.DeploymentsResource && sc != record {
			scopes = append(scopes, sc)
		}
	}
	return scopes
}
