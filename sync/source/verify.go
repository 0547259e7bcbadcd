package source

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"plimsoll.dev/plimsoll/internal/revision"
)

// verifier checks commit signatures against the configured keys: OpenPGP
// ones, SSH ones, or both. A commit carries one signature, so it passes
// when that signature is valid and made by a key of its own kind.
type verifier struct {
	keyring *Keyring
	signers *AllowedSigners
}

// enabled reports whether any key is configured, that is whether every
// commit must be signed.
func (v verifier) enabled() bool { return v.keyring != nil || v.signers != nil }

// commit checks the signature of c, read from st. A refusal wraps
// ErrUnverified and names the commit by its short hash and the reason.
func (v verifier) commit(st storer.EncodedObjectStorer, c *object.Commit) error {
	raw, err := rawCommit(st, c.Hash)
	if err != nil {
		return fmt.Errorf("read commit %s: %w", c.Hash, err)
	}
	return v.check(revision.Short(c.Hash.String()), raw, c.Committer.When)
}

// check verifies the raw commit object named short, committed at
// committed: the time git checks an SSH key's validity window at.
func (v verifier) check(short string, raw []byte, committed time.Time) error {
	payload, signature := splitSigned(raw)
	signature = bytes.TrimSpace(signature)
	switch {
	case len(signature) == 0:
		return unverified("commit %s is not signed", short)
	case bytes.HasPrefix(signature, []byte(sshSignatureBegin)):
		if v.signers == nil {
			return unverified("commit %s has an SSH signature, but only OpenPGP keys are trusted", short)
		}
		if err := v.signers.verify(payload, signature, committed); err != nil {
			return unverified("commit %s: %w", short, err)
		}
	case bytes.HasPrefix(signature, []byte(pgpSignatureBegin)):
		if v.keyring == nil {
			return unverified("commit %s has an OpenPGP signature, but only SSH keys are trusted", short)
		}
		if err := v.keyring.verify(payload, signature); err != nil {
			return unverified("commit %s: %w", short, err)
		}
	default:
		return unverified("commit %s has a signature that is neither OpenPGP nor SSH", short)
	}
	return nil
}

// rawCommit reads commit h's object as stored: the bytes its signature
// was made over, before any decoding.
func rawCommit(st storer.EncodedObjectStorer, h plumbing.Hash) ([]byte, error) {
	obj, err := st.EncodedObject(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// splitSigned separates a raw commit object into the payload its
// signature covers and the signature, as git does to verify one
// (parse_signed_commit): the payload is the object without its gpgsig
// header, and the signature is that header's value with the one-space
// indent of its continuation lines removed. Headers end at the first
// empty line; the message after it is payload, whatever it holds.
func splitSigned(raw []byte) (payload, signature []byte) {
	payload = make([]byte, 0, len(raw))
	prefix := []byte(signatureHeader + " ")
	inSignature := false
	for rest := raw; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		switch {
		case line[0] == '\n':
			return append(append(payload, line...), rest...), signature
		case inSignature && line[0] == ' ':
			signature = append(signature, line[1:]...)
			continue
		case bytes.HasPrefix(line, prefix):
			signature = append(signature, line[len(prefix):]...)
			inSignature = true
			continue
		}
		inSignature = false
		payload = append(payload, line...)
	}
	return payload, signature
}

// unverifiedError is a commit refused by signature verification. Its text
// is the reason alone; errors.Is(err, ErrUnverified) holds.
type unverifiedError struct{ err error }

func unverified(format string, args ...any) error {
	return &unverifiedError{err: fmt.Errorf(format, args...)}
}

func (e *unverifiedError) Error() string        { return e.err.Error() }
func (e *unverifiedError) Unwrap() error        { return e.err }
func (e *unverifiedError) Is(target error) bool { return target == ErrUnverified }
