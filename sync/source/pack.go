package source

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Memory bounds of storing a pack. An object is held in memory while its
// deltas are applied only when it is at most spoolInMemory bytes and the
// objects already held add up to no more than spoolBudget with it; any
// other goes to a temporary file next to the pack. A 200 MB blob that is
// the base of a delta is thus read from disk, and a chain of 50 deltas of
// 4 MiB files holds 32 MiB, not 200.
const (
	spoolInMemory = 4 << 20
	spoolBudget   = 32 << 20
	// maxDeltaDepth bounds a chain of deltas (git's own default is 50).
	maxDeltaDepth = 4095
	tmpPackPrefix = "tmp_pack_"
	tmpObjPrefix  = "tmp_obj_"
)

// clone is the local bare clone: its object storage and the directory its
// packs live in.
type clone struct {
	storage *filesystem.Storage
	packDir string
}

// have names the commit the clone's branch points at, when the clone holds
// it: what a fetch need not send again.
func (c clone) have(branch plumbing.ReferenceName) []plumbing.Hash {
	local, err := c.storage.Reference(branch)
	if err != nil || c.storage.HasEncodedObject(local.Hash()) != nil {
		return nil
	}
	return []plumbing.Hash{local.Hash()}
}

// packEntry is one object of a pack being indexed.
type packEntry struct {
	offset int64
	crc    uint32
	// typ and hash are known at once for a whole object, and for a delta
	// once it is resolved against its base.
	typ  plumbing.ObjectType
	hash plumbing.Hash
	// delta is set for a delta; its base is baseOffset (an offset delta) or
	// baseHash (a reference delta).
	delta      bool
	baseOffset int64
	baseHash   plumbing.Hash
	resolved   bool
}

