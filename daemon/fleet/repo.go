package fleet

import (
	"context"
	"errors"
	gosync "sync"
	"time"

	psync "plimsoll.dev/plimsoll/sync"
	"plimsoll.dev/plimsoll/sync/source"
)

// RepoKey tells repositories apart: the syncs that read one repository and
// branch, with the same credentials and the same verification keys,
// share one Repo. Syncs with other credentials get a clone of their own,
// so that one sync never reads through another's credentials.
type RepoKey struct {
	URL, Branch string
	// Credentials names where the credentials come from ("" for none).
	Credentials string
	// Verify tells the verification keys apart ("" for none).
	Verify string
}

// Opener builds the source of a Repo: a Git repository
// (*source.Repository) or an OCI artifact (*artifact.Source). It is
// called before each poll with the version of the credentials the Repo's
// source was built with ("" before the first): it reads the credentials
// (a Secret may have changed since) and returns nil and the same version
// when they did not change, else a source built with them and their new
// version, or an error saying why it cannot.
type Opener func(ctx context.Context, version string) (repo psync.Source, newVersion string, err error)

// Repo is one repository and branch that syncs read, polled once per
// interval for all of them: a listing of the remote's references, then a
// fetch when the branch moved. Its syncs read what it fetched through
// Source, which never goes to the network: a repository that hangs holds
// only its own poll, never a sync of another repository (see Fleet).
type Repo struct {
	key  RepoKey
	open Opener
	// net is held for writing by a poll and for reading by each sync that
	// reads the clone: a sync never waits on the network, it is deferred
	// while a poll runs (see tryRead).
	net gosync.RWMutex
	// repo and version are the repository and its credentials' version;
	// changed only under net's write lock.
	repo    psync.Source
	version string

	state repoState
}

// repoState is what the last poll found, and the syncs that read the
// Repo: by name, with their intervals, and those waiting for a poll's end.
type repoState struct {
	gosync.Mutex
	head    string
	err     error
	polled  bool
	users   map[string]time.Duration
	waiting map[string]bool
}

// newRepo returns the Repo of key, opened with open.
func newRepo(key RepoKey, open Opener) *Repo {
	return &Repo{key: key, open: open, state: repoState{users: map[string]time.Duration{}, waiting: map[string]bool{}}}
}

// interval is the shortest interval of the Repo's syncs: how often it is
// polled.
func (r *Repo) interval() time.Duration {
	r.state.Lock()
	defer r.state.Unlock()
	var least time.Duration
	for _, iv := range r.state.users {
		if least == 0 || iv < least {
			least = iv
		}
	}
	return least
}

// poll lists the remote's references and fetches the branch's head when
// it moved, once no sync reads the clone. It reports whether the head or
// the error changed.
func (r *Repo) poll(ctx context.Context) bool {
	r.net.Lock()
	defer r.net.Unlock()
	head, err := r.pollLocked(ctx)
	r.state.Lock()
	defer r.state.Unlock()
	changed := !r.state.polled || head != r.state.head || errText(err) != errText(r.state.err)
	if err != nil {
		head = r.state.head // the sync records the failure, still running what it had
	}
	r.state.head, r.state.err, r.state.polled = head, err, true
	return changed
}

// pollLocked is poll under net's write lock.
func (r *Repo) pollLocked(ctx context.Context) (string, error) {
	repo, version, err := r.open(ctx, r.version)
	if err != nil {
		return "", err
	}
	if repo != nil {
		r.repo, r.version = repo, version
	}
	if r.repo == nil {
		return "", errNotPolled
	}
	head, err := r.repo.Head(ctx)
	if err != nil {
		return "", err
	}
	if err := r.repo.Fetch(ctx, head); err != nil {
		return "", err
	}
	return head, nil
}

// errText is err's text, "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// tryRead takes the clone for sync name to read, unless a poll holds it
// or none has run yet: then the sync is noted as waiting, and false
// returned; the poll's end queues it again (see takeWaiting).
func (r *Repo) tryRead(name string) bool {
	r.state.Lock()
	polled := r.state.polled
	r.state.Unlock()
	if polled && r.net.TryRLock() {
		return true
	}
	r.state.Lock()
	defer r.state.Unlock()
	r.state.waiting[name] = true
	return false
}

// doneReading gives the clone back.
func (r *Repo) doneReading() { r.net.RUnlock() }

// takeWaiting returns the syncs that wait for the Repo, or all of them
// with all, and forgets that they wait.
func (r *Repo) takeWaiting(all bool) []string {
	r.state.Lock()
	defer r.state.Unlock()
	var names []string
	for name := range r.state.users {
		if all || r.state.waiting[name] {
			names = append(names, name)
		}
	}
	clear(r.state.waiting)
	return names
}

// Source is the Repo as the source of one sync: the head the last poll
// found, and the clone it fetched. Its methods are called only while the
// sync holds the clone (see tryRead).
func (r *Repo) Source() *RepoSource { return &RepoSource{r: r} }

// RepoSource is a Repo as a sync reads it; it implements sync.Source.
type RepoSource struct{ r *Repo }

// errNotPolled is the head of a Repo not polled yet; a sync never sees it,
// since it waits for the first poll.
var errNotPolled = errors.New("the repository has not been polled yet")

// Head returns the branch head the last poll found, or its failure.
func (s *RepoSource) Head(context.Context) (string, error) {
	r := s.r
	r.state.Lock()
	defer r.state.Unlock()
	switch {
	case !r.state.polled:
		return "", errNotPolled
	case r.state.err != nil:
		return "", r.state.err
	}
	return r.state.head, nil
}

// Fetch makes sure the commit is in the clone; the poll has fetched it.
func (s *RepoSource) Fetch(ctx context.Context, hash string) error { return s.r.repo.Fetch(ctx, hash) }

// Snapshot reads a commit of the clone.
func (s *RepoSource) Snapshot(ctx context.Context, hash string) (*source.Snapshot, error) {
	return s.r.repo.Snapshot(ctx, hash)
}

// Descends tells whether commit descends from ancestor in the clone.
func (s *RepoSource) Descends(ctx context.Context, commit, ancestor string) (bool, error) {
	return s.r.repo.Descends(ctx, commit, ancestor)
}
