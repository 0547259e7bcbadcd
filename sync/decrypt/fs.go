package decrypt

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	gosync "sync"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// Config is how a sync decrypts.
type Config struct {
	// Secret names the decryption Secret, "namespace/name", for messages;
	// "" when the sync has none: an encrypted file is then refused.
	Secret string
	// Load reads the Secret's data; it is called once per render, on the
	// first encrypted file, so that a Secret rotated is used from the next
	// sync on. Required with Secret.
	Load func(ctx context.Context) (map[string][]byte, error)
	// Required refuses a Secret in Git that is not encrypted: a manifest
	// file holding a v1 Secret, and the env and files of a kustomize
	// secretGenerator, must be SOPS-encrypted, and a secretGenerator may
	// have no literals. Files of Helm charts are not held to it.
	Required bool
	// Limits bound the YAML of an encrypted file before SOPS parses it,
	// as they bound any manifest.
	Limits manifest.Limits
}

// Decryptor opens the encrypted files of commits. The zero Decryptor has
// no key: it refuses every encrypted file, saying so.
type Decryptor struct{ cfg Config }

// New returns the Decryptor of cfg.
func New(cfg Config) *Decryptor { return &Decryptor{cfg: cfg} }

// FS returns fsys as a render of one commit reads it: an encrypted file
// reads as its plaintext, a file that cannot be decrypted fails to read
// with an *Error, and with Config.Required a Secret in plain text fails
// too. The decryption Secret is read on the first encrypted file, with
// ctx. What FS decrypts it keeps in memory, for the render's repeated
// reads, and nowhere else.
func (d *Decryptor) FS(ctx context.Context, fsys fs.FS) fs.FS {
	if d == nil {
		d = &Decryptor{}
	}
	return &decryptFS{base: fsys, cfg: d.cfg, ctx: ctx, files: map[string]result{}, generated: map[string]string{}, charts: map[string]bool{}}
}

// result is a file read through the wrapper.
type result struct {
	data []byte
	err  error
}

// decryptFS is fsys for one render.
type decryptFS struct {
	base fs.FS
	cfg  Config
	ctx  context.Context

	mu gosync.Mutex
	// keys and keysErr are the decryption Secret's keys, read once.
	keys    *Keys
	keysErr error
	loaded  bool
	files   map[string]result
	// values are the values decrypted, for Values.
	values []string
	// generated maps the files a secretGenerator reads to its
	// kustomization, for Config.Required.
	generated map[string]string
	// charts caches whether a directory holds a Chart.yaml.
	charts map[string]bool
}

var (
	_ fs.ReadFileFS = (*decryptFS)(nil)
	_ fs.StatFS     = (*decryptFS)(nil)
	_ fs.ReadDirFS  = (*decryptFS)(nil)
)

// ReadFile returns the file's content, decrypted when SOPS encrypted it.
func (f *decryptFS) ReadFile(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.files[name]; ok {
		return r.data, r.err
	}
	data, err := fs.ReadFile(f.base, name)
	if err != nil {
		return nil, err
	}
	data, err = f.open(name, data)
	if err != nil {
		data = nil
	}
	f.files[name] = result{data: data, err: err}
	return data, err
}

// open decrypts one file, or checks a plain one against Required.
func (f *decryptFS) open(name string, data []byte) ([]byte, error) {
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json":
		// SOPS parses the whole file, aliases and all: the limits of any
		// manifest come first. A file over them is handed on as it is, for
		// its reader, which holds it to the same limits, to refuse.
		if bytes.Contains(data, []byte(metadataKey)) {
			if _, err := manifest.ParseDocuments(name, data, f.cfg.Limits); err != nil {
				return data, nil
			}
		}
	}
	if !Encrypted(name, data) {
		return data, f.checkPlain(name, data)
	}
	keys, err := f.loadKeys()
	if err != nil {
		return nil, &Error{File: name, Reason: err.Error()}
	}
	plain, values, err := decryptFile(name, data, keys)
	if err != nil {
		return nil, err
	}
	f.values = append(f.values, values...)
	if f.cfg.Required && isKustomization(name) {
		if err := f.noteGenerators(name, plain); err != nil {
			return nil, err
		}
	}
	return plain, nil
}

// Values returns the plaintext of the values that the files read through
// fsys, a file system of FS, held encrypted, and their lines; none for
// another file system. A sync removes them from every message it shows,
// wherever they end up (a chart may put a value of a values file into any
// object, and an error of the API server may quote it).
func Values(fsys fs.FS) []string {
	f, ok := fsys.(*decryptFS)
	if !ok {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.values)
}

// loadKeys reads the decryption Secret once per render.
func (f *decryptFS) loadKeys() (*Keys, error) {
	if f.loaded {
		return f.keys, f.keysErr
	}
	f.loaded = true
	if f.cfg.Secret == "" || f.cfg.Load == nil {
		f.keysErr = errNoKeys
		return nil, f.keysErr
	}
	data, err := f.cfg.Load(f.ctx)
	if err != nil {
		f.keysErr = fmt.Errorf("SOPS-encrypted, and decryption Secret %s cannot be read: %w", f.cfg.Secret, err)
		return nil, f.keysErr
	}
	f.keys, f.keysErr = ParseKeys("decryption Secret "+f.cfg.Secret, data)
	if f.keysErr != nil {
		f.keysErr = fmt.Errorf("SOPS-encrypted, and %w", f.keysErr)
	}
	return f.keys, f.keysErr
}

// Open opens the file, its content decrypted when SOPS encrypted it; a
// directory opens as it is.
func (f *decryptFS) Open(name string) (fs.File, error) {
	info, err := fs.Stat(f.base, name)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return f.base.Open(name)
	}
	data, err := f.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &memFile{Reader: bytes.NewReader(data), info: sized{FileInfo: info, size: int64(len(data))}}, nil
}

// Stat returns the file's information as the commit has it: the size is
// the encrypted file's, which no reader of a commit relies on.
func (f *decryptFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(f.base, name) }

// ReadDir lists a directory of the commit.
func (f *decryptFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(f.base, name) }

// memFile is a decrypted file's content.
type memFile struct {
	*bytes.Reader
	info fs.FileInfo
}

func (m *memFile) Stat() (fs.FileInfo, error) { return m.info, nil }
func (m *memFile) Close() error               { return nil }

// sized is a file's information with the size of its plaintext.
type sized struct {
	fs.FileInfo
	size int64
}

func (s sized) Size() int64 { return s.size }
