package source

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// testTimeout bounds every call in tests that do not test timeouts.
const testTimeout = 20 * time.Second

var testSignature = object.Signature{
	Name:  "Ada Lovelace",
	Email: "ada@example.com",
	When:  time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
}

// newBareRemote creates an empty bare repository whose HEAD is main.
func newBareRemote(t testing.TB) (dir string, repo *git.Repository) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "remote.git")
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.Main},
		Bare:        true,
	})
	if err != nil {
		t.Fatalf("init bare remote: %v", err)
	}
	return dir, repo
}

// workClone is a working repository that commits and pushes to a remote.
type workClone struct {
	t    testing.TB
	dir  string
	repo *git.Repository
}

// newWorkClone creates an empty working repository on branch main whose
// origin is the bare repository at remoteDir.
func newWorkClone(t testing.TB, remoteDir string) *workClone {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.Main},
	})
	if err != nil {
		t.Fatalf("init work clone: %v", err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{remoteDir}}); err != nil {
		t.Fatalf("add origin: %v", err)
	}
	return &workClone{t: t, dir: dir, repo: repo}
}

// commit writes files (path -> content; "" deletes the path), commits them
// with message, signed by signer when it is not nil, and returns the hash.
func (w *workClone) commit(message string, files map[string]string, signer git.Signer) string {
	w.t.Helper()
	wt, err := w.repo.Worktree()
	if err != nil {
		w.t.Fatalf("open worktree: %v", err)
	}
	for name, content := range files {
		full := filepath.Join(w.dir, filepath.FromSlash(name))
		if content == "" {
			if _, err := wt.Remove(name); err != nil {
				w.t.Fatalf("remove %s: %v", name, err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			w.t.Fatalf("create directory for %s: %v", name, err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			w.t.Fatalf("write %s: %v", name, err)
		}
		if _, err := wt.Add(name); err != nil {
			w.t.Fatalf("add %s: %v", name, err)
		}
	}
	h, err := wt.Commit(message, &git.CommitOptions{
		Author:            &testSignature,
		Committer:         &testSignature,
		Signer:            signer,
		AllowEmptyCommits: true,
	})
	if err != nil {
		w.t.Fatalf("commit: %v", err)
	}
	return h.String()
}

// newPushedRemote creates a bare remote and a work clone of it that
// commits files with message (signed by signer when it is not nil) and
// pushes them to main. It returns the remote's directory, the clone and
// the commit's hash.
func newPushedRemote(t testing.TB, message string, files map[string]string, signer git.Signer) (remoteDir string, work *workClone, head string) {
	t.Helper()
	remoteDir, _ = newBareRemote(t)
	work = newWorkClone(t, remoteDir)
	head = work.commit(message, files, signer)
	work.push("refs/heads/main:refs/heads/main")
	return remoteDir, work, head
}

// push pushes refspec to origin, forcing when it starts with "+".
func (w *workClone) push(refspec string) {
	w.t.Helper()
	err := w.repo.Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{config.RefSpec(refspec)}})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		w.t.Fatalf("push %s: %v", refspec, err)
	}
}

// treeFile is one entry of a tree written by writeCommit.
type treeFile struct {
	mode    filemode.FileMode
	content string        // blob content (file or symlink target)
	hash    plumbing.Hash // for submodules: the commit the gitlink names
}

func file(content string) treeFile     { return treeFile{mode: filemode.Regular, content: content} }
func symlink(target string) treeFile   { return treeFile{mode: filemode.Symlink, content: target} }
func gitlink(h plumbing.Hash) treeFile { return treeFile{mode: filemode.Submodule, hash: h} }

// writeCommit stores a tree made of files (slash path -> entry) and a
// commit of it straight into st, points branch main at it, and returns the
// commit hash. It can write what a work tree cannot: gitlinks, symlinks to
// anywhere.
func writeCommit(t *testing.T, st storer.Storer, files map[string]treeFile) string {
	t.Helper()
	root := buildTree(t, st, "", files)
	h := putCommit(t, st, &object.Commit{
		Author:    testSignature,
		Committer: testSignature,
		Message:   "tree for tests\n",
		TreeHash:  root,
	})
	if err := st.SetReference(plumbing.NewHashReference(plumbing.Main, h)); err != nil {
		t.Fatalf("update main: %v", err)
	}
	return h.String()
}

// putCommit stores c in st and returns its hash.
func putCommit(t *testing.T, st storer.EncodedObjectStorer, c *object.Commit) plumbing.Hash {
	t.Helper()
	obj := st.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		t.Fatalf("encode commit: %v", err)
	}
	h, err := st.SetEncodedObject(obj)
	if err != nil {
		t.Fatalf("store commit: %v", err)
	}
	return h
}

