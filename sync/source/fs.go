package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// errInvalidPath rejects names fs.ValidPath refuses, such as "../x" or
// "/etc": nothing outside the repository root can be named.
var errInvalidPath = fmt.Errorf("%w: not a slash path inside the repository", fs.ErrInvalid)

// treeFS reads one commit's tree from the local clone. Blobs are read when
// a file is opened, under the repository lock.
type treeFS struct {
	repo    *Repository
	root    plumbing.Hash
	modTime time.Time
}

var (
	_ fs.ReadDirFS  = (*treeFS)(nil)
	_ fs.ReadFileFS = (*treeFS)(nil)
	_ fs.StatFS     = (*treeFS)(nil)
	_ fs.ReadLinkFS = (*treeFS)(nil)
)

// node is what a path resolved to, after following symlinks.
type node struct {
	path string // resolved path from the root; "." for the root
	mode filemode.FileMode
	hash plumbing.Hash // blob or tree
}

func (n node) isDir() bool { return n.mode == filemode.Dir }

// symlinkEscape is the error for a symlink that leaves the repository.
type symlinkEscape struct {
	link, target string
}

func (e *symlinkEscape) Error() string {
	return fmt.Sprintf("symlink %s -> %s leaves the repository", e.link, e.target)
}

// Open opens name, following symlinks that stay inside the repository.
func (f *treeFS) Open(name string) (fs.File, error) {
	var file fs.File
	err := f.locked("open", name, func() error {
		n, err := f.resolve(name)
		if err != nil {
			return err
		}
		info := f.info(path.Base(name), n, 0)
		if n.isDir() {
			entries, err := f.readDir(n)
			if err != nil {
				return err
			}
			file = &dirFile{info: info, entries: entries}
			return nil
		}
		data, err := f.readBlob(n)
		if err != nil {
			return err
		}
		info.size = int64(len(data))
		file = &blobFile{info: info, r: bytes.NewReader(data)}
		return nil
	})
	return file, err
}

// ReadFile returns the content of the file name.
func (f *treeFS) ReadFile(name string) ([]byte, error) {
	var data []byte
	err := f.locked("open", name, func() error {
		n, err := f.resolve(name)
		if err != nil {
			return err
		}
		if n.isDir() {
			return errors.New("is a directory")
		}
		data, err = f.readBlob(n)
		return err
	})
	return data, err
}

// Stat describes name, following symlinks that stay inside the repository.
func (f *treeFS) Stat(name string) (fs.FileInfo, error) {
	return f.stat("stat", name, f.resolve)
}

// ReadDir lists the directory name sorted by file name, without submodules.
// It fails if any symlink in it does not resolve inside the repository.
func (f *treeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	var entries []fs.DirEntry
	err := f.locked("readdir", name, func() error {
		n, err := f.resolve(name)
		if err != nil {
			return err
		}
		if !n.isDir() {
			return errors.New("not a directory")
		}
		entries, err = f.readDir(n)
		return err
	})
	return entries, err
}

// Lstat describes name without following it if it is a symlink. Like
// every other use of a symlink, it fails if the link does not resolve
// inside the repository.
func (f *treeFS) Lstat(name string) (fs.FileInfo, error) {
	return f.stat("lstat", name, f.resolveLink)
}

// stat describes the node that resolve finds for name.
func (f *treeFS) stat(op, name string, resolve func(string) (node, error)) (fs.FileInfo, error) {
	var info fs.FileInfo
	err := f.locked(op, name, func() error {
		n, err := resolve(name)
		if err != nil {
			return err
		}
		size, err := f.size(n)
		if err != nil {
			return err
		}
		info = f.info(path.Base(name), n, size)
		return nil
	})
	return info, err
}

// ReadLink returns the target of the symlink name, which must resolve
// inside the repository.
func (f *treeFS) ReadLink(name string) (string, error) {
	var target string
	err := f.locked("readlink", name, func() error {
		n, err := f.resolveLink(name)
		if err != nil {
			return err
		}
		if n.mode != filemode.Symlink {
			return errors.New("not a symlink")
		}
		target, err = f.linkTarget(n.path, n.hash)
		return err
	})
	return target, err
}

