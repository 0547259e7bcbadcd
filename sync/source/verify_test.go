package source

import (
	"context"
	"errors"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/crypto/ssh"
)

// verifyKeys are the keys of the verification tests: a trusted and an
// untrusted key of each kind, and the configurations they make.
type verifyKeys struct {
	pgpTrusted, pgpOther *openpgp.Entity
	// pgpTrustedArmored and pgpOtherArmored are their public keys.
	pgpTrustedArmored, pgpOtherArmored string
	sshTrusted, sshOther               ssh.Signer
	keyring                            *Keyring
	signers                            *AllowedSigners
}

func newVerifyKeys(t *testing.T) verifyKeys {
	t.Helper()
	var k verifyKeys
	var line string
	k.pgpTrusted, k.pgpTrustedArmored = newPGPKey(t, "trusted")
	k.pgpOther, k.pgpOtherArmored = newPGPKey(t, "other")
	k.sshTrusted, line = newAllowedSigner(t, "trusted@example.com", "")
	k.sshOther, _ = newAllowedSigner(t, "other@example.com", "")
	k.keyring, k.signers = readKeyring(t, k.pgpTrustedArmored), readSigners(t, line)
	return k
}

// pgpID is the key ID of e as the errors print it.
func pgpID(e *openpgp.Entity) string { return e.PrimaryKey.KeyIdString() }

// TestSignatureVerification commits once per case, signed or not, and
// checks what Snapshot makes of it under each configuration: the tree of
// a commit validly signed by a configured key, else an error wrapping
// ErrUnverified that names the commit and says why.
func TestSignatureVerification(t *testing.T) {
	k := newVerifyKeys(t)
	sshFP := func(s ssh.Signer) string { return ssh.FingerprintSHA256(s.PublicKey()) }

	for _, tc := range []struct {
		name    string
		keyring *Keyring
		signers *AllowedSigners
		signer  git.Signer
		want    string // error after "commit <short>"; "" for success
	}{
		{name: "OpenPGP: signed by the configured key", keyring: k.keyring, signer: pgpSigner{k.pgpTrusted}},
		{name: "OpenPGP: signed by one key of several", keyring: readKeyring(t, k.pgpOtherArmored+"\n"+k.pgpTrustedArmored), signer: pgpSigner{k.pgpTrusted}},
		{name: "OpenPGP: unsigned", keyring: k.keyring, want: " is not signed"},
		{name: "OpenPGP: signed by another key", keyring: k.keyring, signer: pgpSigner{k.pgpOther},
			want: ": OpenPGP signature by key " + pgpID(k.pgpOther) + ", which is not in the verification keyring"},
		{name: "OpenPGP only: SSH-signed", keyring: k.keyring, signer: gitSSHSigner(k.sshTrusted),
			want: " has an SSH signature, but only OpenPGP keys are trusted"},

		{name: "SSH: signed by the allowed key", signers: k.signers, signer: gitSSHSigner(k.sshTrusted)},
		{name: "SSH: unsigned", signers: k.signers, want: " is not signed"},
		{name: "SSH: signed by another key", signers: k.signers, signer: gitSSHSigner(k.sshOther),
			want: ": SSH signature by ssh-ed25519 key " + sshFP(k.sshOther) + ", which is not an allowed signer"},
		{name: "SSH: signed in another namespace", signers: k.signers, signer: sshSigner{key: k.sshTrusted, namespace: "file", hash: "sha512"},
			want: ": SSH signature by ssh-ed25519 key " + sshFP(k.sshTrusted) + ` is for namespace "file", not "git"`},
		{name: "SSH only: OpenPGP-signed", signers: k.signers, signer: pgpSigner{k.pgpTrusted},
			want: " has an OpenPGP signature, but only SSH keys are trusted"},

		{name: "both: OpenPGP-signed", keyring: k.keyring, signers: k.signers, signer: pgpSigner{k.pgpTrusted}},
		{name: "both: SSH-signed", keyring: k.keyring, signers: k.signers, signer: gitSSHSigner(k.sshTrusted)},
		{name: "both: unsigned", keyring: k.keyring, signers: k.signers, want: " is not signed"},
		{name: "both: SSH-signed by another key", keyring: k.keyring, signers: k.signers, signer: gitSSHSigner(k.sshOther),
			want: ": SSH signature by ssh-ed25519 key " + sshFP(k.sshOther) + ", which is not an allowed signer"},

		{name: "no keys: unsigned accepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			remoteDir, _, head := newPushedRemote(t, "signed or not", map[string]string{"a.yaml": "a: 1\n"}, tc.signer)
			r := newRepo(t, Config{URL: "file://" + remoteDir, Keyring: tc.keyring, AllowedSigners: tc.signers})
			snap, err := fetchSnapshot(r, head)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Snapshot: %v", err)
				}
				if got := readFile(t, snap, "a.yaml"); got != "a: 1\n" {
					t.Fatalf("a.yaml = %q", got)
				}
				return
			}
			if snap != nil {
				t.Fatalf("Snapshot returned a tree for an unverified commit")
			}
			if !errors.Is(err, ErrUnverified) {
				t.Fatalf("Snapshot error = %v, want ErrUnverified", err)
			}
			assertErr(t, err, "commit "+head[:7]+tc.want)
		})
	}
}

