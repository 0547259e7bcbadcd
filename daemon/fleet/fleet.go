// Package fleet runs many syncs in one process, fairly: every sync is an
// item of one work queue, polled at its own interval by a bounded number
// of workers, with a backoff of its own while it fails; every repository
// is polled once per interval for all the syncs that read it, in a
// goroutine of its own, so that a repository that hangs holds up its own
// syncs only. A sync runs only while the Owner says this replica owns it.
package fleet

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	gosync "sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"

	psync "plimsoll.dev/plimsoll/sync"
)

// Defaults of the fleet.
const (
	// DefaultWorkers is how many syncs poll at once. A sync that applies
	// 5,000 objects takes one worker for its minutes; the syncs of 5
	// objects go on in the others.
	DefaultWorkers = 4
	// DefaultInterval is how often a Repo is polled when its syncs say
	// nothing.
	DefaultInterval = psync.DefaultInterval
	// retireBase and retireMax space the attempts to retire a sync whose
	// objects cannot all be deleted yet.
	retireBase = 5 * time.Second
	retireMax  = 5 * time.Minute
)

// Owner says which syncs this replica serves. Hold reports whether it owns
// sync name now and, when it does, holds that ownership until release is
// called: a sync is handed over to another replica only once the work in
// flight on it is done. Owns only reports it: a repository none of whose
// syncs this replica owns is not polled.
type Owner interface {
	Hold(name string) (release func(), owned bool)
	Owns(name string) bool
}

// Sync is one sync the fleet runs: its Syncer, which reads the Repo's
// Source, and what to do before its first poll on this replica.
type Sync struct {
	Syncer *psync.Syncer
	Repo   *Repo
	// Prepare, when set, runs before the sync's first poll after it was
	// put (or came back to this replica); an error refuses the sync (its
	// status says why, see sync.Syncer.Refuse) and is retried at the next
	// turn, with the sync's backoff.
	Prepare func(ctx context.Context) error
}

// Config wires a Fleet.
type Config struct {
	// Workers is how many syncs poll at once; DefaultWorkers when 0.
	Workers int
	// Owner says which syncs this replica runs; all of them when nil.
	Owner Owner
	Log   *slog.Logger
}

// entry is one sync of the fleet, or one being retired.
type entry struct {
	sync     *Sync
	failures int
	prepared bool
	// retire, once set, replaces the polls: the sync's declaration is
	// gone, and retire ends it.
	retire func(ctx context.Context) error
}

// Fleet runs syncs. Put, Retire and Trigger may be called before and
// while Run runs.
type Fleet struct {
	cfg   Config
	queue workqueue.TypedRateLimitingInterface[string]

	mu      gosync.Mutex
	ctx     context.Context // Run's, nil before it
	entries map[string]*entry
	repos   map[RepoKey]*repoRun
}

// repoRun is a Repo and the loop that polls it.
type repoRun struct {
	repo    *Repo
	trigger chan struct{}
	stop    context.CancelFunc
}

// alwaysOwner owns every sync.
type alwaysOwner struct{}

func (alwaysOwner) Hold(string) (func(), bool) { return func() {}, true }

func (alwaysOwner) Owns(string) bool { return true }

// New returns a Fleet.
func New(cfg Config) *Fleet {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Owner == nil {
		cfg.Owner = alwaysOwner{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Fleet{
		cfg: cfg,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](retireBase, retireMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "syncs"}),
		entries: map[string]*entry{},
		repos:   map[RepoKey]*repoRun{},
	}
}

// Repo returns the Repo of key, shared by every sync that reads it; open
// builds its repository when it has none yet.
func (f *Fleet) Repo(key RepoKey, open Opener) *Repo {
	f.mu.Lock()
	defer f.mu.Unlock()
	if run, ok := f.repos[key]; ok {
		return run.repo
	}
	run := &repoRun{repo: newRepo(key, open), trigger: make(chan struct{}, 1)}
	f.repos[key] = run
	return run.repo
}

