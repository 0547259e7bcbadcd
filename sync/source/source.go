// Package source is the Git side of a sync: one branch of one remote
// repository, polled cheaply, and the tree of a commit exposed as a
// read-only io/fs.FS.
//
// A poll is Head (a listing of the remote's references, no objects), then
// Fetch only when the branch moved, then Snapshot of the commit. Everything
// runs in process through go-git; no git binary is needed. Nothing here
// logs: every failure is returned as an error that says what was being
// done, and no error ever carries a password, token or key.
package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Defaults and limits.
const (
	defaultBranch       = "main"
	defaultTimeout      = 60 * time.Second
	defaultMaxFileBytes = 4 << 20
	defaultHTTPUser     = "git"
	defaultSSHUser      = "git"
	defaultSSHPort      = "22"
	// maxSymlinkHops bounds the symlinks followed while resolving one path,
	// so that link cycles end in an error.
	maxSymlinkHops = 10
	// maxSymlinkTarget is the longest symlink target read (PATH_MAX).
	maxSymlinkTarget = 4096
	// redactedText replaces a secret found in an error's text.
	redactedText = "[redacted]"
	// ancestryCheckEvery is how many commits an ancestry walk reads
	// between looks at its context.
	ancestryCheckEvery = 1024

	// armorBegin starts every armored OpenPGP block.
	armorBegin = "-----BEGIN PGP "
	// signatureHeader is the commit header git keeps a signature in, with
	// its continuation lines indented by one space.
	signatureHeader = "gpgsig"
	// pgpSignatureBegin and sshSignatureBegin start the two kinds of
	// signature git makes (gpg.format openpgp and ssh).
	pgpSignatureBegin = "-----BEGIN PGP SIGNATURE-----"
	sshSignatureBegin = "-----BEGIN SSH SIGNATURE-----"
	// sshNamespace is the namespace git signs commits in
	// (ssh-keygen -Y sign -n git); a signature made for another use, such
	// as a signed file, is not a commit signature.
	sshNamespace = "git"
	// Options of an allowed_signers line (ssh-keygen(1)).
	optionCertAuthority = "cert-authority"
	optionNamespaces    = "namespaces"
	optionValidAfter    = "valid-after"
	optionValidBefore   = "valid-before"

	// Transport kinds a repository URL may name.
	kindFile  = "file"
	kindHTTP  = "http"
	kindHTTPS = "https"
	kindSSH   = "ssh"
)

// Errors callers classify with errors.Is.
var (
	// ErrBranchNotFound means the followed branch does not exist on the
	// remote (it was deleted, or the repository is empty).
	ErrBranchNotFound = errors.New("branch not found")
	// ErrUnverified means a commit lacks a valid signature by a configured
	// key: it is unsigned, signed by another key, or the signature does not
	// match the commit. The error's text is the reason, naming the commit.
	ErrUnverified = errors.New("commit signature not verified")
	// ErrTimeout means a call to the Git server got no complete answer
	// within Config.Timeout (an unreachable-but-silent or hanging server),
	// or could not start because an earlier call is still hanging.
	ErrTimeout = errors.New("no answer from the Git server in time")
	// ErrAncestryUnknown means the local clone lacks part of the history
	// between two commits, so whether one descends from the other cannot
	// be told (see Repository.Descends). The error's text names the
	// commit that is missing.
	ErrAncestryUnknown = errors.New("ancestry cannot be told")
)

// Config says which repository and branch to follow and how.
type Config struct {
	// URL is the repository: file:///abs/path, http(s)://host/path,
	// ssh://[user@]host[:port]/path or user@host:path. It must not carry
	// credentials (they go in Auth) nor begin with "-".
	URL string
	// Branch is the branch followed; default "main".
	Branch string
	// Auth is how to authenticate; the zero value is anonymous.
	Auth Auth
	// Timeout bounds every call to the server (listing references,
	// fetching); default 60s.
	Timeout time.Duration
	// Dir holds the local bare clone; it is created if missing. One
	// Repository uses it at a time.
	Dir string
	// Keyring, when set, holds OpenPGP public keys (see ReadKeyring), and
	// AllowedSigners SSH ones (see ReadAllowedSigners). With either, a
	// commit is only given out by Snapshot if it carries a valid signature
	// by one of their keys; with both, by a key of either kind.
	Keyring        *Keyring
	AllowedSigners *AllowedSigners
	// MaxFileBytes is the largest file the snapshot FS returns; default
	// 4 MiB.
	MaxFileBytes int64
}

