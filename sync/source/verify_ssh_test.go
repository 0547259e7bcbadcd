package source

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// TestVerifySSHSignature checks SSHSIG signatures of a commit payload
// against allowed_signers files: the signature, its namespace and hash,
// its armor, and the options of the line that lists the key.
func TestVerifySSHSignature(t *testing.T) {
	payload := []byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbc4904\nauthor A <a@example.com> 1772366400 +0000\ncommitter A <a@example.com> 1772366400 +0000\n\nship it\n")
	signedAt := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	alice, aliceLine := newAllowedSigner(t, "alice@example.com", "")
	mallory, _ := newAllowedSigner(t, "mallory@example.com", "")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := ssh.NewSignerFromKey(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	bobLine := "bob@example.com " + string(ssh.MarshalAuthorizedKey(bob.PublicKey()))
	// listed is alice's key with other options: the same key line, with
	// the options field inserted after the principals.
	listed := func(options string) string {
		return strings.Replace(aliceLine, "alice@example.com ", "alice@example.com "+options+" ", 1)
	}
	aliceKey := "ssh-ed25519 key " + ssh.FingerprintSHA256(alice.PublicKey())
	aliceWho := "alice@example.com (" + aliceKey + ")"

	sign := func(signer ssh.Signer, namespace string, hash sshsig.HashAlgorithm, message []byte) []byte {
		t.Helper()
		sig, err := sshsig.Sign(bytes.NewReader(message), signer, hash, namespace)
		if err != nil {
			t.Fatalf("sign: %v", err)
		}
		return sshsig.Armor(sig)
	}
	good := sign(alice, "git", sshsig.HashSHA512, payload)
	// withHash is good with its hash algorithm field rewritten; the
	// signature itself is left as it is.
	withHash := func(hash string) []byte {
		sig, err := sshsig.Unarmor(good)
		if err != nil {
			t.Fatal(err)
		}
		sig.HashAlgorithm = sshsig.HashAlgorithm(hash)
		return sshsig.Armor(sig)
	}

	for _, tc := range []struct {
		name      string
		signers   string
		signature []byte
		payload   []byte
		want      string // "" for a valid signature
	}{
		{name: "good signature, SHA-512", signers: aliceLine, signature: good},
		{name: "good signature, SHA-256", signers: aliceLine, signature: sign(alice, "git", sshsig.HashSHA256, payload)},
		{name: "good RSA signature", signers: bobLine, signature: sign(bob, "git", sshsig.HashSHA512, payload)},
		{name: "one key of several", signers: bobLine + aliceLine, signature: good},
		{name: "wrong namespace", signers: aliceLine, signature: sign(alice, "file", sshsig.HashSHA512, payload),
			want: "SSH signature by " + aliceKey + ` is for namespace "file", not "git"`},
		{name: "wrong key", signers: aliceLine, signature: sign(mallory, "git", sshsig.HashSHA512, payload),
			want: "SSH signature by ssh-ed25519 key " + ssh.FingerprintSHA256(mallory.PublicKey()) + ", which is not an allowed signer"},
		{name: "tampered payload", signers: aliceLine, signature: good, payload: bytes.Replace(payload, []byte("ship it"), []byte("ship me"), 1),
			want: "SSH signature by " + aliceWho + " does not match the commit (it was changed after signing): ssh: signature did not verify"},
		{name: "hash field changed", signers: aliceLine, signature: withHash("sha256"),
			want: "SSH signature by " + aliceWho + " does not match the commit (it was changed after signing): ssh: signature did not verify"},
		{name: "unsupported hash", signers: aliceLine, signature: withHash("sha1"),
			want: `unreadable SSH signature: unsupported hash algorithm "sha1": must be "sha256" or "sha512"`},
		{name: "malformed armor", signers: aliceLine, signature: []byte("-----BEGIN SSH SIGNATURE-----\nnot base64 at all!\n-----END SSH SIGNATURE-----\n"),
			want: "unreadable SSH signature: invalid PEM block"},
		{name: "armor of something else", signers: aliceLine, signature: []byte("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"),
			want: "unreadable SSH signature: ssh: short read"},

		{name: "namespaces option allows git", signers: listed(`namespaces="file,git"`), signature: good},
		{name: "namespaces option by pattern", signers: listed(`namespaces="g?t"`), signature: good},
		{name: "namespaces option leaves git out", signers: listed(`namespaces="file"`), signature: good,
			want: "SSH signature by " + aliceWho + ` is not accepted: allowed signers line 1 lets the key sign only in namespaces "file", not in "git"`},
		{name: "namespaces option negates git", signers: listed(`namespaces="*,!git"`), signature: good,
			want: "SSH signature by " + aliceWho + ` is not accepted: allowed signers line 1 lets the key sign only in namespaces "*,!git", not in "git"`},
		{name: "another line of the key allows it", signers: listed(`namespaces="file"`) + aliceLine, signature: good},
		{name: "within the validity window", signers: listed(`valid-after="20260101Z",valid-before="20270101Z"`), signature: good},
		{name: "key not yet valid at the commit time", signers: listed(`valid-after="20260302Z"`), signature: good,
			want: "SSH signature by " + aliceWho + " is not accepted: allowed signers line 1 makes the key valid only after 2026-03-02T00:00:00Z, and the commit was made at 2026-03-01T12:00:00Z"},
		{name: "key expired at the commit time", signers: listed(`valid-before="202603011159Z"`), signature: good,
			want: "SSH signature by " + aliceWho + " is not accepted: allowed signers line 1 makes the key valid only before 2026-03-01T11:59:00Z, and the commit was made at 2026-03-01T12:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			message := payload
			if tc.payload != nil {
				message = tc.payload
			}
			err := readSigners(t, tc.signers).verify(message, tc.signature, signedAt)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("verify: %v", err)
				}
				return
			}
			assertErr(t, err, tc.want)
		})
	}
}

// TestSplitSigned separates a commit object into what git signs and the
// signature, as git does.
func TestSplitSigned(t *testing.T) {
	const head = "tree 4b825dc642cb6eb9a060e54bf8d69288fbc4904\nparent 8d3a1f0e5b7c9d2e4f6a8b0c1d3e5f7a9b1c3d5e\nauthor A <a@example.com> 1772366400 +0000\ncommitter A <a@example.com> 1772366400 +0000\n"
	const sig = "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n\n-----END SSH SIGNATURE-----\n"
	// git indents every continuation line of a header by one space, the
	// empty line of an armor included.
	indented := "gpgsig " + strings.ReplaceAll(strings.TrimSuffix(sig, "\n"), "\n", "\n ") + "\n"
	for _, tc := range []struct {
		name, raw, payload, signature string
	}{
		{name: "signed", raw: head + indented + "\nship it\n", payload: head + "\nship it\n", signature: sig},
		{name: "headers after the signature stay", raw: head + indented + "encoding ISO-8859-1\n\nship it\n",
			payload: head + "encoding ISO-8859-1\n\nship it\n", signature: sig},
		{name: "unsigned", raw: head + "\nship it\n", payload: head + "\nship it\n"},
		{name: "a gpgsig line in the message is message", raw: head + "\nship it\ngpgsig not a header\n",
			payload: head + "\nship it\ngpgsig not a header\n"},
		{name: "no message", raw: head + indented, payload: head, signature: sig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload, signature := splitSigned([]byte(tc.raw))
			if string(payload) != tc.payload || string(signature) != tc.signature {
				t.Fatalf("splitSigned:\npayload   %q\nsignature %q\nwant\npayload   %q\nsignature %q", payload, signature, tc.payload, tc.signature)
			}
		})
	}
}
