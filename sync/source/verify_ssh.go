package source

import (
	"bytes"
	"fmt"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// verify checks that signature, an armored SSH signature (the SSHSIG
// format of ssh-keygen -Y sign), is a valid signature of payload in
// namespace "git" by a key the file allows, at time signed, as
// `git verify-commit` does with gpg.ssh.allowedSignersFile: git asks
// ssh-keygen to check the key's options at the committer time
// (-Overify-time). A key listed on several lines passes if one line allows
// it. The error says which key made the signature and why it is refused.
func (a *AllowedSigners) verify(payload, signature []byte, signed time.Time) error {
	sig, err := sshsig.Unarmor(signature)
	if err != nil {
		return fmt.Errorf("unreadable SSH signature: %w", err)
	}
	who := describeSSHKey(sig.PublicKey)
	if sig.Namespace != sshNamespace {
		return fmt.Errorf("SSH signature by %s is for namespace %q, not %q", who, sig.Namespace, sshNamespace)
	}
	lines := a.lookup(sig.PublicKey)
	if len(lines) == 0 {
		return fmt.Errorf("SSH signature by %s, which is not an allowed signer", who)
	}
	who = lines[0].principals + " (" + who + ")"
	if err := sshsig.Verify(bytes.NewReader(payload), sig, sig.PublicKey, sig.HashAlgorithm, sshNamespace); err != nil {
		return fmt.Errorf("SSH signature by %s does not match the commit (it was changed after signing): %w", who, err)
	}
	var refusal error
	for _, e := range lines {
		err := e.permits(sshNamespace, signed)
		if err == nil {
			return nil
		}
		if refusal == nil {
			refusal = err
		}
	}
	return fmt.Errorf("SSH signature by %s is not accepted: %w", who, refusal)
}

// describeSSHKey names a key as ssh-keygen does: its type and SHA256
// fingerprint.
func describeSSHKey(key ssh.PublicKey) string {
	return key.Type() + " key " + ssh.FingerprintSHA256(key)
}
