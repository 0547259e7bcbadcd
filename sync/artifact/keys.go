package artifact

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// pemPublicKey is the PEM type of a PKIX public key, as in cosign.pub.
const pemPublicKey = "PUBLIC KEY"

// Keys are what an artifact may be signed with: cosign public keys, and a
// keyless identity (see WithKeyless).
type Keys struct {
	keys []crypto.PublicKey
	// ids are the keys' fingerprints, for telling key sets apart.
	ids []string
	// keyless is the keyless identity trusted; nil: none.
	keyless *keyless
}

// ReadKeys reads one or more PEM public keys (cosign.pub, as
// `cosign generate-key-pair` writes it, or any PKIX key): ECDSA on
// P-256, P-384 or P-521, RSA of 2048 bits or more, or Ed25519. A private
// key, an unknown block or no key at all is an error saying so.
func ReadKeys(text []byte) (*Keys, error) {
	k := &Keys{}
	rest := text
	for n := 1; ; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != pemPublicKey {
			if strings.Contains(block.Type, "PRIVATE") {
				return nil, fmt.Errorf("PEM block %d is a private key (%s): give the public key, cosign.pub", n, block.Type)
			}
			return nil, fmt.Errorf("PEM block %d is a %s, not a PUBLIC KEY", n, block.Type)
		}
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: not a public key: %w", n, err)
		}
		if err := usable(key); err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", n, err)
		}
		sum := sha256.Sum256(block.Bytes)
		k.keys = append(k.keys, key)
		k.ids = append(k.ids, hex.EncodeToString(sum[:]))
	}
	if len(k.keys) == 0 {
		return nil, errors.New("no PEM public key found (want -----BEGIN PUBLIC KEY-----, as in cosign.pub)")
	}
	return k, nil
}

// usable refuses a key no cosign signature is made with.
func usable(key crypto.PublicKey) error {
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve.Params().Name {
		case "P-256", "P-384", "P-521":
			return nil
		}
		return fmt.Errorf("ECDSA key on curve %s: want P-256, P-384 or P-521", k.Curve.Params().Name)
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("RSA key of %d bits: want 2048 or more", k.N.BitLen())
		}
		return nil
	case ed25519.PublicKey:
		return nil
	}
	return fmt.Errorf("a %T key: want ECDSA, RSA or Ed25519", key)
}

// ID tells key sets apart: the same keys, in any order, and the same
// keyless identity give the same ID.
func (k *Keys) ID() string {
	if k == nil {
		return ""
	}
	h := sha256.New()
	for _, id := range slices.Sorted(slices.Values(k.ids)) {
		h.Write([]byte(id))
	}
	if k.keyless != nil {
		h.Write([]byte("keyless " + k.keyless.id))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Len is how many keys there are.
func (k *Keys) Len() int { return len(k.keys) }

// verifies reports whether sig is a signature of message by one of the
// keys, as cosign makes them: ECDSA (ASN.1) and RSA (PKCS #1 v1.5) over
// the message's SHA-256, Ed25519 over the message itself.
func (k *Keys) verifies(message, sig []byte) bool {
	digest := sha256.Sum256(message)
	for _, key := range k.keys {
		switch key := key.(type) {
		case *ecdsa.PublicKey:
			if ecdsa.VerifyASN1(key, digest[:], sig) {
				return true
			}
		case *rsa.PublicKey:
			if rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig) == nil {
				return true
			}
		case ed25519.PublicKey:
			if ed25519.Verify(key, message, sig) {
				return true
			}
		}
	}
	return false
}
