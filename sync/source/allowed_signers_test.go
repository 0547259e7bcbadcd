package source

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// TestReadAllowedSigners reads the lines of an allowed_signers file as
// ssh-keygen does, and refuses, naming the line, what it cannot honour.
func TestReadAllowedSigners(t *testing.T) {
	alice, aliceLine := newAllowedSigner(t, "alice@example.com", "")
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(alice.PublicKey())))
	keyType, blob, _ := strings.Cut(key, " ")

	for _, tc := range []struct {
		name string
		text string
		// want is the entry read from the one key line, or the error.
		want    allowedSigner
		wantErr string
	}{
		{name: "principal and key", text: "alice@example.com " + key + "\n",
			want: allowedSigner{line: 1, principals: "alice@example.com"}},
		{name: "comment after the key, comments and blank lines around", text: "# signers\n\n" + aliceLine + "\n# end\n",
			want: allowedSigner{line: 3, principals: "alice@example.com"}},
		{name: "several principals, tabs, CRLF", text: "alice@example.com,ada@example.com\t" + key + "\r\n",
			want: allowedSigner{line: 1, principals: "alice@example.com,ada@example.com"}},
		{name: "quoted principals", text: `"alice@example.com,*@ops.example.com" ` + key,
			want: allowedSigner{line: 1, principals: "alice@example.com,*@ops.example.com"}},
		{name: "namespaces", text: `alice@example.com namespaces="git,file" ` + key,
			want: allowedSigner{line: 1, principals: "alice@example.com", namespaces: "git,file"}},
		{name: "options in any case and order", text: `alice@example.com VALID-BEFORE="20270101Z",Namespaces="git",valid-after="20260101123000UTC" ` + key,
			want: allowedSigner{line: 1, principals: "alice@example.com", namespaces: "git",
				validAfter: time.Date(2026, 1, 1, 12, 30, 0, 0, time.UTC), validBefore: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}},

		{name: "empty file", text: "", wantErr: "no allowed signer in it"},
		{name: "comments only", text: "# nobody yet\n\n", wantErr: "no allowed signer in it"},
		{name: "a key without principals", text: "\n" + aliceLine[len("alice@example.com "):], wantErr: "line 2: the line starts with a key: put the signer's principals (such as an email address) before it"},
		{name: "principals only", text: "alice@example.com\n", wantErr: "line 1: want principals, options (optional), key type and key"},
		{name: "no key type", text: "alice@example.com " + blob, wantErr: "line 1: want principals, options (optional), key type and key"},
		{name: "not a key type", text: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n", wantErr: `line 1: "PGP" is not an SSH key type`},
		{name: "not base64", text: "alice@example.com ssh-ed25519 AAAA!!!!", wantErr: "line 1: ssh-ed25519 key: not base64: illegal base64 data at input byte 4"},
		{name: "not a key", text: "alice@example.com ssh-ed25519 AAAAC3Nz", wantErr: "line 1: ssh-ed25519 key: ssh: short read"},
		{name: "key type that does not match", text: "alice@example.com ssh-rsa " + blob, wantErr: "line 1: key type ssh-rsa does not match the key, which is ssh-ed25519"},
		{name: "unknown option", text: `alice@example.com namespaces="git",no-touch-required ` + key, wantErr: `line 1: unknown option "no-touch-required"`},
		{name: "certificate authority", text: "alice@example.com cert-authority " + key,
			wantErr: "line 1: option cert-authority: signatures made with SSH certificates are not supported; list the signers' own keys"},
		{name: "option given twice", text: `alice@example.com namespaces="git",namespaces="file" ` + key, wantErr: "line 1: option namespaces is given twice"},
		{name: "unquoted value", text: "alice@example.com namespaces=git " + key, wantErr: "line 1: option namespaces: the value must be in double quotes"},
		{name: "empty namespaces", text: `alice@example.com namespaces="" ` + key, wantErr: "line 1: option namespaces is empty"},
		{name: "empty option", text: `alice@example.com namespaces="git",, ` + key, wantErr: "line 1: empty option"},
		{name: "bad time", text: `alice@example.com valid-after="2026-01-01" ` + key, wantErr: `line 1: option valid-after: "2026-01-01" is not YYYYMMDD[HHMM[SS]][Z]`},
		{name: "impossible date", text: `alice@example.com valid-after="20261301Z" ` + key,
			wantErr: `line 1: option valid-after: "20261301Z" is not YYYYMMDD[HHMM[SS]][Z]: parsing time "20261301": month out of range`},
		{name: "window closed before it opens", text: `alice@example.com valid-after="20270101Z",valid-before="20260101Z" ` + key,
			wantErr: "line 1: valid-before is not after valid-after"},
		{name: "unclosed quote", text: `alice@example.com namespaces="git ` + key, wantErr: "line 1: missing closing quote"},
		{name: "unclosed quoted principals", text: `"alice@example.com ` + key, wantErr: "line 1: principals: missing closing quote"},
		{name: "bad line after a good one", text: aliceLine + "bob@example.com ssh-ed25519\n", wantErr: "line 2: want principals, options (optional), key type and key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ReadAllowedSigners([]byte(tc.text))
			if tc.wantErr != "" {
				if a != nil {
					t.Fatalf("ReadAllowedSigners returned signers for a bad file")
				}
				assertErr(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("ReadAllowedSigners: %v", err)
			}
			if len(a.entries) != 1 {
				t.Fatalf("read %d entries, want 1", len(a.entries))
			}
			got := a.entries[0]
			if got.key == nil || got.key.Type() != keyType || string(got.key.Marshal()) != string(alice.PublicKey().Marshal()) {
				t.Fatalf("key %v, want alice's", got.key)
			}
			got.key = nil
			if got != tc.want {
				t.Fatalf("entry %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestMatchPatternList matches namespaces against the pattern-lists of
// namespaces="..." as OpenSSH does.
func TestMatchPatternList(t *testing.T) {
	for _, tc := range []struct {
		s, list string
		want    bool
	}{
		{"git", "git", true},
		{"git", "file,git", true},
		{"git", "file", false},
		{"git", "*", true},
		{"git", "g*", true},
		{"git", "g?t", true},
		{"git", "g?", false},
		{"git", "*t*", true},
		{"git", "*,!git", false},
		{"git", "!file", false}, // a negation alone matches nothing
		{"git", "!file,*", true},
		{"git", "", false},
	} {
		if got := matchPatternList(tc.s, tc.list); got != tc.want {
			t.Errorf("matchPatternList(%q, %q) = %v, want %v", tc.s, tc.list, got, tc.want)
		}
	}
}

// TestReadKeyring reads armored OpenPGP public keys and refuses a text
// without any.
func TestReadKeyring(t *testing.T) {
	_, one := newPGPKey(t, "one")
	_, two := newPGPKey(t, "two")
	for _, tc := range []struct {
		name, text string
		keys       int
		want       string
	}{
		{name: "one key", text: one, keys: 1},
		{name: "two blocks, as cat *.asc gives", text: one + two, keys: 2},
		{name: "empty", text: "", want: "no armored OpenPGP public key in it"},
		{name: "not armored", text: "mQINBGX...", want: "no armored OpenPGP public key in it"},
		{name: "a broken block after a good one", text: one + "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nbroken\n-----END PGP PUBLIC KEY BLOCK-----\n",
			want: "armored block 2: unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ReadKeyring([]byte(tc.text))
			if tc.want != "" {
				assertErr(t, err, tc.want)
				return
			}
			if err != nil {
				t.Fatalf("ReadKeyring: %v", err)
			}
			if len(k.keys) != tc.keys {
				t.Fatalf("read %d keys, want %d", len(k.keys), tc.keys)
			}
		})
	}
}