// buildTree writes the tree of directory dir ("" for the root) and returns
// its hash. Entries are sorted as Git sorts them: a directory as its name
// followed by "/".
func buildTree(t *testing.T, st storer.Storer, dir string, files map[string]treeFile) plumbing.Hash {
	t.Helper()
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	children := map[string]bool{}
	var entries []object.TreeEntry
	for name, f := range files {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		rest := strings.TrimPrefix(name, prefix)
		if child, _, isDir := strings.Cut(rest, "/"); isDir {
			if !children[child] {
				children[child] = true
				entries = append(entries, object.TreeEntry{Name: child, Mode: filemode.Dir,
					Hash: buildTree(t, st, prefix+child, files)})
			}
			continue
		}
		h := f.hash
		if f.mode != filemode.Submodule {
			h = writeBlob(t, st, f.content)
		}
		entries = append(entries, object.TreeEntry{Name: rest, Mode: f.mode, Hash: h})
	}
	sortKey := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return sortKey(entries[i]) < sortKey(entries[j]) })
	tree := &object.Tree{Entries: entries}
	obj := st.NewEncodedObject()
	if err := tree.Encode(obj); err != nil {
		t.Fatalf("encode tree %q: %v", dir, err)
	}
	h, err := st.SetEncodedObject(obj)
	if err != nil {
		t.Fatalf("store tree %q: %v", dir, err)
	}
	return h
}

func writeBlob(t *testing.T, st storer.Storer, content string) plumbing.Hash {
	t.Helper()
	obj := st.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		t.Fatalf("open blob: %v", err)
	}
	if _, err := io.WriteString(w, content); err != nil {
		t.Fatalf("write blob: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close blob: %v", err)
	}
	h, err := st.SetEncodedObject(obj)
	if err != nil {
		t.Fatalf("store blob: %v", err)
	}
	return h
}

// newRepo builds a Repository with a fresh clone directory, failing the
// test on any configuration error.
func newRepo(t *testing.T, cfg Config) *Repository {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(t.TempDir(), "clone")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = testTimeout
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// sync runs Head, Fetch and Snapshot and checks that Head saw want.
func syncTo(t *testing.T, r *Repository, want string) *Snapshot {
	t.Helper()
	ctx := context.Background()
	head, err := r.Head(ctx)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if head != want {
		t.Fatalf("Head = %s, want %s", head, want)
	}
	if err := r.Fetch(ctx, head); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	snap, err := r.Snapshot(ctx, head)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return snap
}

// readFile reads name from a snapshot and fails the test on error.
func readFile(t *testing.T, snap *Snapshot, name string) string {
	t.Helper()
	data, err := snap.FS.(interface{ ReadFile(string) ([]byte, error) }).ReadFile(name)
	if err != nil {
		t.Fatalf("ReadFile %s: %v", name, err)
	}
	return string(data)
}

// assertErr checks that err is not nil and reads exactly want.
func assertErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("error = nil, want %q", want)
	}
	if err.Error() != want {
		t.Fatalf("error = %q\nwant    %q", err.Error(), want)
	}
}

// newPGPKey makes a fresh OpenPGP signing key and its armored public key.
func newPGPKey(t *testing.T, name string) (*openpgp.Entity, string) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatalf("generate OpenPGP key: %v", err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatalf("armor public key: %v", err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatalf("serialize public key: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close armor: %v", err)
	}
	return e, buf.String()
}

// pgpSigner signs commits with an OpenPGP key, as git does with
// gpg.format openpgp.
type pgpSigner struct{ key *openpgp.Entity }

func (s pgpSigner) Sign(message io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&buf, s.key, message, nil); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sshSigner signs commits with an SSH key, as git does with gpg.format
// ssh (ssh-keygen -Y sign -n git), in namespace and with hash.
type sshSigner struct {
	key       ssh.Signer
	namespace string
	hash      sshsig.HashAlgorithm
}

// gitSSHSigner signs as git does: namespace git, SHA-512 (ssh-keygen's
// default).
func gitSSHSigner(key ssh.Signer) sshSigner {
	return sshSigner{key: key, namespace: "git", hash: sshsig.HashSHA512}
}

func (s sshSigner) Sign(message io.Reader) ([]byte, error) {
	sig, err := sshsig.Sign(message, s.key, s.hash, s.namespace)
	if err != nil {
		return nil, err
	}
	return sshsig.Armor(sig), nil
}

// newAllowedSigner makes a fresh SSH key and the allowed_signers line
// that lists it for principal, with options when not empty.
func newAllowedSigner(t *testing.T, principal, options string) (ssh.Signer, string) {
	t.Helper()
	signer := newSSHKey(t, "").signer
	line := principal + " "
	if options != "" {
		line += options + " "
	}
	return signer, line + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " " + principal + "'s key\n"
}

// readSigners parses an allowed_signers text, failing the test on error.
func readSigners(t *testing.T, text string) *AllowedSigners {
	t.Helper()
	return mustRead(t, ReadAllowedSigners, text)
}

// readKeyring parses armored OpenPGP keys, failing the test on error.
func readKeyring(t *testing.T, text string) *Keyring {
	t.Helper()
	return mustRead(t, ReadKeyring, text)
}

// mustRead reads keys from text with read, failing the test on error.
func mustRead[K any](t *testing.T, read func([]byte) (K, error), text string) K {
	t.Helper()
	keys, err := read([]byte(text))
	if err != nil {
		t.Fatalf("read keys: %v", err)
	}
	return keys
}

// silentServer accepts TCP connections and never answers, like a server
// that hangs. Connections are closed when the test ends.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatalf("close listener: %v", err)
	}
	return addr
}
