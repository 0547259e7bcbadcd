package source

import (
	"bufio"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Reading a repository on this machine.
const (
	// localLazyObject is the size above which an object of a file URL's
	// repository is streamed from disk rather than read whole.
	localLazyObject = 64 << 10
	packVersion     = 2
)

// upstream is where the clone's objects come from: a Git server, or a
// repository on this machine.
type upstream interface {
	// head returns the tip of branch without transferring objects.
	head(ctx context.Context, branch plumbing.ReferenceName) (plumbing.Hash, error)
	// fetch stores what the tip of branch needs into c and points the
	// local branch at it, whatever it pointed at before.
	fetch(ctx context.Context, c clone, branch plumbing.ReferenceName) (plumbing.Hash, error)
}

// localRepository is a file URL's repository, read straight from its
// storage: no git binary, no protocol and no delta search in between.
// go-git's in-process server compresses what it sends against a window of
// other objects, reading each whole (a 200 MB blob costs several times
// that); here every object is copied as it is, streamed when large, so
// memory does not grow with the repository.
type localRepository struct {
	path string
}

// open returns the repository's storage, bare or with a work tree.
func (l localRepository) open() (*filesystem.Storage, error) {
	base := osfs.New("")
	for _, dir := range []string{l.path, l.path + "/.git"} {
		fs, err := base.Chroot(dir)
		if err != nil {
			continue
		}
		if _, err := fs.Stat("HEAD"); err != nil {
			continue
		}
		if _, err := fs.Stat("objects"); err != nil {
			continue
		}
		return filesystem.NewStorageWithOptions(fs, cache.NewObjectLRU(cache.MiByte),
			filesystem.Options{LargeObjectThreshold: localLazyObject}), nil
	}
	return nil, transport.ErrRepositoryNotFound
}

func (l localRepository) head(_ context.Context, branch plumbing.ReferenceName) (plumbing.Hash, error) {
	st, err := l.open()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return localTip(st, branch)
}

// localTip is the hash branch points at in st.
func localTip(st storer.ReferenceStorer, branch plumbing.ReferenceName) (plumbing.Hash, error) {
	ref, err := st.Reference(branch)
	if err == nil {
		return ref.Hash(), nil
	}
	if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, fmt.Errorf("read %s: %w", branch, err)
	}
	refs, err := st.IterReferences()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("list references: %w", err)
	}
	defer refs.Close()
	empty := true
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference {
			empty = false
			return storer.ErrStop
		}
		return nil
	})
	if empty {
		return plumbing.ZeroHash, fmt.Errorf("%w: %s (the repository is empty)", ErrBranchNotFound, branch)
	}
	return plumbing.ZeroHash, fmt.Errorf("%w: %s", ErrBranchNotFound, branch)
}

func (l localRepository) fetch(_ context.Context, c clone, branch plumbing.ReferenceName) (plumbing.Hash, error) {
	src, err := l.open()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tip, err := localTip(src, branch)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if c.storage.HasEncodedObject(tip) != nil {
		// What the clone has of its old tip is not sent again; the old tip
		// need not be in the repository any more (a force-push).
		objects, err := revlist.ObjectsWithStorageForIgnores(src, c.storage, []plumbing.Hash{tip}, c.have(branch))
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("list objects of %s: %w", tip, err)
		}
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			err := writePack(pw, src, objects)
			_ = pw.CloseWithError(err)
			done <- err
		}()
		err = c.storePack(pr)
		_ = pr.CloseWithError(errors.New("pack not read to the end"))
		if werr := <-done; err == nil && werr != nil {
			err = werr
		}
		if err != nil {
			return plumbing.ZeroHash, err
		}
	}
	if err := c.storage.SetReference(plumbing.NewHashReference(branch, tip)); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("update local %s: %w", branch, err)
	}
	return tip, nil
}

// writePack writes a pack of the objects named by hashes, each whole (no
// deltas), reading one object at a time from src.
func writePack(w io.Writer, src storer.EncodedObjectStorer, hashes []plumbing.Hash) error {
	sum := sha1.New()
	bw := bufio.NewWriter(io.MultiWriter(w, sum))
	header := make([]byte, 12)
	copy(header, "PACK")
	binary.BigEndian.PutUint32(header[4:], packVersion)
	binary.BigEndian.PutUint32(header[8:], uint32(len(hashes)))
	if _, err := bw.Write(header); err != nil {
		return err
	}
	zw := zlib.NewWriter(bw)
	for _, h := range hashes {
		o, err := src.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return fmt.Errorf("read object %s: %w", h, err)
		}
		if _, err := bw.Write(objectHeader(o.Type(), o.Size())); err != nil {
			return err
		}
		r, err := o.Reader()
		if err != nil {
			return fmt.Errorf("read object %s: %w", h, err)
		}
		zw.Reset(bw)
		_, err = io.Copy(zw, r)
		_ = r.Close()
		if err != nil {
			return fmt.Errorf("pack object %s: %w", h, err)
		}
		if err := zw.Close(); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// objectHeader is a whole object's header in a pack: its type in bits 4-6
// of the first byte, its size in the low four bits and then seven bits a
// byte, little end first; the high bit says another byte follows. A blob
// (type 3) of 300 bytes (0b1_0010_1100): 0xbc (more, blob, 1100), 0x12.
func objectHeader(t plumbing.ObjectType, size int64) []byte {
	b := []byte{byte(t)<<4 | byte(size&0x0f)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	return b
}
