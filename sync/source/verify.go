package source

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// readKeyring reads armored OpenPGP keys, in one block or in several
// concatenated ones (as "cat *.asc" gives), and returns their public parts
// as a single armored keyring.
func readKeyring(text string) (string, error) {
	var keys openpgp.EntityList
	blocks := strings.Split(text, armorBegin)
	for _, block := range blocks[1:] {
		list, err := openpgp.ReadArmoredKeyRing(strings.NewReader(armorBegin + block))
		if err != nil {
			return "", fmt.Errorf("read verification keyring: %w", err)
		}
		keys = append(keys, list...)
	}
	if len(blocks) == 1 {
		// No block at all: let the reader say so in its own words.
		if _, err := openpgp.ReadArmoredKeyRing(strings.NewReader(text)); err != nil {
			return "", fmt.Errorf("read verification keyring: %w", err)
		}
	}
	if len(keys) == 0 {
		return "", errors.New("read verification keyring: it holds no keys")
	}

	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return "", fmt.Errorf("write verification keyring: %w", err)
	}
	for _, k := range keys {
		if err := k.Serialize(w); err != nil {
			return "", fmt.Errorf("write verification keyring: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("write verification keyring: %w", err)
	}
	return buf.String(), nil
}

// verifyCommit checks that c carries a valid OpenPGP signature made by a
// key of the armored keyring. Any failure wraps ErrUnverified.
func verifyCommit(c *object.Commit, keyring string) error {
	if strings.TrimSpace(c.PGPSignature) == "" {
		return fmt.Errorf("%w: the commit is not signed", ErrUnverified)
	}
	if _, err := c.Verify(keyring); err != nil {
		return fmt.Errorf("%w: %w", ErrUnverified, err)
	}
	return nil
}
