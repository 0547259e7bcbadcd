//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	git "github.com/go-git/go-git/v5"
	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// verifyTimeout bounds the wait for the daemon to see a new commit: while
// commits fail, it polls with a backoff that doubles from --interval (1 s
// here), so after the five or six failed attempts of a sequence it may
// wait 32 s or 64 s before looking again.
const verifyTimeout = 3 * time.Minute

// signedCommit commits files with subject in r, signed one way or not at
// all, pushes it and returns its hash; it fails t if it cannot.
type signedCommit func(t *testing.T, r *testgit.Repo, subject string, files map[string]string) string

// badCommit is a commit the daemon must refuse, and the words of the
// reason its sync status must give.
type badCommit struct {
	name   string
	commit signedCommit
	reason []string
}

// TestVerifyOpenPGPCommits runs the daemon with --verify-key and pushes a
// commit signed by the trusted key, then an unsigned one, one signed by
// another key and one whose signature was moved onto other content, then
// a trusted one again (see verifySequence).
func TestVerifyOpenPGPCommits(t *testing.T) {
	parallel(t)
	trusted, trustedArmored := newPGPEntity(t, "trusted")
	other, _ := newPGPEntity(t, "other")
	keyring := writeFile(t, "keys.asc", trustedArmored)
	verifySequence(t, []string{"--verify-key", keyring}, pgpCommit(trusted), []badCommit{
		{name: "unsigned", commit: unsignedCommit, reason: []string{"is not signed"}},
		{name: "other-key", commit: pgpCommit(other),
			reason: []string{"OpenPGP signature by key " + other.PrimaryKey.KeyIdString() + ", which is not in the verification keyring"}},
		{name: "tampered", commit: tamperedCommit,
			reason: []string{"OpenPGP signature by key " + trusted.PrimaryKey.KeyIdString() + " (trusted <trusted@e2e.plimsoll.dev>) does not match the commit"}},
	})
}

// TestVerifySSHCommits is TestVerifyOpenPGPCommits with --verify-ssh-key:
// the commits are signed by git itself (gpg.format ssh, which runs
// ssh-keygen -Y sign), and git verify-commit, given the same
// allowed_signers file, agrees with the daemon on every one of them.
func TestVerifySSHCommits(t *testing.T) {
	parallel(t)
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("git signs with SSH keys through ssh-keygen, which is not installed")
	}
	trusted, trustedPub := newSSHKeyFile(t, "trusted")
	other, otherPub := newSSHKeyFile(t, "other")
	signers := writeFile(t, "allowed_signers", `ops@e2e.plimsoll.dev namespaces="git" `+trustedPub+"\n")
	verifySequence(t, []string{"--verify-ssh-key", signers}, gitAgrees(signers, true, sshCommit(trusted)), []badCommit{
		{name: "unsigned", commit: gitAgrees(signers, false, unsignedCommit), reason: []string{"is not signed"}},
		{name: "other-key", commit: gitAgrees(signers, false, sshCommit(other)),
			reason: []string{"SSH signature by ssh-ed25519 key " + fingerprint(t, otherPub) + ", which is not an allowed signer"}},
		{name: "tampered", commit: gitAgrees(signers, false, tamperedCommit),
			reason: []string{"SSH signature by ops@e2e.plimsoll.dev (ssh-ed25519 key " + fingerprint(t, trustedPub) + ") does not match the commit"}},
	})
}