// A signature copied onto a commit with other content does not verify:
// here the tree is swapped for one holding another file, as an attacker
// with write access to the repository but not to the key would do.
func TestTamperedCommitIsUnverified(t *testing.T) {
	k := newVerifyKeys(t)
	for _, tc := range []struct {
		name   string
		signer git.Signer
		want   string
	}{
		{name: "OpenPGP", signer: pgpSigner{k.pgpTrusted},
			want: ": OpenPGP signature by key " + pgpID(k.pgpTrusted) + " (trusted <trusted@example.com>) does not match the commit (it was changed after signing): openpgp: invalid signature: EdDSA verification failure"},
		{name: "SSH", signer: gitSSHSigner(k.sshTrusted),
			want: ": SSH signature by trusted@example.com (ssh-ed25519 key " + ssh.FingerprintSHA256(k.sshTrusted.PublicKey()) + ") does not match the commit (it was changed after signing): ssh: signature did not verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			remoteDir, remote := newBareRemote(t)
			work := newWorkClone(t, remoteDir)
			signed := work.commit("signed", map[string]string{"a.yaml": "a: 1\n"}, tc.signer)
			work.push("refs/heads/main:refs/heads/main")

			orig, err := object.GetCommit(remote.Storer, plumbing.NewHash(signed))
			if err != nil {
				t.Fatal(err)
			}
			forged := *orig
			forged.TreeHash = buildTree(t, remote.Storer, "", map[string]treeFile{"a.yaml": file("a: 1\n"), "evil.yaml": file("evil: true\n")})
			obj := remote.Storer.NewEncodedObject()
			if err := forged.Encode(obj); err != nil {
				t.Fatal(err)
			}
			h, err := remote.Storer.SetEncodedObject(obj)
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Storer.SetReference(plumbing.NewHashReference(plumbing.Main, h)); err != nil {
				t.Fatal(err)
			}

			r := newRepo(t, Config{URL: "file://" + remoteDir, Keyring: k.keyring, AllowedSigners: k.signers})
			_, err = fetchSnapshot(r, h.String())
			if !errors.Is(err, ErrUnverified) {
				t.Fatalf("Snapshot error = %v, want ErrUnverified", err)
			}
			assertErr(t, err, "commit "+h.String()[:7]+tc.want)
		})
	}
}

// fetchSnapshot fetches commit head and returns its snapshot.
func fetchSnapshot(r *Repository, head string) (*Snapshot, error) {
	ctx := context.Background()
	if err := r.Fetch(ctx, head); err != nil {
		return nil, err
	}
	return r.Snapshot(ctx, head)
}