// Commit identifies a commit of the followed branch.
type Commit struct {
	// Hash is the full hexadecimal object name.
	Hash string
	// Subject is the first line of the commit message.
	Subject string
	// Author is "Name <email>".
	Author string
	// Time is the committer time: when the commit was made in this form.
	Time time.Time
}

// Snapshot is a commit and its tree, read-only.
type Snapshot struct {
	Commit Commit
	// FS reads the commit's tree with slash paths relative to the
	// repository root; names fs.ValidPath refuses (such as "../x") are
	// errors. It implements fs.ReadDirFS, fs.ReadFileFS, fs.StatFS and
	// fs.ReadLinkFS. Open, ReadFile and Stat follow a symlink only while
	// it stays inside the repository; a link that is absolute, climbs out
	// of the root (directly or through a chain), dangles or loops is an
	// error naming the link and its target, from every method. ReadDir
	// lists a symlink with type fs.ModeSymlink (fs.WalkDir does not descend
	// into it) and fails if any link in the directory is bad. A file
	// larger than Config.MaxFileBytes cannot be opened or read (Stat still
	// reports its size). Submodules are left out of listings and cannot be
	// opened. Everything reads as read-only, with the commit time as
	// modification time.
	FS fs.FS
}

// Repository follows one branch of one remote repository. Its methods are
// safe to call from several goroutines; they run one at a time.
type Repository struct {
	url    remoteURL
	branch plumbing.ReferenceName
	remote upstream
	clone
	verify   verifier
	timeout  time.Duration
	maxBytes int64
	secrets  []string
	// gate is the single lock of the Repository. A network call that
	// outlives its timeout keeps holding it until it really returns.
	gate gate
}

// New validates cfg and opens (or creates) the local clone in cfg.Dir. It
// does not contact the server. Every problem a configuration can have is
// reported here: a bad URL or branch, credentials in the URL, credentials
// that do not fit the URL's transport, SSH without known_hosts, an
// unreadable key.
func New(cfg Config) (*Repository, error) {
	r, err := newRepository(cfg)
	if err != nil {
		return nil, redact(err, cfg.Auth.secrets())
	}
	return r, nil
}

func newRepository(cfg Config) (*Repository, error) {
	u, err := parseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	branch, err := branchRef(cfg.Branch)
	if err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	switch {
	case timeout < 0:
		return nil, fmt.Errorf("timeout %s is negative", timeout)
	case timeout == 0:
		timeout = defaultTimeout
	}
	maxBytes := cfg.MaxFileBytes
	switch {
	case maxBytes < 0:
		return nil, fmt.Errorf("maximum file size %d is negative", maxBytes)
	case maxBytes == 0:
		maxBytes = defaultMaxFileBytes
	}
	auth, err := authMethod(u, cfg.Auth, timeout)
	if err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		return nil, errors.New("directory for the local clone is not set")
	}
	c, err := openClone(cfg.Dir, maxBytes)
	if err != nil {
		return nil, err
	}
	return &Repository{
		url:      u,
		branch:   branch,
		remote:   newUpstream(u, auth),
		clone:    c,
		verify:   verifier{keyring: cfg.Keyring, signers: cfg.AllowedSigners},
		timeout:  timeout,
		maxBytes: maxBytes,
		secrets:  cfg.Auth.secrets(),
		gate:     make(gate, 1),
	}, nil
}

// openClone opens the bare clone in dir, creating it if needed. Objects
// larger than maxBytes are not read into memory just to learn their size.
func openClone(dir string, maxBytes int64) (clone, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return clone{}, fmt.Errorf("create local clone directory: %w", err)
	}
	st := filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRUDefault(),
		filesystem.Options{LargeObjectThreshold: maxBytes})
	if _, err := git.Init(st, nil); err != nil && !errors.Is(err, git.ErrRepositoryAlreadyExists) {
		return clone{}, fmt.Errorf("create local clone in %s: %w", dir, err)
	}
	return clone{storage: st, packDir: filepath.Join(dir, "objects", "pack")}, nil
}

// Head returns the hash the branch points at on the remote. It lists the
// remote's references only and transfers no objects. A branch missing on
// the remote gives ErrBranchNotFound; no answer within the timeout gives
// ErrTimeout.
func (r *Repository) Head(ctx context.Context) (string, error) {
	var tip plumbing.Hash
	err := r.network(ctx, "list remote refs of "+r.url.text, func(ctx context.Context) error {
		var err error
		tip, err = r.remote.head(ctx, r.branch)
		return err
	})
	if err != nil {
		return "", err
	}
	return tip.String(), nil
}