// TestVerifyEitherKind gives both flags: a commit signed by a trusted key
// of either kind is applied, and one by an untrusted key is not.
func TestVerifyEitherKind(t *testing.T) {
	parallel(t)
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("git signs with SSH keys through ssh-keygen, which is not installed")
	}
	pgpKey, armored := newPGPEntity(t, "trusted")
	sshKey, sshPub := newSSHKeyFile(t, "trusted")
	other, otherPub := newSSHKeyFile(t, "other")
	flags := []string{"--verify-key", writeFile(t, "keys.asc", armored),
		"--verify-ssh-key", writeFile(t, "allowed_signers", "ops@e2e.plimsoll.dev "+sshPub+"\n")}
	s := newSyncTarget(t)
	cms := watchConfigMaps(t, s.ns)

	first := pgpCommit(pgpKey)(t, s.repo, "OpenPGP-signed", appTree("v1", ""))
	kit.StartDaemon(t, s, append(flags, "--interval", "1s")...)
	s.waitForCommitWithin(t, first, verifyTimeout)
	second := sshCommit(sshKey)(t, s.repo, "SSH-signed", appTree("v2", ""))
	s.waitForCommitWithin(t, second, verifyTimeout)

	bad := sshCommit(other)(t, s.repo, "SSH-signed by another key", appTree("bad", "other-key"))
	s.waitForRefusal(t, bad, second, "SSH signature by ssh-ed25519 key "+fingerprint(t, otherPub)+", which is not an allowed signer")
	fix := appTree("v3", "")
	fix["other-key.yaml"] = "" // the work tree still holds it
	third := pgpCommit(pgpKey)(t, s.repo, "OpenPGP-signed again", fix)
	s.waitForCommitWithin(t, third, verifyTimeout)
	cms.assertNever(t, "other-key", "app=bad")
}

// verifySequence starts the daemon with flags on a repository whose first
// commit is signed by good, then pushes each bad commit in turn (each adds
// a ConfigMap named after it and changes ConfigMap app) and a last good
// one. For each bad commit, the sync status says Failed naming the commit
// and the reason, an Event says the same, the cluster keeps the first
// commit's objects and the daemon goes on polling; the last commit is
// applied. A watch on the namespace's ConfigMaps shows that nothing of a
// bad commit ever reached the cluster.
func verifySequence(t *testing.T, flags []string, good signedCommit, bad []badCommit) {
	s := newSyncTarget(t)
	cms := watchConfigMaps(t, s.ns)
	first := good(t, s.repo, "first", appTree("v1", ""))
	d := kit.StartDaemon(t, s, append(flags, "--interval", "1s")...)
	s.waitForCommitWithin(t, first, verifyTimeout)
	app := object{gvr: configMaps, namespace: s.ns, name: "app"}
	appVersion := resourceVersion(t, app)

	tree := map[string]string{}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			files := appTree("bad-"+b.name, b.name)
			head := b.commit(t, s.repo, "bad: "+b.name, files)
			for path, content := range files {
				tree[path] = content
			}
			msg := s.waitForRefusal(t, head, first, b.reason...)
			t.Logf("status message: %s", msg)
			if v := resourceVersion(t, app); v != appVersion {
				t.Errorf("ConfigMap app changed (resourceVersion %s, was %s)", v, appVersion)
			}
			if !d.Ready() {
				t.Errorf("the daemon no longer answers /readyz after refusing commit %s", head[:7])
			}
		})
	}

	// The last good commit removes what the bad ones added.
	fix := appTree("v2", "")
	for path := range tree {
		if _, ok := fix[path]; !ok {
			fix[path] = ""
		}
	}
	last := good(t, s.repo, "fixed", fix)
	s.waitForCommitWithin(t, last, verifyTimeout)
	if v := cms.value("app"); v != "v2" {
		t.Errorf("ConfigMap app holds %q after the last good commit, want v2", v)
	}
	for _, b := range bad {
		cms.assertNever(t, b.name, "app=bad-"+b.name)
	}
}

