package source

import (
	"context"
	"errors"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func TestSignatureVerification(t *testing.T) {
	trusted, trustedKeyring := newPGPKey(t, "trusted")
	other, otherKeyring := newPGPKey(t, "other")

	for _, tc := range []struct {
		name    string
		keyring string
		signer  *openpgp.Entity
		want    string // error suffix after "verify commit <hash>: "; "" for success
	}{
		{name: "signed by the configured key", keyring: trustedKeyring, signer: trusted},
		{name: "signed by one key of several", keyring: otherKeyring + "\n" + trustedKeyring, signer: trusted},
		{name: "unsigned", keyring: trustedKeyring, want: "commit signature not verified: the commit is not signed"},
		{name: "signed by another key", keyring: trustedKeyring, signer: other, want: "commit signature not verified: openpgp: signature made by unknown entity"},
		{name: "no keyring, unsigned accepted", keyring: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			remoteDir, _ := newBareRemote(t)
			work := newWorkClone(t, remoteDir)
			head := work.commit("signed or not", map[string]string{"a.yaml": "a: 1\n"}, tc.signer)
			work.push("refs/heads/main:refs/heads/main")
			r := newRepo(t, Config{URL: "file://" + remoteDir, VerifyKeyring: tc.keyring})
			ctx := context.Background()
			if err := r.Fetch(ctx, head); err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			snap, err := r.Snapshot(ctx, head)
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
			assertErr(t, err, "verify commit "+head+": "+tc.want)
		})
	}
}

// A signature copied onto a commit with other content does not verify.
func TestTamperedCommitIsUnverified(t *testing.T) {
	trusted, keyring := newPGPKey(t, "trusted")
	remoteDir, remote := newBareRemote(t)
	work := newWorkClone(t, remoteDir)
	signed := work.commit("signed", map[string]string{"a.yaml": "a: 1\n"}, trusted)
	work.push("refs/heads/main:refs/heads/main")

	orig, err := object.GetCommit(remote.Storer, plumbing.NewHash(signed))
	if err != nil {
		t.Fatal(err)
	}
	forged := *orig
	forged.Message = "something else\n"
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

	r := newRepo(t, Config{URL: "file://" + remoteDir, VerifyKeyring: keyring})
	ctx := context.Background()
	if err := r.Fetch(ctx, h.String()); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	_, err = r.Snapshot(ctx, h.String())
	if !errors.Is(err, ErrUnverified) {
		t.Fatalf("Snapshot error = %v, want ErrUnverified", err)
	}
	assertErr(t, err, "verify commit "+h.String()+": commit signature not verified: openpgp: invalid signature: EdDSA verification failure")
}