// resolveLink resolves name like resolve, except that a symlink as the
// last element is checked but not followed.
func (f *treeFS) resolveLink(name string) (node, error) {
	n, err := f.resolve(name)
	if err != nil || name == "." {
		return n, err
	}
	base := path.Base(name)
	dir, err := f.resolve(path.Dir(name))
	if err != nil {
		return node{}, err
	}
	t, err := object.GetTree(f.repo.storage, dir.hash)
	if err != nil {
		return node{}, fmt.Errorf("read tree %s: %w", dir.path, err)
	}
	entry, ok := findEntry(t, base)
	if !ok || entry.Mode != filemode.Symlink {
		return n, nil
	}
	return node{path: path.Join(dir.path, base), mode: filemode.Symlink, hash: entry.Hash}, nil
}

// locked validates name, runs fn under the repository lock, and reports a
// failure as an *fs.PathError for op and name.
func (f *treeFS) locked(op, name string, fn func() error) error {
	if !fs.ValidPath(name) {
		return &fs.PathError{Op: op, Path: name, Err: errInvalidPath}
	}
	if err := f.repo.lock(context.Background()); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	defer f.repo.gate.release()
	if err := fn(); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// step is one path element still to resolve, with the symlink whose target
// it came from (nil for elements of the name asked for).
type step struct {
	elem string
	via  *symlinkEscape
}

// resolve walks name from the root tree, one element at a time, following
// symlinks the way the kernel does: a link's target is resolved from the
// link's directory, ".." goes up one resolved directory, and a target that
// is absolute or climbs above the root leaves the repository. At most
// maxSymlinkHops links are followed.
func (f *treeFS) resolve(name string) (node, error) {
	var pending []step
	if name != "." {
		for _, e := range strings.Split(name, "/") {
			pending = append(pending, step{elem: e})
		}
	}
	root, err := object.GetTree(f.repo.storage, f.root)
	if err != nil {
		return node{}, fmt.Errorf("read root tree: %w", err)
	}
	dirs := []string{}            // resolved directory elements
	trees := []*object.Tree{root} // trees[i] is the tree of dirs[:i]
	hops := 0

	for len(pending) > 0 {
		s := pending[0]
		pending = pending[1:]
		switch s.elem {
		case "", ".":
			continue
		case "..":
			if len(dirs) == 0 {
				if s.via == nil {
					return node{}, errInvalidPath
				}
				return node{}, s.via
			}
			dirs = dirs[:len(dirs)-1]
			trees = trees[:len(trees)-1]
			continue
		}

		full := path.Join(append(append([]string{}, dirs...), s.elem)...)
		entry, ok := findEntry(trees[len(trees)-1], s.elem)
		if !ok {
			return node{}, fs.ErrNotExist
		}
		switch entry.Mode {
		case filemode.Dir:
			t, err := object.GetTree(f.repo.storage, entry.Hash)
			if err != nil {
				return node{}, fmt.Errorf("read tree %s: %w", full, err)
			}
			dirs = append(dirs, s.elem)
			trees = append(trees, t)
		case filemode.Symlink:
			hops++
			if hops > maxSymlinkHops {
				return node{}, fmt.Errorf("too many levels of symlinks at %s (more than %d)", full, maxSymlinkHops)
			}
			target, err := f.linkTarget(full, entry.Hash)
			if err != nil {
				return node{}, err
			}
			link := &symlinkEscape{link: full, target: target}
			if strings.HasPrefix(target, "/") {
				return node{}, link
			}
			var expanded []step
			for _, e := range strings.Split(target, "/") {
				expanded = append(expanded, step{elem: e, via: link})
			}
			pending = append(expanded, pending...)
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
			if len(pending) > 0 {
				return node{}, fmt.Errorf("%s is not a directory", full)
			}
			return node{path: full, mode: entry.Mode, hash: entry.Hash}, nil
		case filemode.Submodule:
			return node{}, fmt.Errorf("%s is a submodule, not a file or directory", full)
		default:
			return node{}, fmt.Errorf("%s has unsupported mode %s", full, entry.Mode)
		}
	}

	dir := "."
	if len(dirs) > 0 {
		dir = path.Join(dirs...)
	}
	return node{path: dir, mode: filemode.Dir, hash: trees[len(trees)-1].Hash}, nil
}

func findEntry(t *object.Tree, name string) (object.TreeEntry, bool) {
	for _, e := range t.Entries {
		if e.Name == name {
			return e, true
		}
	}
	return object.TreeEntry{}, false
}

// linkTarget reads the target of the symlink at full.
func (f *treeFS) linkTarget(full string, h plumbing.Hash) (string, error) {
	size, err := f.repo.storage.EncodedObjectSize(h)
	if err != nil {
		return "", fmt.Errorf("read symlink %s: %w", full, err)
	}
	if size > maxSymlinkTarget {
		return "", fmt.Errorf("symlink %s has a %d-byte target, longer than %d bytes", full, size, maxSymlinkTarget)
	}
	data, err := f.blobContent(h, size)
	if err != nil {
		return "", fmt.Errorf("read symlink %s: %w", full, err)
	}
	if len(data) == 0 {
		return "", fmt.Errorf("symlink %s has an empty target", full)
	}
	return string(data), nil
}

// size is the size of a file node; directories report 0.
func (f *treeFS) size(n node) (int64, error) {
	if n.isDir() {
		return 0, nil
	}
	size, err := f.repo.storage.EncodedObjectSize(n.hash)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", n.path, err)
	}
	return size, nil
}