// storePack reads a pack from r into the clone and indexes it, in memory
// bounded by spoolBudget whatever the objects' sizes. go-git's own pack
// writer reads every object whole to index it, so one 200 MB blob anywhere
// in the repository costs 200 MB of memory; here a whole object is hashed
// as it streams by, and only the bases of deltas are read back.
func (c clone) storePack(r io.Reader) (err error) {
	if err := os.MkdirAll(c.packDir, 0o700); err != nil {
		return fmt.Errorf("create pack directory: %w", err)
	}
	f, err := os.CreateTemp(c.packDir, tmpPackPrefix)
	if err != nil {
		return fmt.Errorf("create pack file: %w", err)
	}
	defer func() {
		_ = f.Close()
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	n, err := io.Copy(f, r)
	if err != nil {
		return fmt.Errorf("receive pack: %w", err)
	}
	if n == 0 {
		return packfile.ErrEmptyPackfile
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read pack: %w", err)
	}

	ix := &packIndexer{scanner: packfile.NewScanner(f), dir: c.packDir}
	sum, err := ix.index()
	if err != nil {
		return fmt.Errorf("index pack: %w", err)
	}
	idx, err := ix.writeIndex(sum)
	if err != nil {
		return err
	}
	// The index goes in first: readers list the packs by their .pack
	// files, so a pack without its index would be an error to them, while
	// an index without its pack is not seen.
	base := filepath.Join(c.packDir, "pack-"+sum.String())
	if err := os.Rename(idx, base+".idx"); err != nil {
		_ = os.Remove(idx)
		return fmt.Errorf("store pack index: %w", err)
	}
	if err := os.Rename(f.Name(), base+".pack"); err != nil {
		return fmt.Errorf("store pack: %w", err)
	}
	c.storage.Reindex()
	return nil
}

// packIndexer computes the object names of a pack stored in a file.
type packIndexer struct {
	scanner *packfile.Scanner
	dir     string
	entries []*packEntry
	// children lists the deltas of each base, by offset and by name.
	byOffset map[int64][]*packEntry
	byHash   map[plumbing.Hash][]*packEntry
	// held is the object content in memory right now.
	held int64
}

// index reads the pack once, hashing every whole object as it streams by,
// then resolves every delta against its base, and returns the pack's
// checksum (which names it).
func (ix *packIndexer) index() (plumbing.Hash, error) {
	_, count, err := ix.scanner.Header()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	ix.entries = make([]*packEntry, 0, count)
	ix.byOffset = map[int64][]*packEntry{}
	ix.byHash = map[plumbing.Hash][]*packEntry{}
	for range count {
		oh, err := ix.scanner.NextObjectHeader()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		e := &packEntry{offset: oh.Offset, typ: oh.Type}
		var w io.Writer = io.Discard
		var hasher plumbing.Hasher
		switch oh.Type {
		case plumbing.OFSDeltaObject:
			e.delta, e.baseOffset = true, oh.OffsetReference
			ix.byOffset[e.baseOffset] = append(ix.byOffset[e.baseOffset], e)
		case plumbing.REFDeltaObject:
			e.delta, e.baseHash = true, oh.Reference
			ix.byHash[e.baseHash] = append(ix.byHash[e.baseHash], e)
		default:
			hasher = plumbing.NewHasher(oh.Type, oh.Length)
			w = hasher
		}
		if _, e.crc, err = ix.scanner.NextObject(w); err != nil {
			return plumbing.ZeroHash, err
		}
		if !e.delta {
			e.hash, e.resolved = hasher.Sum(), true
		}
		ix.entries = append(ix.entries, e)
	}
	sum, err := ix.scanner.Checksum()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for _, e := range ix.entries {
		if !e.delta && ix.hasChildren(e) {
			if err := ix.resolveChildren(e, nil, 0); err != nil {
				return plumbing.ZeroHash, err
			}
		}
	}
	for _, e := range ix.entries {
		if !e.resolved {
			return plumbing.ZeroHash, fmt.Errorf("delta at offset %d: its base is not in the pack", e.offset)
		}
	}
	return sum, nil
}

func (ix *packIndexer) hasChildren(e *packEntry) bool {
	return len(ix.byOffset[e.offset]) > 0 || len(ix.byHash[e.hash]) > 0
}

// resolveChildren names every delta whose base is e, depth first. content
// is e's content, or nil for a whole object, which is then read from the
// pack.
func (ix *packIndexer) resolveChildren(e *packEntry, content *spool, depth int) (err error) {
	if depth > maxDeltaDepth {
		return fmt.Errorf("delta chain at offset %d is deeper than %d", e.offset, maxDeltaDepth)
	}
	if content == nil {
		oh, err := ix.scanner.SeekObjectHeader(e.offset)
		if err != nil {
			return err
		}
		if content, err = ix.newSpool(oh.Length); err != nil {
			return err
		}
		if _, _, err := ix.scanner.NextObject(content); err != nil {
			ix.release(content)
			return err
		}
	}
	defer ix.release(content)

	children := append(append([]*packEntry(nil), ix.byOffset[e.offset]...), ix.byHash[e.hash]...)
	delete(ix.byHash, e.hash)
	for _, child := range children {
		if child.resolved {
			continue
		}
		target, err := ix.applyDelta(child, e.typ, content)
		if err != nil {
			return fmt.Errorf("delta at offset %d: %w", child.offset, err)
		}
		if target == nil {
			continue
		}
		if err := ix.resolveChildren(child, target, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// applyDelta resolves child against its base's content: it learns the
// child's type and name, and returns its content when other deltas are
// based on it (nil otherwise).
func (ix *packIndexer) applyDelta(child *packEntry, typ plumbing.ObjectType, base *spool) (*spool, error) {
	if _, err := ix.scanner.SeekObjectHeader(child.offset); err != nil {
		return nil, err
	}
	delta, err := ix.scanner.ReadObject()
	if err != nil {
		return nil, err
	}
	defer func() { _ = delta.Close() }()
	d := newDeltaReader(delta)
	srcSize, dstSize, err := d.header()
	if err != nil {
		return nil, err
	}
	if srcSize != base.size {
		return nil, fmt.Errorf("delta is for a base of %d bytes, the base has %d", srcSize, base.size)
	}
	hasher := plumbing.NewHasher(typ, dstSize)
	var w io.Writer = hasher
	var target *spool
	child.typ = typ
	// The name is needed before the children can be found by it.
	hasKids := len(ix.byOffset[child.offset]) > 0
	if hasKids || len(ix.byHash) > 0 {
		if target, err = ix.newSpool(dstSize); err != nil {
			return nil, err
		}
		w = io.MultiWriter(hasher, target)
	}
	if err := d.apply(w, base, dstSize); err != nil {
		ix.release(target)
		return nil, err
	}
	child.hash, child.resolved = hasher.Sum(), true
	if target != nil && !ix.hasChildren(child) {
		ix.release(target)
		return nil, nil
	}
	return target, nil
}

// writeIndex writes the pack's index to a temporary file and returns its
// name.
func (ix *packIndexer) writeIndex(sum plumbing.Hash) (name string, err error) {
	w := new(idxfile.Writer)
	if err := w.OnHeader(uint32(len(ix.entries))); err != nil {
		return "", err
	}
	for _, e := range ix.entries {
		w.Add(e.hash, uint64(e.offset), e.crc)
	}
	if err := w.OnFooter(sum); err != nil {
		return "", fmt.Errorf("index pack: %w", err)
	}
	idx, err := w.Index()
	if err != nil {
		return "", fmt.Errorf("index pack: %w", err)
	}
	f, err := os.CreateTemp(ix.dir, tmpPackPrefix)
	if err != nil {
		return "", fmt.Errorf("create pack index: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write pack index: %w", cerr)
		}
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := idxfile.NewEncoder(f).Encode(idx); err != nil {
		return "", fmt.Errorf("write pack index: %w", err)
	}
	return f.Name(), nil
}

// spool is an object's content, in memory or in a temporary file,
// readable at any offset while its deltas are applied.
type spool struct {
	size int64
	mem  *bytes.Buffer
	file *os.File
	n    int64
}

// newSpool makes room for size bytes: in memory when they fit the budget,
// in a temporary file otherwise.
func (ix *packIndexer) newSpool(size int64) (*spool, error) {
	if size <= spoolInMemory && ix.held+size <= spoolBudget {
		ix.held += size
		return &spool{size: size, mem: bytes.NewBuffer(make([]byte, 0, size))}, nil
	}
	f, err := os.CreateTemp(ix.dir, tmpObjPrefix)
	if err != nil {
		return nil, fmt.Errorf("create temporary object file: %w", err)
	}
	return &spool{size: size, file: f}, nil
}

// release gives back s's memory or removes its file; nil is allowed.
func (ix *packIndexer) release(s *spool) {
	switch {
	case s == nil:
	case s.mem != nil:
		ix.held -= s.size
		s.mem = nil
	case s.file != nil:
		_ = s.file.Close()
		_ = os.Remove(s.file.Name())
		s.file = nil
	}
}

// Write appends to the content, never past its declared size.
func (s *spool) Write(p []byte) (int, error) {
	if s.n+int64(len(p)) > s.size {
		return 0, fmt.Errorf("object is longer than its declared %d bytes", s.size)
	}
	var n int
	var err error
	if s.mem != nil {
		n, err = s.mem.Write(p)
	} else {
		n, err = s.file.Write(p)
	}
	s.n += int64(n)
	return n, err
}

// ReadAt reads the content written so far.
func (s *spool) ReadAt(p []byte, off int64) (int, error) {
	if s.mem != nil {
		return bytes.NewReader(s.mem.Bytes()).ReadAt(p, off)
	}
	return s.file.ReadAt(p, off)
}
