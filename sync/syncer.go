package sync

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"plimsoll.dev/plimsoll/internal/redact"
	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
	"plimsoll.dev/plimsoll/sync/source"
	"plimsoll.dev/plimsoll/sync/window"
)

// Defaults and event reasons of the syncer.
const (
	// DefaultInterval is how often the remote is polled.
	DefaultInterval = 30 * time.Second
	// DefaultMaxBackoff caps the wait between attempts while they fail.
	DefaultMaxBackoff = 5 * time.Minute
	// HeldRetry is how often Run looks again while Config.Writable says
	// no.
	HeldRetry = 2 * time.Second

	// ReasonSynced is the Event reason of an applied commit.
	ReasonSynced = "Synced"
	// ReasonSyncFailed is the Event reason of a failed sync.
	ReasonSyncFailed = "SyncFailed"
	// ReasonHeld is the Event reason of a change held by a sync window.
	ReasonHeld = "SyncHeld"
	// ReasonRewindHeld is the Event reason (a Warning) of a branch head
	// held because it does not descend from the commit applied.
	ReasonRewindHeld = "RewindHeld"
	// ReasonRewindAccepted is the Event reason of a held rewind that a
	// person accepted, recorded as the sync goes on to apply it.
	ReasonRewindAccepted = "RewindAccepted"
	// ReasonTemplateRestored is the Event reason, on the object, of a pod
	// template changed outside Git that the sync applied again: a
	// StatefulSet's or a DaemonSet's (a Deployment's is the rollout
	// controller's to restore, with the same reason).
	ReasonTemplateRestored = "TemplateRestored"

	// waitsNamed is how many waiting prunes the status message names; it
	// counts the others, so that the one-line message stays short when a
	// commit renames many ConfigMaps at once.
	waitsNamed = 5
)

// ErrHeld is returned by SyncOnce when the change is held, by a sync
// window or as a rewind waiting to be accepted (see Config.HoldRewinds):
// the cluster is not at the branch head, but nothing failed.
var ErrHeld = errors.New("change held")

// Source is the Git side of a sync; *source.Repository implements it.
type Source interface {
	Head(ctx context.Context) (string, error)
	Fetch(ctx context.Context, hash string) error
	Snapshot(ctx context.Context, hash string) (*source.Snapshot, error)
	// Descends reports whether commit descends from ancestor, or is it;
	// an error wrapping source.ErrAncestryUnknown when the fetched history
	// cannot tell.
	Descends(ctx context.Context, commit, ancestor string) (bool, error)
}

// Config wires a Syncer.
type Config struct {
	// Name is the sync's name: the suffix of its ConfigMap and the value of
	// the plimsoll.dev/sync label on every object it applies.
	Name string
	// Path is the directory of the repository to render ("." for all).
	Path string
	// Namespace is given to namespaced objects that set none.
	Namespace string
	// Namespaces, when set, are the only namespaces the sync writes in: a
	// commit with an object elsewhere, or a cluster-scoped one, is
	// refused, and objects it applied elsewhere before are neither read
	// nor pruned (they stay in the inventory).
	Namespaces []string
	// Prune deletes objects that left Git.
	Prune bool
	// AllowEmpty lets a commit that renders no object prune everything.
	AllowEmpty bool
	// Interval between polls; MaxBackoff caps the wait while polls fail.
	Interval, MaxBackoff time.Duration
	// Windows hold changes while they say so.
	Windows window.Windows
	// HoldRewinds holds a branch head that does not descend from the last
	// commit applied (a force-push, a replay of an older commit) until a
	// person accepts it with contract.AnnotationAcceptRewind on the sync's
	// ConfigMap (see holdRewind); without it such a head is applied as
	// any other.
	HoldRewinds bool
	// Limits bound what one render may read.
	Limits manifest.Limits
	// Charts, when set, renders the Helm charts of a commit; without it a
	// commit holding a chart fails to render.
	Charts ChartRenderer
	// Hooks, when set, runs the hooks of the charts; without it hooks are
	// left out.
	Hooks HookRunner
	// Decryption, when set, decrypts the SOPS-encrypted files of a commit
	// as it is rendered; without it an encrypted file fails the commit,
	// saying that no decryption key is configured.
	Decryption Decryption

	Source      Source
	Applier     *apply.Applier
	Store       *inventory.Store
	Deployments DeploymentSink
	// Diffs, for Diff only, shows the rollout controller's Deployments as
	// it would write them (the same controller as Deployments).
	Diffs   DeploymentDiffer
	Events  EventRecorder
	Metrics *Metrics
	Log     *slog.Logger
	Clock   clock.PassiveClock
	// Writable, when set, says whether this daemon may write: while it
	// says no (another daemon holds the sync), Run syncs nothing and
	// looks again every HeldRetry. SyncOnce does not ask.
	Writable func() bool
	// Notifier, when set, hears of the status of every attempt that
	// reached the sync record (see StatusReport).
	Notifier Notifier
	// Watch, when set, lets Run skip the polls that find the applied
	// commit still at the branch head and nothing it wrote changed (see
	// quietPoll). SyncOnce always syncs.
	Watch *apply.Watch
	// Declarations, when set, is where the daemon takes declared syncs
	// from: the sync declarations of a commit are checked against it (see
	// checkDeclarations). Without it a commit that declares a sync is
	// refused.
	Declarations Declarations
}