// appTree is a tree with ConfigMap app holding value, and, when extra is
// set, a ConfigMap of that name.
func appTree(value, extra string) map[string]string {
	files := map[string]string{
		"app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  value: " + value + "\n",
	}
	if extra != "" {
		files[extra+".yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + extra + "\ndata:\n  value: " + value + "\n"
	}
	return files
}

// waitForCommitWithin is waitForCommit with a timeout of its own.
func (s *syncTarget) waitForCommitWithin(t *testing.T, commit string, timeout time.Duration) {
	t.Helper()
	waitForWithin(t, "commit "+commit[:7]+" to be applied", timeout, func(ctx context.Context) (bool, error) {
		st := s.statusAnnotations(ctx)
		return st["plimsoll.dev/commit"] == commit && st["plimsoll.dev/sync-status"] == "Synced", nil
	})
}

// waitForRefusal waits until the sync status says commit head failed its
// signature check while the cluster still runs running; the message must
// name head and hold every word of reason, and a Warning Event must say
// the same. It returns the message.
func (s *syncTarget) waitForRefusal(t *testing.T, head, running string, reason ...string) string {
	t.Helper()
	var st map[string]string
	waitForWithin(t, "commit "+head[:7]+" to be refused", verifyTimeout, func(ctx context.Context) (bool, error) {
		st = s.statusAnnotations(ctx)
		return st["plimsoll.dev/fetched-commit"] == head && st["plimsoll.dev/sync-status"] == "Failed", nil
	})
	msg := st["plimsoll.dev/message"]
	if st["plimsoll.dev/commit"] != running {
		t.Errorf("status commit %s after refusing %s, want still %s", st["plimsoll.dev/commit"], head[:7], running[:7])
	}
	want := append([]string{fmt.Sprintf("commit %s not applied (signature check failed; still running %s): commit %s", head[:7], running[:7], head[:7])}, reason...)
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("status message %q does not contain %q", msg, w)
		}
	}
	waitFor(t, "a SyncFailed Warning Event saying "+msg, func(ctx context.Context) (bool, error) {
		for _, e := range s.events(t) {
			if e.Reason == "SyncFailed" && e.Type == corev1.EventTypeWarning && e.Message == msg {
				return true, nil
			}
		}
		return false, nil
	})
	return msg
}

// statusAnnotations reads the sync's status annotations; nil before the
// first sync wrote them.
func (s *syncTarget) statusAnnotations(ctx context.Context) map[string]string {
	cm, err := suite.client.CoreV1().ConfigMaps(s.statusNamespace()).Get(ctx, "plimsoll-sync-"+s.ns, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return cm.Annotations
}

// unsignedCommit commits with the git command, unsigned.
func unsignedCommit(_ *testing.T, r *testgit.Repo, subject string, files map[string]string) string {
	return r.Commit(subject, files)
}

// sshCommit signs with git itself: gpg.format ssh and the private key file
// key as user.signingkey, which makes git run ssh-keygen -Y sign -n git.
func sshCommit(key string) signedCommit {
	return func(_ *testing.T, r *testgit.Repo, subject string, files map[string]string) string {
		return r.CommitWith(subject, files, []string{"gpg.format=ssh", "user.signingkey=" + key}, "-S")
	}
}

// pgpCommit stages the files with git and commits them with go-git,
// signed by key through go-git's CommitOptions.SignKey (the OpenPGP
// signature go-git makes is the one git makes with gpg), then pushes with
// git.
func pgpCommit(key *openpgp.Entity) signedCommit {
	return func(t *testing.T, r *testgit.Repo, subject string, files map[string]string) string {
		t.Helper()
		r.Write(files)
		r.Git(r.Work(), "add", "--all")
		repo, err := git.PlainOpen(r.Work())
		if err != nil {
			t.Fatalf("open the work tree with go-git: %v", err)
		}
		wt, err := repo.Worktree()
		if err != nil {
			t.Fatalf("open the work tree with go-git: %v", err)
		}
		who := &gitobject.Signature{Name: testgit.Name, Email: testgit.Email, When: time.Now()}
		h, err := wt.Commit(subject, &git.CommitOptions{Author: who, Committer: who, SignKey: key, AllowEmptyCommits: true})
		if err != nil {
			t.Fatalf("commit signed with OpenPGP: %v", err)
		}
		r.Push()
		return h.String()
	}
}

// tamperedCommit forges a commit as someone who can push but does not
// hold a trusted key would: it takes the first commit of the branch,
// signed by a trusted key, and swaps its tree for one holding files,
// keeping the signature. The forged commit is pushed over the branch.
func tamperedCommit(t *testing.T, r *testgit.Repo, subject string, files map[string]string) string {
	t.Helper()
	r.Write(files)
	r.Git(r.Work(), "add", "--all")
	tree := strings.TrimSpace(r.Git(r.Work(), "write-tree"))
	root := strings.TrimSpace(r.Git(r.Work(), "rev-list", "--max-parents=0", "HEAD"))
	raw := r.Git(r.Work(), "cat-file", "commit", root)
	treeLine := regexp.MustCompile(`(?m)^tree [0-9a-f]{40}$`)
	if !treeLine.MatchString(raw) || !strings.Contains(raw, "\ngpgsig ") {
		t.Fatalf("the first commit is not a signed commit:\n%s", raw)
	}
	forged := filepath.Join(t.TempDir(), "forged")
	if err := os.WriteFile(forged, []byte(treeLine.ReplaceAllString(raw, "tree "+tree)), 0o600); err != nil {
		t.Fatal(err)
	}
	h := strings.TrimSpace(r.Git(r.Work(), "hash-object", "-t", "commit", "-w", forged))
	r.Git(r.Work(), "reset", "--quiet", "--soft", h)
	r.Push()
	return h
}

// gitAgrees wraps commit with a check that git verify-commit, given the
// allowed_signers file signers, says the commit is validly signed exactly
// when valid: git and the daemon read the file the same way.
func gitAgrees(signers string, valid bool, commit signedCommit) signedCommit {
	return func(t *testing.T, r *testgit.Repo, subject string, files map[string]string) string {
		t.Helper()
		h := commit(t, r, subject, files)
		out, err := testgit.Command(r.Work(), "-c", "gpg.ssh.allowedSignersFile="+signers, "verify-commit", h).CombinedOutput()
		if (err == nil) != valid {
			t.Fatalf("git verify-commit %s: %v (want valid: %v)\n%s", h[:7], err, valid, out)
		}
		return h
	}
}

// newPGPEntity makes an OpenPGP signing key for name@e2e.plimsoll.dev and
// its armored public key.
func newPGPEntity(t *testing.T, name string) (*openpgp.Entity, string) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@e2e.plimsoll.dev", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatalf("generate OpenPGP key: %v", err)
	}
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return e, b.String()
}