// readBlob reads a file node, refusing it from its stored size, before
// reading, when it exceeds the limit.
func (f *treeFS) readBlob(n node) ([]byte, error) {
	size, err := f.size(n)
	if err != nil {
		return nil, err
	}
	if size > f.repo.maxBytes {
		return nil, fmt.Errorf("file %s is %d bytes, over the limit of %d bytes", n.path, size, f.repo.maxBytes)
	}
	data, err := f.blobContent(n.hash, size)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", n.path, err)
	}
	return data, nil
}

// blobContent reads a blob whose size is known, never more than size bytes.
func (f *treeFS) blobContent(h plumbing.Hash, size int64) ([]byte, error) {
	blob, err := object.GetBlob(f.repo.storage, h)
	if err != nil {
		return nil, err
	}
	rd, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer func() { _ = rd.Close() }()
	data := make([]byte, size)
	if _, err := io.ReadFull(rd, data); err != nil {
		return nil, err
	}
	return data, nil
}

// readDir lists a directory node. Symlinks are resolved to check them, and
// listed as symlinks.
func (f *treeFS) readDir(n node) ([]fs.DirEntry, error) {
	t, err := object.GetTree(f.repo.storage, n.hash)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", n.path, err)
	}
	entries := make([]fs.DirEntry, 0, len(t.Entries))
	for _, e := range t.Entries {
		child := path.Join(n.path, e.Name)
		var (
			size int64
			err  error
		)
		switch e.Mode {
		case filemode.Submodule:
			continue
		case filemode.Symlink:
			if _, err := f.resolve(child); err != nil {
				var escape *symlinkEscape
				if errors.As(err, &escape) {
					return nil, err
				}
				return nil, fmt.Errorf("symlink %s: %w", child, err)
			}
			size, err = f.repo.storage.EncodedObjectSize(e.Hash)
		case filemode.Dir:
		default:
			size, err = f.repo.storage.EncodedObjectSize(e.Hash)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", child, err)
		}
		entries = append(entries, fs.FileInfoToDirEntry(f.info(e.Name, node{path: child, mode: e.Mode, hash: e.Hash}, size)))
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}