// Syncer makes the cluster match the followed branch, one commit at a time.
type Syncer struct {
	cfg     Config
	trigger chan struct{}
	ready   chan struct{}
	// handedOff is the commit whose Deployments the rollout controller
	// was last handed; "" after a failed sync.
	handedOff string
	// handedTemplates are the template hashes of the Deployments of
	// commit handedOff, by namespace/name, for the sync record (see
	// inventory.DataTemplates).
	handedTemplates map[string]string
	// applied is what the last SyncOnce applied, nil if it failed.
	applied *appliedPass
	// quiet is what lets the next poll skip, nil when it must sync.
	quiet *quietMark
	// full asks the next poll for a full sync (a Trigger or a request).
	full atomic.Bool
	// ancestry is the last answer to whether a head descends from the
	// commit applied (see descends).
	ancestry *ancestry
}

// Regained forgets what the Syncer knew of the cluster from an earlier
// ownership of its sync, as a replica that gains the sync again must:
// another replica ran it meanwhile, and may have applied other commits and
// handed other Deployments over. The next poll syncs in full and hands the
// head's Deployments over again, as at start. It is called from the
// goroutine that polls, before the first poll of an ownership.
func (s *Syncer) Regained() {
	s.handedOff, s.handedTemplates, s.applied, s.quiet, s.ancestry = "", nil, nil, nil, nil
}