// Put runs s as sync name from now on, in place of the sync of that name
// it ran before; interval is how often its Repo is polled for it.
func (f *Fleet) Put(name string, s *Sync, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	f.mu.Lock()
	old := f.entries[name]
	f.entries[name] = &entry{sync: s}
	s.Repo.state.Lock()
	s.Repo.state.users[name] = interval
	s.Repo.state.Unlock()
	if old != nil && old.sync != nil && old.sync.Repo != s.Repo {
		f.leaveRepoLocked(name, old.sync.Repo)
	}
	f.startRepoLocked(s.Repo)
	f.mu.Unlock()
	f.queue.Add(name)
}

// Retire ends sync name with retire, which this replica runs once it owns
// the sync, again with a backoff until it succeeds; then the sync is
// gone.
func (f *Fleet) Retire(name string, retire func(ctx context.Context) error) {
	f.mu.Lock()
	e := f.entries[name]
	if e == nil {
		e = &entry{}
		f.entries[name] = e
	}
	e.retire = retire
	f.mu.Unlock()
	f.queue.Add(name)
}

// Has reports whether the fleet runs (or retires) sync name.
func (f *Fleet) Has(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.entries[name] != nil
}

// Names returns the names of the syncs the fleet runs or retires.
func (f *Fleet) Names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Keys(f.entries))
}

// Trigger asks for a full poll of sync name now.
func (f *Fleet) Trigger(name string) {
	f.mu.Lock()
	e := f.entries[name]
	f.mu.Unlock()
	if e != nil && e.sync != nil {
		e.sync.Syncer.Trigger()
	}
	f.queue.Add(name)
}

// Owned tells the fleet that this replica has come to own sync name: it
// polls it now, after its repository.
func (f *Fleet) Owned(name string) {
	f.mu.Lock()
	if e := f.entries[name]; e != nil {
		e.prepared = false
		if e.sync != nil {
			if run := f.repos[e.sync.Repo.key]; run != nil {
				poke(run.trigger)
			}
		}
	}
	f.mu.Unlock()
	f.queue.Add(name)
}

// poke asks a Repo's loop to poll now.
func poke(trigger chan struct{}) {
	select {
	case trigger <- struct{}{}:
	default:
	}
}

// PollRepos asks every Repo to poll now (a push webhook): the syncs of
// those that moved poll after them.
func (f *Fleet) PollRepos() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, run := range f.repos {
		poke(run.trigger)
	}
}

// Run polls the repositories and runs the syncs until ctx ends.
func (f *Fleet) Run(ctx context.Context) error {
	defer f.queue.ShutDown()
	f.mu.Lock()
	f.ctx = ctx
	for _, run := range f.repos {
		f.startRepoLocked(run.repo)
	}
	f.mu.Unlock()
	var workers gosync.WaitGroup
	for range f.cfg.Workers {
		workers.Go(func() { wait.UntilWithContext(ctx, f.work, time.Second) })
	}
	<-ctx.Done()
	f.queue.ShutDown()
	workers.Wait()
	return nil
}

func (f *Fleet) work(ctx context.Context) {
	for f.process(ctx) {
	}
}

