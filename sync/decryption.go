package sync

import (
	"context"
	"io/fs"

	"plimsoll.dev/plimsoll/sync/decrypt"
)

// Decryption opens the SOPS-encrypted files of a commit for its render:
// FS returns the commit's files with each encrypted one reading as its
// plaintext, in memory. *decrypt.Decryptor implements it.
type Decryption interface {
	FS(ctx context.Context, fsys fs.FS) fs.FS
}

// decrypted is the commit's file system as the render reads it: through
// Config.Decryption, or, without one, through a decryptor with no key,
// which refuses an encrypted file saying that no key is configured rather
// than handing its ciphertext to the API server.
func (s *Syncer) decrypted(ctx context.Context, fsys fs.FS) fs.FS {
	if s.cfg.Decryption == nil {
		return (*decrypt.Decryptor)(nil).FS(ctx, fsys)
	}
	return s.cfg.Decryption.FS(ctx, fsys)
}