// Fetch makes sure commit hash is in the local clone. It contacts the
// server only when the commit is not there yet, and then downloads the
// branch's current tip, replacing the local branch even when the remote
// history was rewritten (force-push). It fails if, after fetching, hash is
// still unknown: the branch moved again, away from it.
func (r *Repository) Fetch(ctx context.Context, hash string) error {
	action := fmt.Sprintf("fetch %s of %s", r.branch.Short(), r.url.text)
	h, err := parseHash(hash)
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	return r.network(ctx, action, func(ctx context.Context) error {
		if r.storage.HasEncodedObject(h) == nil {
			return nil
		}
		tip, err := r.remote.fetch(ctx, r.clone, r.branch)
		if err != nil {
			return err
		}
		if r.storage.HasEncodedObject(h) != nil {
			return fmt.Errorf("commit %s is not on the branch, which now points at %s", h, tip)
		}
		return nil
	})
}

// Snapshot returns commit hash, which must be in the local clone (see
// Fetch), with its tree as a read-only FS. When keys are configured, a
// commit without a valid signature by one of them gives an error wrapping
// ErrUnverified, and no FS.
func (r *Repository) Snapshot(ctx context.Context, hash string) (*Snapshot, error) {
	h, err := parseHash(hash)
	if err != nil {
		return nil, fmt.Errorf("read commit: %w", err)
	}
	if err := r.lock(ctx); err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	defer r.gate.release()

	c, err := object.GetCommit(r.storage, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("read commit %s: not in the local clone (fetch it first)", h)
	}
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	if r.verify.enabled() {
		if err := r.verify.commit(r.storage, c); err != nil {
			return nil, err
		}
	}
	if _, err := object.GetTree(r.storage, c.TreeHash); err != nil {
		return nil, fmt.Errorf("read tree of commit %s: %w", h, err)
	}
	return &Snapshot{
		Commit: commitOf(c),
		FS:     &treeFS{repo: r, root: c.TreeHash, modTime: c.Committer.When},
	}, nil
}

// network runs op under the repository lock with the configured timeout,
// and names action in its error. op runs in its own goroutine, which holds
// the lock until op returns: when the timeout passes first, the caller gets
// ErrTimeout at once, even from a transport that does not honour
// cancellation (an SSH handshake), and no second call starts meanwhile.
func (r *Repository) network(ctx context.Context, action string, op func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	opCtx, cancel := context.WithTimeout(ctx, r.timeout)
	if err := r.gate.acquire(opCtx); err != nil {
		cancel()
		if errors.Is(ctx.Err(), context.Canceled) {
			return fmt.Errorf("%s: %w", action, ctx.Err())
		}
		return fmt.Errorf("%s: %w (an earlier call is still waiting after %s)", action, ErrTimeout, r.timeout)
	}

	done := make(chan error, 1)
	go func() {
		// The result is in done before opCtx is cancelled, so that the
		// select below never takes this cancellation for a timeout.
		done <- op(opCtx)
		cancel()
		r.gate.release()
	}()

	var err error
	select {
	case err = <-done:
	case <-opCtx.Done():
		select {
		case err = <-done:
		default:
			err = opCtx.Err()
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("%s: %w", action, ctx.Err())
	case errors.Is(opCtx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s: %w (timeout %s)", action, ErrTimeout, r.timeout)
	}
	return redact(fmt.Errorf("%s: %w", action, err), r.secrets)
}

// lock takes the repository lock for local work, waiting at most the
// configured timeout for a call still hanging on the server.
func (r *Repository) lock(ctx context.Context) error {
	waitCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := r.gate.acquire(waitCtx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w (an earlier call is still waiting after %s)", ErrTimeout, r.timeout)
	}
	return nil
}

// gate is a lock whose wait honours a context.
type gate chan struct{}

func (g gate) acquire(ctx context.Context) error {
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g gate) release() { <-g }

// parseHash accepts a full hexadecimal object name.
func parseHash(s string) (plumbing.Hash, error) {
	s = strings.ToLower(s)
	if !plumbing.IsHash(s) {
		return plumbing.ZeroHash, fmt.Errorf("commit hash %q is not a full hexadecimal object name", s)
	}
	return plumbing.NewHash(s), nil
}

func commitOf(c *object.Commit) Commit {
	subject, _, _ := strings.Cut(strings.TrimLeft(c.Message, "\n"), "\n")
	return Commit{
		Hash:    c.Hash.String(),
		Subject: strings.TrimSpace(subject),
		Author:  fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email),
		Time:    c.Committer.When,
	}
}