// process takes one sync off the queue: if this replica owns it and its
// Repo is not being polled, one poll (or its retirement), and the next
// turn after its interval or its backoff.
func (f *Fleet) process(ctx context.Context) bool {
	name, quit := f.queue.Get()
	if quit {
		return false
	}
	defer f.queue.Done(name)
	f.mu.Lock()
	e := f.entries[name]
	f.mu.Unlock()
	if e == nil {
		f.queue.Forget(name)
		return true
	}
	release, owned := f.cfg.Owner.Hold(name)
	if !owned {
		return true // Owned brings it back
	}
	defer release()
	if e.retire != nil {
		f.retire(ctx, name, e)
		return true
	}
	s := e.sync
	if !s.Repo.tryRead(name) {
		return true // the poll's end brings it back
	}
	err := f.prepare(ctx, e)
	if err == nil {
		err = s.Syncer.Poll(ctx)
	} else if rerr := s.Syncer.Refuse(ctx, err); rerr != nil {
		f.cfg.Log.Error("record the refusal of the sync", "sync", name, "err", rerr)
	}
	s.Repo.doneReading()
	if ctx.Err() != nil {
		return true
	}
	failures := 0
	if err != nil && !errors.Is(err, psync.ErrHeld) {
		failures = e.failures + 1
	}
	f.mu.Lock()
	if f.entries[name] == e {
		e.failures = failures
	}
	f.mu.Unlock()
	wait := s.Syncer.NextWait(err, failures)
	if failures > 0 {
		f.cfg.Log.Info("next attempt after backoff", "sync", name, "failures", failures, "wait", wait)
	}
	f.queue.AddAfter(name, wait)
	return true
}

// prepare readies the sync once per ownership: its Syncer forgets what
// an earlier ownership left it (see psync.Syncer.Regained), and Prepare
// runs.
func (f *Fleet) prepare(ctx context.Context, e *entry) error {
	if e.prepared {
		return nil
	}
	e.sync.Syncer.Regained()
	if e.sync.Prepare != nil {
		if err := e.sync.Prepare(ctx); err != nil {
			return err
		}
	}
	f.mu.Lock()
	e.prepared = true
	f.mu.Unlock()
	return nil
}

// retire runs the retirement of sync name; once it succeeds the sync is
// gone from the fleet, and its Repo left.
func (f *Fleet) retire(ctx context.Context, name string, e *entry) {
	if err := e.retire(ctx); err != nil {
		f.cfg.Log.Info("retire the sync; trying again", "sync", name, "err", err)
		f.queue.AddRateLimited(name)
		return
	}
	f.queue.Forget(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.entries[name] != e {
		return // declared again meanwhile
	}
	delete(f.entries, name)
	if e.sync != nil {
		f.leaveRepoLocked(name, e.sync.Repo)
	}
}

// startRepoLocked starts the poll loop of r, once Run runs and if it does
// not run yet. f.mu is held.
func (f *Fleet) startRepoLocked(r *Repo) {
	run := f.repos[r.key]
	if f.ctx == nil || run == nil || run.stop != nil {
		return
	}
	ctx, stop := context.WithCancel(f.ctx)
	run.stop = stop
	go f.pollRepo(ctx, run)
}

// leaveRepoLocked takes sync name off r's users, and stops r once no sync
// reads it. f.mu is held.
func (f *Fleet) leaveRepoLocked(name string, r *Repo) {
	r.state.Lock()
	delete(r.state.users, name)
	delete(r.state.waiting, name)
	left := len(r.state.users)
	r.state.Unlock()
	if left > 0 {
		return
	}
	if run := f.repos[r.key]; run != nil {
		if run.stop != nil {
			run.stop()
		}
		delete(f.repos, r.key)
	}
}

// pollRepo polls run's Repo at the shortest interval of its syncs, or at
// once on a trigger, until ctx ends; not while this replica owns none of
// its syncs. After each poll it queues the syncs that waited for it, and
// all of them when the head or the error moved.
func (f *Fleet) pollRepo(ctx context.Context, run *repoRun) {
	for {
		if f.ownsAny(run.repo) {
			changed := run.repo.poll(ctx)
			if ctx.Err() != nil {
				return
			}
			for _, name := range run.repo.takeWaiting(changed) {
				f.queue.Add(name)
			}
		}
		interval := run.repo.interval()
		if interval <= 0 {
			interval = DefaultInterval
		}
		timer := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-run.trigger:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// ownsAny reports whether this replica owns a sync that reads r.
func (f *Fleet) ownsAny(r *Repo) bool {
	r.state.Lock()
	names := slices.Collect(maps.Keys(r.state.users))
	r.state.Unlock()
	return slices.ContainsFunc(names, f.cfg.Owner.Owns)
}
