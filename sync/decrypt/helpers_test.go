package decrypt

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/pgp"
)

// sopsVersion is the version of SOPS the test files claim.
const sopsVersion = "3.13.3"

// newAge returns a new age identity.
func newAge(t testing.TB) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// newOpenPGP returns a new OpenPGP key without a passphrase, and its
// armored private key.
func newOpenPGP(t testing.TB) (*openpgp.Entity, []byte) {
	t.Helper()
	e, err := openpgp.NewEntity("sync", "", "sync@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return e, buf.Bytes()
}

// encOptions say how sealFile encrypts.
type encOptions struct {
	// regex is the file's encrypted_regex; "" encrypts every value.
	regex string
	age   []*age.X25519Identity
	pgp   []*openpgp.Entity
}

// sealFile encrypts plain, the content of the file name, as the sops
// command does, for the keys of opts.
func sealFile(t testing.TB, name string, plain []byte, opts encOptions) []byte {
	t.Helper()
	f := formatOf(name)
	branches, err := f.store.LoadPlainFile(plain)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		t.Fatal(err)
	}
	var group sops.KeyGroup
	for _, id := range opts.age {
		k, err := sopsage.MasterKeyFromRecipient(id.Recipient().String())
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Encrypt(dataKey); err != nil {
			t.Fatal(err)
		}
		group = append(group, k)
	}
	for _, e := range opts.pgp {
		group = append(group, pgpMasterKey(t, e, dataKey))
	}
	meta := sops.Metadata{KeyGroups: []sops.KeyGroup{group}, Version: sopsVersion, LastModified: time.Now().UTC().Truncate(time.Second)}
	if opts.regex != "" {
		meta.EncryptedRegex = opts.regex
	} else {
		meta.UnencryptedSuffix = sops.DefaultUnencryptedSuffix
	}
	tree := sops.Tree{Branches: branches, Metadata: meta}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, meta.LastModified.Format(time.RFC3339)); err != nil {
		t.Fatal(err)
	}
	out, err := f.store.EmitEncryptedFile(tree)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pgpMasterKey is the master key of e holding dataKey, encrypted in
// process as gpg would.
func pgpMasterKey(t testing.TB, e *openpgp.Entity, dataKey []byte) keys.MasterKey {
	t.Helper()
	var buf bytes.Buffer
	aw, err := armor.Encode(&buf, "PGP MESSAGE", nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := openpgp.Encrypt(aw, []*openpgp.Entity{e}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(dataKey); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	return &pgp.MasterKey{Fingerprint: fingerprint(e), EncryptedKey: buf.String(), CreationDate: time.Now().UTC()}
}

// ageSecret is a decryption Secret's data holding ids under one key.
func ageSecret(ids ...*age.X25519Identity) map[string][]byte {
	var lines []string
	for _, id := range ids {
		lines = append(lines, "# public key: "+id.Recipient().String(), id.String())
	}
	return map[string][]byte{"identity.agekey": []byte(strings.Join(lines, "\n") + "\n")}
}

// mustKeys parses data as a decryption Secret's.
func mustKeys(t testing.TB, data map[string][]byte) *Keys {
	t.Helper()
	k, err := ParseKeys("Secret test/keys", data)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// secretYAML is a Secret manifest whose stringData holds password.
func secretYAML(name, password string) []byte {
	return fmt.Appendf(nil, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\nstringData:\n  password: %s\n", name, password)
}

// Short names of the key types, for test tables.
type (
	age25519  = age.X25519Identity
	pgpEntity = openpgp.Entity
)
