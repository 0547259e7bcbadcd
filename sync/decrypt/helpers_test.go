package decrypt

import (
	"fmt"
	"testing"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"

	"plimsoll.dev/plimsoll/sync/decrypt/decrypttest"
)

// Short names of the helpers of decrypttest.
var (
	newAge     = decrypttest.NewAge
	newOpenPGP = decrypttest.NewOpenPGP
	ageSecret  = decrypttest.AgeSecret
)

// Short names of the key types, for test tables.
type (
	age25519  = age.X25519Identity
	pgpEntity = openpgp.Entity
)

// encOptions say how sealFile encrypts.
type encOptions struct {
	// regex is the file's encrypted_regex; "" encrypts every value.
	regex string
	age   []*age25519
	pgp   []*pgpEntity
}

// sealFile encrypts plain, the content of the file name, as the sops
// command does, for the keys of opts.
func sealFile(t testing.TB, name string, plain []byte, opts encOptions) []byte {
	t.Helper()
	return decrypttest.Seal(t, name, plain, decrypttest.Options{EncryptedRegex: opts.regex, Age: opts.age, OpenPGP: opts.pgp})
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
