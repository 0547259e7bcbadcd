package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/sync/source"
)

// waitGitFlags are the flags of the sync commands that wait takes too, to
// clone the sync's repository and tell whether a commit that replaced the
// awaited one contains it.
var waitGitFlags = []string{"repo", "branch", "cache-dir", "git-timeout", "git-username", "git-password-file", "git-password-env",
	"git-token-file", "git-token-env", "ssh-key-file", "ssh-key-passphrase-file", "ssh-known-hosts-file"}

// waitCacheDir is wait's default --cache-dir: not the sync commands', so
// that a wait never shares a clone with a daemon on the same machine.
var waitCacheDir = filepath.Join(os.TempDir(), "plimsoll-wait")

// addWaitGitFlags adds waitGitFlags to fs, bound to o: the sync commands'
// own flags, with the usage of --repo and the default of --cache-dir that
// fit a wait.
func addWaitGitFlags(fs *pflag.FlagSet, o *sourceOptions) {
	all := pflag.NewFlagSet("source", pflag.ContinueOnError)
	o.addFlags(all)
	for _, name := range waitGitFlags {
		fs.AddFlag(all.Lookup(name))
	}
	fs.Lookup("repo").Usage = "the sync's Git repository URL (file://, https://, ssh:// or git@host:path): to tell whether a commit that replaced the awaited one contains it (default: none, and a replaced commit is waited for until --timeout)"
	o.cacheDir = waitCacheDir
	fs.Lookup("cache-dir").DefValue = waitCacheDir
}

// ancestor tells how the commit a sync applied stands to the commit a
// wait awaits (see relate).
type ancestor interface {
	relate(ctx context.Context, awaited, applied string) (ancestry, error)
}

// noRepository is the ancestor of a wait without --repo: it knows a
// commit from itself, and no more.
type noRepository struct{}

func (noRepository) relate(_ context.Context, awaited, applied string) (ancestry, error) {
	if revision.Names(applied, awaited) {
		return ancestry{rel: relSame}, nil
	}
	return ancestry{rel: relUnknown}, nil
}

// repoAncestry answers from a local clone of the sync's repository and
// branch, fetched when a commit is not in it yet. Each pair of commits is
// asked once: the answer for an applied commit does not change, and one
// that finds the awaited commit pending changes only when the sync
// applies another commit (a rewind the sync holds leaves the wait to its
// timeout).
type repoAncestry struct {
	repo  *source.Repository
	known map[[2]string]ancestry
}

// newRepoAncestry opens the local clone that the flags describe (it
// fetches nothing yet); without --repo, the ancestor is noRepository.
func newRepoAncestry(o *sourceOptions) (ancestor, error) {
	if o.repo == "" {
		return noRepository{}, nil
	}
	cfg, err := o.sourceConfig()
	if err != nil {
		return nil, fmt.Errorf("clone --repo to tell the commits apart: %w", err)
	}
	repo, err := source.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("clone --repo to tell the commits apart: %w", err)
	}
	return &repoAncestry{repo: repo, known: map[[2]string]ancestry{}}, nil
}

func (a *repoAncestry) relate(ctx context.Context, awaited, applied string) (ancestry, error) {
	if revision.Names(applied, awaited) {
		return ancestry{rel: relSame}, nil
	}
	key := [2]string{awaited, applied}
	if known, ok := a.known[key]; ok {
		return known, nil
	}
	contains := false
	// An applied commit that the branch no longer has (it was
	// force-pushed away) cannot be fetched, and contains nothing the
	// branch has: the head tells.
	if a.repo.Fetch(ctx, applied) == nil {
		var err error
		if contains, err = a.repo.Descends(ctx, applied, awaited); err != nil {
			return ancestry{}, fmt.Errorf("tell whether commit %s contains %s: %w", revision.Short(applied), revision.Short(awaited), err)
		}
	}
	head := ""
	onBranch := false
	if !contains {
		var err error
		if head, onBranch, err = a.headContains(ctx, awaited); err != nil {
			return ancestry{}, err
		}
	}
	known := relate(awaited, applied, head, contains, onBranch)
	a.known[key] = known
	return known, nil
}

// headContains fetches the branch's head and tells whether it contains
// commit.
func (a *repoAncestry) headContains(ctx context.Context, commit string) (string, bool, error) {
	head, err := a.repo.Head(ctx)
	if err != nil {
		return "", false, fmt.Errorf("find whether the branch still has commit %s: %w", revision.Short(commit), err)
	}
	if err := a.repo.Fetch(ctx, head); err != nil {
		return "", false, fmt.Errorf("find whether the branch still has commit %s: %w", revision.Short(commit), err)
	}
	onBranch, err := a.repo.Descends(ctx, head, commit)
	if err != nil {
		return "", false, fmt.Errorf("find whether the branch still has commit %s: %w", revision.Short(commit), err)
	}
	return head, onBranch, nil
}
