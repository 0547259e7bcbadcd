package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Keyring holds the OpenPGP public keys a commit may be signed with.
type Keyring struct {
	keys openpgp.EntityList
}

// ReadKeyring reads armored OpenPGP public keys, in one block or in
// several concatenated ones (as "cat *.asc" gives). A text without any
// key, or with a block that does not parse, is an error naming the block.
func ReadKeyring(text []byte) (*Keyring, error) {
	var keys openpgp.EntityList
	blocks := strings.Split(string(text), armorBegin)
	for i, block := range blocks[1:] {
		list, err := openpgp.ReadArmoredKeyRing(strings.NewReader(armorBegin + block))
		if err != nil {
			return nil, fmt.Errorf("armored block %d: %w", i+1, err)
		}
		keys = append(keys, list...)
	}
	if len(keys) == 0 {
		return nil, errors.New("no armored OpenPGP public key in it")
	}
	return &Keyring{keys: keys}, nil
}

// verify checks that signature, an armored OpenPGP signature, is a valid
// signature of payload by a key of the keyring. The error says which key
// made it and why it is refused.
func (k *Keyring) verify(payload, signature []byte) error {
	block, err := armor.Decode(bytes.NewReader(signature))
	if err != nil {
		return fmt.Errorf("unreadable OpenPGP signature: %w", err)
	}
	body, err := io.ReadAll(block.Body)
	if err != nil {
		return fmt.Errorf("unreadable OpenPGP signature: %w", err)
	}
	p, err := packet.Read(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("unreadable OpenPGP signature: %w", err)
	}
	sig, ok := p.(*packet.Signature)
	if !ok || sig.IssuerKeyId == nil {
		return errors.New("unreadable OpenPGP signature: it names no signing key")
	}
	who := k.describe(*sig.IssuerKeyId)

	_, err = openpgp.CheckDetachedSignature(k.keys, bytes.NewReader(payload), bytes.NewReader(body), nil)
	var invalid pgperrors.SignatureError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		return fmt.Errorf("OpenPGP signature by %s, which is not in the verification keyring", who)
	case errors.As(err, &invalid):
		return fmt.Errorf("OpenPGP signature by %s does not match the commit (it was changed after signing): %w", who, err)
	}
	return fmt.Errorf("OpenPGP signature by %s is not accepted: %w", who, err)
}

// describe names the key with ID id: its ID as gpg prints it, and the
// primary identity of its owner when the keyring holds it.
func (k *Keyring) describe(id uint64) string {
	name := fmt.Sprintf("key %016X", id)
	if keys := k.keys.KeysById(id); len(keys) > 0 && keys[0].Entity != nil {
		if ident := keys[0].Entity.PrimaryIdentity(); ident != nil {
			name += " (" + ident.Name + ")"
		}
	}
	return name
}
