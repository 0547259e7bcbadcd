package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// errReadOnly is returned by every attempt of kustomize to change the
// repository.
var errReadOnly = errors.New("the repository is read-only")

// repoFS shows kustomize the repository, read-only: absolute paths are
// rooted at the repository root, and ".." never leaves it. Every file it
// hands over has passed the YAML limits, and the first error of the
// repository's file system, or the first file refused by the limits, is kept
// in err, since kustomize may report it in other words or swallow it.
type repoFS struct {
	fsys fs.FS
	lim  Limits
	// reads holds the files read, by slash path, to find the Secret values
	// that kustomize's messages must not show.
	reads map[string][]byte
	err   error
}

var _ filesys.FileSystem = (*repoFS)(nil)

func newRepoFS(fsys fs.FS, lim Limits) *repoFS {
	return &repoFS{fsys: fsys, lim: lim, reads: map[string][]byte{}}
}

// name turns a path from kustomize into a path of fsys.
func (r *repoFS) name(p string) string {
	p = filepath.ToSlash(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	p = strings.TrimPrefix(path.Clean(p), "/")
	if p == "" {
		return "."
	}
	return p
}

// fail keeps the first error of the file system or the limits.
func (r *repoFS) fail(err error) error {
	if r.err == nil {
		r.err = err
	}
	return err
}

// stat returns the file's information; errors other than a missing file are
// kept, since they are the file system refusing the file.
func (r *repoFS) stat(name string) (fs.FileInfo, error) {
	info, err := fs.Stat(r.fsys, name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, r.fail(fmt.Errorf("read %s: %w", name, err))
	}
	return info, err
}

// ReadFile returns the file's content once it has passed the YAML limits.
// Content that does not parse as YAML is handed over as it is, for
// kustomize to judge: generators read files of any kind.
func (r *repoFS) ReadFile(p string) ([]byte, error) {
	name := r.name(p)
	info, err := r.stat(name)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: p, Err: errors.New("is a directory")}
	}
	data, err := fs.ReadFile(r.fsys, name)
	if err != nil {
		return nil, r.fail(fmt.Errorf("read %s: %w", name, err))
	}
	if err := eachNode(name, data, r.lim, func(int, *yaml.Node) error { return nil }); err != nil {
		var pe *parseError
		if !errors.As(err, &pe) {
			return nil, r.fail(err)
		}
	}
	r.reads[name] = data
	return data, nil
}

// Open returns the file's content as a read-only file.
func (r *repoFS) Open(p string) (filesys.File, error) {
	data, err := r.ReadFile(p)
	if err != nil {
		return nil, err
	}
	info, err := fs.Stat(r.fsys, r.name(p))
	if err != nil {
		return nil, err
	}
	return &readOnlyFile{Reader: bytes.NewReader(data), info: info}, nil
}

// CleanedAbs splits an existing path into its directory, as an absolute
// path, and its file name, empty when the path is a directory.
func (r *repoFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	name := r.name(p)
	info, err := r.stat(name)
	if err != nil {
		return "", "", err
	}
	if info.IsDir() {
		return filesys.ConfirmedDir(absPath(name)), "", nil
	}
	return filesys.ConfirmedDir(absPath(path.Dir(name))), path.Base(name), nil
}

// Exists reports whether the path exists.
func (r *repoFS) Exists(p string) bool {
	_, err := r.stat(r.name(p))
	return err == nil
}

// IsDir reports whether the path is a directory.
func (r *repoFS) IsDir(p string) bool {
	info, err := r.stat(r.name(p))
	return err == nil && info.IsDir()
}

// ReadDir returns the names in a directory.
func (r *repoFS) ReadDir(p string) ([]string, error) {
	name := r.name(p)
	entries, err := fs.ReadDir(r.fsys, name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, r.fail(fmt.Errorf("read %s: %w", name, err))
		}
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}

// Glob returns the absolute paths that match pattern.
func (r *repoFS) Glob(pattern string) ([]string, error) {
	matches, err := fs.Glob(r.fsys, r.name(pattern))
	if err != nil {
		return nil, err
	}
	for i, m := range matches {
		matches[i] = absPath(m)
	}
	return matches, nil
}

// Walk walks the tree at p, giving absolute paths to walkFn.
func (r *repoFS) Walk(p string, walkFn filepath.WalkFunc) error {
	return fs.WalkDir(r.fsys, r.name(p), func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return walkFn(absPath(name), nil, err)
		}
		info, err := d.Info()
		return walkFn(absPath(name), info, err)
	})
}

// Create refuses: the repository is read-only.
func (r *repoFS) Create(string) (filesys.File, error) { return nil, errReadOnly }

// Mkdir refuses: the repository is read-only.
func (r *repoFS) Mkdir(string) error { return errReadOnly }

// MkdirAll refuses: the repository is read-only.
func (r *repoFS) MkdirAll(string) error { return errReadOnly }

// RemoveAll refuses: the repository is read-only.
func (r *repoFS) RemoveAll(string) error { return errReadOnly }

// WriteFile refuses: the repository is read-only.
func (r *repoFS) WriteFile(string, []byte) error { return errReadOnly }

// readOnlyFile is a file's content that can be read but not written.
type readOnlyFile struct {
	*bytes.Reader
	info fs.FileInfo
}

func (f *readOnlyFile) Write([]byte) (int, error) { return 0, errReadOnly }
func (f *readOnlyFile) Close() error              { return nil }
func (f *readOnlyFile) Stat() (os.FileInfo, error) {
	return f.info, nil
}
