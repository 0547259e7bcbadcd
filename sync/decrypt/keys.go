package decrypt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"filippo.io/age"
	agearmor "filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/getsops/sops/v3/keyservice"
	"google.golang.org/grpc"
)

// Suffixes of the data keys of a decryption Secret, Flux's names.
const (
	// AgeKeySuffix ends the keys holding age identities.
	AgeKeySuffix = ".agekey"
	// OpenPGPKeySuffix ends the keys holding armored OpenPGP private keys.
	OpenPGPKeySuffix = ".asc"
)

// Keys are the private keys a sync decrypts with, and where they come
// from, for messages.
type Keys struct {
	// From names where the keys were read: "Secret plimsoll/sops-keys".
	From string
	age  []age.Identity
	// ageRecipients are the public keys of age, in the order read.
	ageRecipients []string
	pgp           openpgp.EntityList
}

// ParseKeys reads the keys of a decryption Secret's data: the age
// identities of every key ending in AgeKeySuffix and the OpenPGP private
// keys of every key ending in OpenPGPKeySuffix; other keys are ignored.
// from names the Secret for messages. An error names the data key at
// fault and never quotes its content; a Secret with no key of either
// kind is an error too.
func ParseKeys(from string, data map[string][]byte) (*Keys, error) {
	k := &Keys{From: from}
	for _, name := range slices.Sorted(maps.Keys(data)) {
		var err error
		switch {
		case strings.HasSuffix(name, AgeKeySuffix):
			err = k.addAge(data[name])
		case strings.HasSuffix(name, OpenPGPKeySuffix):
			err = k.addOpenPGP(data[name])
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read key %s of %s: %w", name, from, err)
		}
	}
	if len(k.age) == 0 && len(k.pgp) == 0 {
		return nil, fmt.Errorf("%s holds no key: want age identities under a key ending in %s or OpenPGP private keys under one ending in %s", from, AgeKeySuffix, OpenPGPKeySuffix)
	}
	return k, nil
}

// addAge adds the age identities of one data key, one a line.
func (k *Keys) addAge(data []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	n, found := 0, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// age's own message may quote part of the line: it is a key.
		switch {
		case strings.HasPrefix(line, "AGE-SECRET-KEY-PQ-"):
			id, err := age.ParseHybridIdentity(line)
			if err != nil {
				return fmt.Errorf("line %d is not an age identity", n)
			}
			k.age, k.ageRecipients = append(k.age, id), append(k.ageRecipients, id.Recipient().String())
		default:
			id, err := age.ParseX25519Identity(line)
			if err != nil {
				return fmt.Errorf("line %d is not an age identity (AGE-SECRET-KEY-1...)", n)
			}
			k.age, k.ageRecipients = append(k.age, id), append(k.ageRecipients, id.Recipient().String())
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read the identities: %w", err)
	}
	if found == 0 {
		return errors.New("holds no age identity")
	}
	return nil
}

// addOpenPGP adds the armored OpenPGP private keys of one data key.
func (k *Keys) addOpenPGP(data []byte) error {
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(data))
	if err != nil {
		return errors.New("not an armored OpenPGP key")
	}
	for _, e := range ring {
		if e.PrivateKey == nil {
			return fmt.Errorf("key %s is a public key; decryption needs the private key", fingerprint(e))
		}
		if e.PrivateKey.Encrypted {
			return fmt.Errorf("key %s is protected by a passphrase; decryption needs a key without one", fingerprint(e))
		}
		for _, sub := range e.Subkeys {
			if sub.PrivateKey != nil && sub.PrivateKey.Encrypted {
				return fmt.Errorf("key %s has a subkey protected by a passphrase; decryption needs a key without one", fingerprint(e))
			}
		}
	}
	k.pgp = append(k.pgp, ring...)
	return nil
}

// fingerprint is an OpenPGP key's fingerprint as SOPS writes it.
func fingerprint(e *openpgp.Entity) string {
	return strings.ToUpper(fmt.Sprintf("%x", e.PrimaryKey.Fingerprint))
}

// Public names the keys by their public parts: "age age1..., OpenPGP
// 1234...", for messages.
func (k *Keys) Public() string {
	var parts []string
	for _, r := range k.ageRecipients {
		parts = append(parts, "age "+r)
	}
	for _, e := range k.pgp {
		parts = append(parts, "OpenPGP "+fingerprint(e))
	}
	return strings.Join(parts, ", ")
}

// errNotOurs is a data key encrypted for a key the Secret does not hold.
var errNotOurs = errors.New("no key of the Secret decrypts it")

// decryptAge decrypts an age-encrypted data key.
func (k *Keys) decryptAge(ciphertext []byte) ([]byte, error) {
	if len(k.age) == 0 {
		return nil, errNotOurs
	}
	var src io.Reader = bytes.NewReader(ciphertext)
	if bytes.HasPrefix(bytes.TrimSpace(ciphertext), []byte("-----BEGIN")) {
		src = agearmor.NewReader(bytes.NewReader(bytes.TrimSpace(ciphertext)))
	}
	r, err := age.Decrypt(src, k.age...)
	if err != nil {
		var none *age.NoIdentityMatchError
		if errors.As(err, &none) {
			return nil, errNotOurs
		}
		return nil, fmt.Errorf("decrypt the data key with age: %w", err)
	}
	return io.ReadAll(r)
}

// decryptOpenPGP decrypts an OpenPGP-encrypted data key.
func (k *Keys) decryptOpenPGP(ciphertext []byte) ([]byte, error) {
	if len(k.pgp) == 0 {
		return nil, errNotOurs
	}
	var src io.Reader = bytes.NewReader(ciphertext)
	if block, err := pgparmor.Decode(bytes.NewReader(ciphertext)); err == nil {
		src = block.Body
	}
	md, err := openpgp.ReadMessage(src, k.pgp, nil, nil)
	if err != nil {
		if errors.Is(err, pgperrors.ErrKeyIncorrect) {
			return nil, errNotOurs
		}
		return nil, fmt.Errorf("decrypt the data key with OpenPGP: %w", err)
	}
	return io.ReadAll(md.UnverifiedBody)
}

// keyClient is SOPS's key service, answered in process with Keys: SOPS
// asks it for the data key of each master key of a file.
type keyClient struct {
	keys *Keys
	// failed is the first failure of a key that matched, as opposed to
	// the file's master keys that no key of keys is for.
	failed error
}

var _ keyservice.KeyServiceClient = (*keyClient)(nil)

// Encrypt refuses: a sync only decrypts.
func (*keyClient) Encrypt(context.Context, *keyservice.EncryptRequest, ...grpc.CallOption) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("a sync does not encrypt")
}

// Decrypt decrypts one master key's copy of the data key.
func (c *keyClient) Decrypt(_ context.Context, req *keyservice.DecryptRequest, _ ...grpc.CallOption) (*keyservice.DecryptResponse, error) {
	var plain []byte
	var err error
	switch req.GetKey().GetKeyType().(type) {
	case *keyservice.Key_AgeKey:
		plain, err = c.keys.decryptAge(req.GetCiphertext())
	case *keyservice.Key_PgpKey:
		plain, err = c.keys.decryptOpenPGP(req.GetCiphertext())
	default:
		err = errors.New("only age and OpenPGP keys are read")
	}
	if err != nil {
		if !errors.Is(err, errNotOurs) && c.failed == nil {
			c.failed = err
		}
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}
