package artifact

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"slices"
	"time"
)

// tree is an artifact's files, read-only and in memory: what a layer
// unpacked to, given to the render as a commit's tree is. It implements
// fs.ReadDirFS, fs.ReadFileFS and fs.StatFS.
type tree struct {
	files map[string][]byte
	// dirs holds every directory, "." the root, with its entries' names
	// sorted.
	dirs    map[string][]string
	modTime time.Time
}

// newTree returns an empty tree whose entries show modTime.
func newTree(modTime time.Time) *tree {
	return &tree{files: map[string][]byte{}, dirs: map[string][]string{".": nil}, modTime: modTime}
}

// addDir adds directory name and its parents, once.
func (t *tree) addDir(name string) {
	for name != "." {
		if _, ok := t.dirs[name]; ok {
			return
		}
		t.dirs[name] = nil
		parent := path.Dir(name)
		t.addDir(parent)
		t.dirs[parent] = insertSorted(t.dirs[parent], path.Base(name))
		name = parent
	}
}

// addFile adds file name, its directories with it.
func (t *tree) addFile(name string, data []byte) {
	parent := path.Dir(name)
	t.addDir(parent)
	if _, ok := t.files[name]; !ok {
		t.dirs[parent] = insertSorted(t.dirs[parent], path.Base(name))
	}
	t.files[name] = data
}

// insertSorted adds name to the sorted names, once.
func insertSorted(names []string, name string) []string {
	i, found := slices.BinarySearch(names, name)
	if found {
		return names
	}
	return slices.Insert(names, i, name)
}

// Open opens a file or a directory.
func (t *tree) Open(name string) (fs.File, error) {
	info, err := t.stat("open", name)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return &openDir{info: info, entries: t.entries(name)}, nil
	}
	return &openFile{info: info, Reader: bytes.NewReader(t.files[name])}, nil
}

// ReadFile returns a copy of a file's bytes.
func (t *tree) ReadFile(name string) ([]byte, error) {
	info, err := t.stat("read", name)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	return bytes.Clone(t.files[name]), nil
}

// ReadDir lists a directory, sorted by name.
func (t *tree) ReadDir(name string) ([]fs.DirEntry, error) {
	info, err := t.stat("readdir", name)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	return t.entries(name), nil
}

// Stat describes a file or a directory.
func (t *tree) Stat(name string) (fs.FileInfo, error) { return t.stat("stat", name) }

func (t *tree) stat(op, name string) (*entry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if data, ok := t.files[name]; ok {
		return &entry{name: path.Base(name), size: int64(len(data)), modTime: t.modTime}, nil
	}
	if _, ok := t.dirs[name]; ok {
		return &entry{name: path.Base(name), dir: true, modTime: t.modTime}, nil
	}
	return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

// entries are the entries of directory name.
func (t *tree) entries(name string) []fs.DirEntry {
	out := make([]fs.DirEntry, 0, len(t.dirs[name]))
	for _, base := range t.dirs[name] {
		info, _ := t.stat("readdir", path.Join(name, base))
		out = append(out, info)
	}
	return out
}

// entry is a file's or a directory's description, and its directory
// entry.
type entry struct {
	name    string
	size    int64
	dir     bool
	modTime time.Time
}

func (e *entry) Name() string { return e.name }
func (e *entry) Size() int64  { return e.size }
func (e *entry) Mode() fs.FileMode {
	if e.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (e *entry) ModTime() time.Time         { return e.modTime }
func (e *entry) IsDir() bool                { return e.dir }
func (e *entry) Sys() any                   { return nil }
func (e *entry) Type() fs.FileMode          { return e.Mode().Type() }
func (e *entry) Info() (fs.FileInfo, error) { return e, nil }

// openFile is a file opened for reading.
type openFile struct {
	info *entry
	*bytes.Reader
}

func (f *openFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *openFile) Close() error               { return nil }

// openDir is a directory opened for listing.
type openDir struct {
	info    *entry
	entries []fs.DirEntry
	next    int
}

func (d *openDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *openDir) Close() error               { return nil }
func (d *openDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: fs.ErrInvalid}
}

// ReadDir lists the next n entries, or all that are left when n <= 0.
func (d *openDir) ReadDir(n int) ([]fs.DirEntry, error) {
	left := d.entries[d.next:]
	if n <= 0 {
		d.next = len(d.entries)
		return left, nil
	}
	if len(left) == 0 {
		return nil, io.EOF
	}
	left = left[:min(n, len(left))]
	d.next += len(left)
	return left, nil
}