// New returns a Syncer; the zero fields of cfg take their defaults.
func New(cfg Config) *Syncer {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.Path == "" {
		cfg.Path = "."
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Events == nil {
		cfg.Events = discardEvents{}
	}
	return &Syncer{cfg: cfg, trigger: make(chan struct{}, 1), ready: make(chan struct{})}
}

// Trigger asks for a full sync now. It never blocks; triggers that arrive
// while one is pending are merged.
func (s *Syncer) Trigger() {
	s.full.Store(true)
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Ready is closed once the first sync has been attempted.
func (s *Syncer) Ready() <-chan struct{} { return s.ready }

// Run syncs at once, then every Interval, on Trigger or on a request on
// the sync's ConfigMap (contract.AnnotationRequestedAt), until ctx ends.
// While syncs fail, the wait doubles from Interval up to MaxBackoff; the
// first success returns it to Interval.
func (s *Syncer) Run(ctx context.Context) error {
	if s.cfg.Watch != nil {
		defer s.cfg.Watch.Stop()
	}
	go s.cfg.Store.WatchRequests(ctx, func() {
		s.cfg.Log.Info("sync requested on the sync record; syncing now", "sync", s.cfg.Name)
		s.Trigger()
	})
	failures := 0
	for {
		wait := HeldRetry
		if s.cfg.Writable == nil || s.cfg.Writable() {
			err := s.Poll(ctx)
			if ctx.Err() != nil {
				return nil
			}
			wait = s.cfg.Interval
			if err != nil && !errors.Is(err, ErrHeld) {
				failures++
				wait = backoff(s.cfg.Interval, s.cfg.MaxBackoff, failures)
				s.cfg.Log.Info("next attempt after backoff", "sync", s.cfg.Name, "failures", failures, "wait", wait)
			} else {
				failures = 0
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-s.trigger:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// Poll is one turn of Run, for a caller that schedules the polls itself
// (a daemon of many syncs): nothing at all when the applied commit is
// still the branch head and nothing the sync wrote changed, a full sync
// otherwise. It returns what SyncOnce returns; Ready is closed once it
// has run.
func (s *Syncer) Poll(ctx context.Context) error {
	err := s.poll(ctx)
	select {
	case <-s.ready:
	default:
		close(s.ready) // the first sync attempted
	}
	return err
}

// NextWait is how long to wait after a poll that ended in err, the
// failures in a row counting this one (see backoff): Config.Interval
// after a success or a held change.
func (s *Syncer) NextWait(err error, failures int) time.Duration {
	if err == nil || errors.Is(err, ErrHeld) {
		return s.cfg.Interval
	}
	return backoff(s.cfg.Interval, s.cfg.MaxBackoff, failures)
}

// Name is the sync's name.
func (s *Syncer) Name() string { return s.cfg.Name }

// discardEvents records nothing.
type discardEvents struct{}

func (discardEvents) Event(context.Context, runtime.Object, string, string, string) {}

// backoff is the wait after n consecutive failures: interval doubled n
// times, capped. With a 30s interval and a 5m cap: 1m, 2m, 4m, 5m, 5m...
func backoff(interval, limit time.Duration, n int) time.Duration {
	d := interval
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// SyncOnce runs one sync: fetch, render, validate, dry-run, apply, prune,
// status. It returns nil when the cluster matches the branch head, an
// error wrapping ErrHeld when a window holds the change or a rewind waits
// to be accepted, and the failure otherwise; the failure is also in the
// sync status and in an Event.
func (s *Syncer) SyncOnce(ctx context.Context) error {
	return s.syncOnce(ctx, "")
}

// syncOnce is SyncOnce at branch head head, or at the head it asks the
// remote for when head is "".
func (s *Syncer) syncOnce(ctx context.Context, head string) error {
	start := s.cfg.Clock.Now()
	s.applied = nil
	rec, repair, err := s.load(ctx)
	status, outcome := inventory.Status{}, outcomeFailed
	switch {
	case err != nil && rec.Lost == "":
		// The record could not be read at all (the API server): there is
		// no status to write either.
		s.cfg.Log.Error("read sync record", "sync", s.cfg.Name, "err", err)
		s.cfg.Metrics.observe(outcomeFailed, s.cfg.Clock.Since(start))
		return err
	case err != nil:
		status = s.unreadable(ctx, rec.Status, err)
	default:
		status, outcome, err = s.sync(ctx, &rec, head)
		if repair != "" && err == nil {
			status.Message += "; " + repair
		}
		if outcome == outcomeSynced {
			// An acceptance serves once: the rewind it accepted is applied,
			// or the branch came back to the applied history.
			rec.SpentRewind = rec.AcceptRewind
		}
	}
	if s.cfg.Notifier != nil {
		s.cfg.Notifier.Notify(StatusReport{Sync: s.cfg.Name, Namespace: s.cfg.Store.Object().Namespace, Previous: rec.Status, Status: status})
	}
	rec.Status = status
	if _, serr := s.cfg.Store.Save(ctx, rec); serr != nil {
		s.cfg.Log.Error("write sync status", "sync", s.cfg.Name, "err", serr)
		err = errors.Join(err, serr)
	}
	s.cfg.Metrics.observe(outcome, s.cfg.Clock.Since(start))
	return redact.Error(err)
}

// sync does the work of SyncOnce and returns the status to record; it
// updates rec.Inventory with what was applied and pruned. head is the
// branch head when the caller has asked already.
func (s *Syncer) sync(ctx context.Context, rec *inventory.Record, head string) (inventory.Status, string, error) {
	prev := rec.Status
	var err error
	if head == "" {
		head, err = s.cfg.Source.Head(ctx)
	}
	if err == nil {
		err = s.cfg.Source.Fetch(ctx, head)
	}
	if err != nil {
		return s.stale(ctx, prev, err), outcomeFailed, err
	}
	fetched := prev
	fetched.FetchedCommit, fetched.StaleSince = head, ""

	snap, err := s.cfg.Source.Snapshot(ctx, head)
	if err != nil {
		step := "read " + revision.Noun(head)
		if errors.Is(err, source.ErrUnverified) {
			step = "signature check"
		}
		return s.failed(ctx, fetched, head, step, err), outcomeFailed, err
	}
	objs, charts, secrets, err := s.render(ctx, snap, len(rec.Inventory))
	if err != nil {
		return s.failed(ctx, fetched, head, "render", err), outcomeFailed, err
	}

	if st, held, err := s.holdRewind(ctx, rec, fetched); held || err != nil {
		if !held {
			return s.failed(ctx, fetched, head, "rewind check", err), outcomeFailed, err
		}
		return st, outcomeHeld, err
	}
	if st, held, err := s.hold(ctx, prev, fetched); held {
		return st, outcomeHeld, err
	}

	checked, refused := s.checkDeployments(ctx, objs, snap.Commit)
	if err := errors.Join(checkAnalyses(objs), checkSetStrategies(objs), s.checkDeclarations(ctx, objs), refused); err != nil {
		if checked != nil {
			checked.Refuse()
		}
		return s.failed(ctx, fetched, head, "check", err), outcomeFailed, err
	}
	plan, changes, err := s.applyCommit(ctx, objs, charts, rec, snap.Commit, checked)
	if err != nil {
		step := "apply"
		if owned := (*apply.OwnerError)(nil); errors.As(err, &owned) {
			step = "ownership check"
		}
		if prune := (*apply.PruneRefusal)(nil); errors.As(err, &prune) {
			step = "rights check"
		}
		if hook := (*HookError)(nil); errors.As(err, &hook) {
			step = hook.Event + " hook"
		}
		err = secrets.err(err)
		return s.failed(ctx, fetched, head, step, err), outcomeFailed, err
	}
	pruned, err := s.prune(ctx, plan, rec)
	if err != nil {
		err = secrets.err(err)
		return s.failed(ctx, fetched, head, "prune", err), outcomeFailed, err
	}

	if s.cfg.Deployments != nil {
		rec.Templates = s.handedTemplates
	}
	return s.synced(ctx, prev, fetched, snap.Commit, plan, changes, pruned, charts), outcomeSynced, nil
}

func shortOrNone(hash string) string {
	if hash == "" {
		return "nothing yet"
	}
	return revision.Short(hash)
}

// oneLine joins a (possibly joined) error into one line for annotations.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}
