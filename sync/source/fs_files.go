package source

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// The files and file infos treeFS opens and describes: read-only, each
// carrying the commit time.

// info describes a node under the given base name. Everything is
// read-only; every entry carries the commit time.
func (f *treeFS) info(name string, n node, size int64) *fileInfo {
	fi := &fileInfo{name: name, size: size, modTime: f.modTime}
	switch n.mode {
	case filemode.Dir:
		fi.mode = fs.ModeDir | 0o555
	case filemode.Executable:
		fi.mode = 0o555
	case filemode.Symlink:
		fi.mode = fs.ModeSymlink | 0o777
	default:
		fi.mode = 0o444
	}
	return fi
}

// fileInfo implements fs.FileInfo.
type fileInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
}

func (i *fileInfo) Name() string       { return i.name }
func (i *fileInfo) Size() int64        { return i.size }
func (i *fileInfo) Mode() fs.FileMode  { return i.mode }
func (i *fileInfo) ModTime() time.Time { return i.modTime }
func (i *fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *fileInfo) Sys() any           { return nil }

// blobFile is an open file; its content was read when it was opened.
type blobFile struct {
	info   *fileInfo
	r      *bytes.Reader
	closed bool
}

func (b *blobFile) Stat() (fs.FileInfo, error) { return b.info, nil }

func (b *blobFile) Read(p []byte) (int, error) {
	if b.closed {
		return 0, &fs.PathError{Op: "read", Path: b.info.name, Err: fs.ErrClosed}
	}
	return b.r.Read(p)
}

func (b *blobFile) ReadAt(p []byte, off int64) (int, error) {
	if b.closed {
		return 0, &fs.PathError{Op: "read", Path: b.info.name, Err: fs.ErrClosed}
	}
	return b.r.ReadAt(p, off)
}

func (b *blobFile) Seek(offset int64, whence int) (int64, error) {
	if b.closed {
		return 0, &fs.PathError{Op: "seek", Path: b.info.name, Err: fs.ErrClosed}
	}
	return b.r.Seek(offset, whence)
}

func (b *blobFile) Close() error {
	if b.closed {
		return &fs.PathError{Op: "close", Path: b.info.name, Err: fs.ErrClosed}
	}
	b.closed = true
	return nil
}

// dirFile is an open directory; it was listed when it was opened.
type dirFile struct {
	info    *fileInfo
	entries []fs.DirEntry
	offset  int
	closed  bool
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }

func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}

func (d *dirFile) Close() error {
	if d.closed {
		return &fs.PathError{Op: "close", Path: d.info.name, Err: fs.ErrClosed}
	}
	d.closed = true
	return nil
}

// ReadDir follows the fs.ReadDirFile contract: n > 0 returns at most n
// entries and io.EOF at the end; n <= 0 returns all that remain.
func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if d.closed {
		return nil, &fs.PathError{Op: "readdir", Path: d.info.name, Err: fs.ErrClosed}
	}
	rest := d.entries[d.offset:]
	if n <= 0 {
		d.offset = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if n > len(rest) {
		n = len(rest)
	}
	d.offset += n
	return rest[:n], nil
}
