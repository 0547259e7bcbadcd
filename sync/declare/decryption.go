package declare

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Fields of decryption.
const (
	fieldDecryptionSecret   = "secret"
	fieldDecryptionRequired = "required"
)

// decryptionFields are the keys decryption may hold.
var decryptionFields = []string{fieldDecryptionSecret, fieldDecryptionRequired}

// Decryption is how a declared sync decrypts the SOPS-encrypted files of
// its commits, as --decryption-secret and --decryption-required.
type Decryption struct {
	// Secret names a Secret in the declarations' namespace holding the
	// keys (see docs/secrets.md); "" for none, and an encrypted file then
	// fails its commit.
	Secret string
	// Required refuses a commit holding a Secret that is not encrypted.
	Required bool
}

// decryptionDoc is decryption as written.
type decryptionDoc struct {
	Secret   string `yaml:"secret"`
	Required bool   `yaml:"required"`
}

// readDecryption checks decryption.
func readDecryption(d decryptionDoc) (Decryption, error) {
	if d.Secret != "" {
		if msgs := validation.IsDNS1123Subdomain(d.Secret); len(msgs) > 0 {
			return Decryption{}, fieldErr(FieldDecryption+"."+fieldDecryptionSecret, "%q is not a Secret name (the Secret is in the declarations' namespace): %s", d.Secret, strings.Join(msgs, "; "))
		}
	}
	return Decryption(d), nil
}