// newSSHKeyFile writes a fresh ed25519 private key, in OpenSSH's format
// and readable by its owner only as ssh-keygen demands, and returns its
// path and its public key as "ssh-ed25519 AAAA...".
func newSSHKeyFile(t *testing.T, name string) (path, public string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, name)
	if err != nil {
		t.Fatal(err)
	}
	path = writeFile(t, "id_"+name, string(pem.EncodeToMemory(block)))
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return path, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
}

// fingerprint is the SHA256 fingerprint of an "ssh-ed25519 AAAA..." key.
func fingerprint(t *testing.T, public string) string {
	t.Helper()
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(public))
	if err != nil {
		t.Fatal(err)
	}
	return ssh.FingerprintSHA256(key)
}

// writeFile writes content to a new file of the test, readable by its
// owner only, and returns the path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// configMapWatch records every state of every ConfigMap of a namespace,
// from the moment it starts until the test ends.
type configMapWatch struct {
	mu sync.Mutex
	// seen holds "name" for every ConfigMap that existed and
	// "name=value" for every value of its "value" key.
	seen map[string]bool
	// last is the latest value of each ConfigMap's "value" key.
	last map[string]string
}

// watchConfigMaps starts recording the ConfigMaps of ns.
func watchConfigMaps(t *testing.T, ns string) *configMapWatch {
	t.Helper()
	w := &configMapWatch{seen: map[string]bool{}, last: map[string]string{}}
	record := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.seen[cm.Name] = true
		w.seen[cm.Name+"="+cm.Data["value"]] = true
		w.last[cm.Name] = cm.Data["value"]
	}
	informer := coreinformers.NewConfigMapInformer(suite.client, ns, 0, cache.Indexers{})
	kit.RunInformer(t.Context(), t, informer, kit.OnAddOrUpdate(record), "ConfigMaps of "+ns)
	return w
}

// value is the latest value of ConfigMap name.
func (w *configMapWatch) value(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last[name]
}

// assertNever fails the test if any of states (a ConfigMap's name, or
// "name=value") was ever seen.
func (w *configMapWatch) assertNever(t *testing.T, states ...string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range states {
		if w.seen[s] {
			t.Errorf("the cluster held %s, from a commit that was not applied", s)
		}
	}
}
