// Package decrypttest makes SOPS-encrypted files and the keys that open
// them, in process, as the sops command would, for the tests of package
// decrypt and of the daemon.
package decrypttest

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/pgp"
	"github.com/getsops/sops/v3/stores/dotenv"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
)

// Version is the SOPS version the files claim.
const Version = "3.13.3"

// Options say how Seal encrypts.
type Options struct {
	// EncryptedRegex is the file's encrypted_regex; "" encrypts every
	// value.
	EncryptedRegex string
	// Age and OpenPGP are the keys the file is encrypted for.
	Age     []*age.X25519Identity
	OpenPGP []*openpgp.Entity
}

// NewAge returns a new age identity.
func NewAge(t testing.TB) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// NewOpenPGP returns a new OpenPGP key without a passphrase, and its
// armored private key.
func NewOpenPGP(t testing.TB) (*openpgp.Entity, []byte) {
	t.Helper()
	e, err := openpgp.NewEntity("sync", "", "sync@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err == nil {
		err = e.SerializePrivate(w, nil)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return e, buf.Bytes()
}

// AgeSecret is a decryption Secret's data holding ids under one key, as
// age-keygen writes them.
func AgeSecret(ids ...*age.X25519Identity) map[string][]byte {
	var lines []string
	for _, id := range ids {
		lines = append(lines, "# public key: "+id.Recipient().String(), id.String())
	}
	return map[string][]byte{"identity.agekey": []byte(strings.Join(lines, "\n") + "\n")}
}

// store is SOPS's store of a file, by its name: YAML, JSON, dotenv, or
// the binary envelope.
func store(name string) sops.Store {
	switch path.Ext(name) {
	case ".yaml", ".yml":
		return sopsyaml.NewStore(&config.YAMLStoreConfig{})
	case ".json":
		return sopsjson.NewStore(&config.JSONStoreConfig{})
	case ".env":
		return dotenv.NewStore(&config.DotenvStoreConfig{})
	}
	return sopsjson.NewBinaryStore(&config.JSONBinaryStoreConfig{})
}

// Seal encrypts plain, the content of the file name, as `sops --encrypt`
// does, for the keys of opts.
func Seal(t testing.TB, name string, plain []byte, opts Options) []byte {
	t.Helper()
	s := store(name)
	branches, err := s.LoadPlainFile(plain)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		t.Fatal(err)
	}
	var group sops.KeyGroup
	for _, id := range opts.Age {
		k, err := sopsage.MasterKeyFromRecipient(id.Recipient().String())
		if err == nil {
			err = k.Encrypt(dataKey)
		}
		if err != nil {
			t.Fatal(err)
		}
		group = append(group, k)
	}
	for _, e := range opts.OpenPGP {
		group = append(group, pgpMasterKey(t, e, dataKey))
	}
	meta := sops.Metadata{KeyGroups: []sops.KeyGroup{group}, Version: Version, LastModified: time.Now().UTC().Truncate(time.Second)}
	if opts.EncryptedRegex != "" {
		meta.EncryptedRegex = opts.EncryptedRegex
	} else {
		meta.UnencryptedSuffix = sops.DefaultUnencryptedSuffix
	}
	tree := sops.Tree{Branches: branches, Metadata: meta}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err == nil {
		tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, meta.LastModified.Format(time.RFC3339))
	}
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.EmitEncryptedFile(tree)
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
	if err == nil {
		_, err = w.Write(dataKey)
	}
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = aw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return &pgp.MasterKey{Fingerprint: Fingerprint(e), EncryptedKey: buf.String(), CreationDate: time.Now().UTC()}
}

// Fingerprint is an OpenPGP key's fingerprint as SOPS writes it.
func Fingerprint(e *openpgp.Entity) string {
	return strings.ToUpper(fmt.Sprintf("%x", e.PrimaryKey.Fingerprint))
}

// Tamper changes one character of the ciphertext inside the first SOPS
// value "ENC[AES256_GCM,data:...]" of an encrypted file, as a hand edit
// of it would.
func Tamper(sealed []byte) []byte {
	s := string(sealed)
	i := strings.Index(s, "ENC[AES256_GCM,data:")
	if i < 0 {
		return sealed
	}
	i += len("ENC[AES256_GCM,data:")
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return []byte(s[:i] + string(c) + s[i+1:])
}

// AgeIdentity is an age identity, for the options of callers that do not
// import age.
type AgeIdentity = age.X25519Identity
