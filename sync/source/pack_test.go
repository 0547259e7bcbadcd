package source

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// historyWithDeltas makes a repository with git whose pack is full of
// deltas: 30 revisions of a 60 KB text file (a chain of deltas), and two
// revisions of a 6 MB file (a delta whose base is larger than the memory
// spool), repacked with a deep window. It returns the bare repository.
func historyWithDeltas(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a",
			"GIT_COMMITTER_EMAIL=a@b", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(work, "init", "-q", "-b", "main")
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 6<<20)
	for i := range big {
		big[i] = byte(rng.IntN(256))
	}
	var text strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&text, "line %d of the configuration\n", i)
	}
	lines := strings.SplitAfter(text.String(), "\n")
	for rev := range 30 {
		lines[rev*50] = fmt.Sprintf("revision %d changed this line\n", rev)
		if err := os.WriteFile(filepath.Join(work, "app.conf"), []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		if rev < 2 {
			big[rev*4096] ^= 0xff
			if err := os.WriteFile(filepath.Join(work, "big.bin"), big, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run(work, "add", "-A")
		run(work, "commit", "-q", "-m", fmt.Sprintf("revision %d", rev))
	}
	run(work, "repack", "-adfq", "--depth=50", "--window=50")
	return work
}

// checkEveryObject reads every object of the pack's index back from st
// and checks that its content hashes to its name.
func checkEveryObject(t *testing.T, st *filesystem.Storage, want int) {
	t.Helper()
	iter, err := st.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = iter.ForEach(func(o plumbing.EncodedObject) error {
		r, err := o.Reader()
		if err != nil {
			return err
		}
		defer func() { _ = r.Close() }()
		h := plumbing.NewHasher(o.Type(), o.Size())
		if _, err := io.Copy(h, r); err != nil {
			return err
		}
		if got := h.Sum(); got != o.Hash() {
			return fmt.Errorf("object %s reads back as %s", o.Hash(), got)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("clone holds %d objects, want %d", n, want)
	}
}

func newClone(t *testing.T) clone {
	t.Helper()
	c, err := openClone(t.TempDir(), defaultMaxFileBytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStorePackResolvesDeltas(t *testing.T) {
	work := historyWithDeltas(t)
	list, err := exec.Command("git", "-C", work, "rev-list", "--objects", "--all").Output()
	if err != nil {
		t.Fatal(err)
	}
	objects := strings.Count(string(list), "\n")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "offset deltas", args: []string{"--delta-base-offset"}},
		{name: "reference deltas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("git", append([]string{"-C", work, "pack-objects", "--stdout", "--revs", "-q"}, tc.args...)...)
			cmd.Stdin = strings.NewReader("main\n")
			pack, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			if deltas := countDeltas(t, pack); deltas < 29 {
				t.Fatalf("git packed %d deltas; the test needs a chain", deltas)
			}
			c := newClone(t)
			if err := c.storePack(bytes.NewReader(pack)); err != nil {
				t.Fatalf("store pack: %v", err)
			}
			checkEveryObject(t, c.storage, objects)
			assertOnlyPacks(t, c.packDir)
		})
	}
}

// countDeltas counts the deltas of a pack.
func countDeltas(t *testing.T, pack []byte) int {
	t.Helper()
	s := packfile.NewScanner(bytes.NewReader(pack))
	_, count, err := s.Header()
	if err != nil {
		t.Fatal(err)
	}
	deltas := 0
	for range count {
		oh, err := s.NextObjectHeader()
		if err != nil {
			t.Fatal(err)
		}
		if oh.Type.IsDelta() {
			deltas++
		}
		if _, _, err := s.NextObject(io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	return deltas
}

// assertOnlyPacks fails if dir holds anything but packs and their indexes:
// no temporary file may outlive storePack.
func assertOnlyPacks(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "pack-") {
			t.Errorf("%s left in the pack directory", e.Name())
		}
	}
}

func TestStorePackRefusesDamage(t *testing.T) {
	work := historyWithDeltas(t)
	cmd := exec.Command("git", "-C", work, "pack-objects", "--stdout", "--revs", "-q", "--delta-base-offset")
	cmd.Stdin = strings.NewReader("main\n")
	pack, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(pack)
	flipped[len(flipped)/2] ^= 0x01
	// A pack whose only object is a delta against an object it lacks (a
	// thin pack, which is never asked for).
	thin := &bytes.Buffer{}
	thin.WriteString("PACK\x00\x00\x00\x02\x00\x00\x00\x01")
	thin.WriteByte(byte(plumbing.REFDeltaObject)<<4 | 4)
	thin.Write(bytes.Repeat([]byte{0xab}, 20))
	thin.Write(zlibBytes(t, []byte{1, 1, 0x90, 1}))
	thin.Write(sha1Of(thin.Bytes()))

	for _, tc := range []struct {
		name string
		pack []byte
		want string
	}{
		{name: "empty", pack: nil, want: "empty packfile"},
		{name: "truncated", pack: pack[:len(pack)/2], want: "index pack"},
		{name: "a flipped bit", pack: flipped, want: "index pack"},
		{name: "thin", pack: thin.Bytes(), want: "its base is not in the pack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClone(t)
			err := c.storePack(bytes.NewReader(tc.pack))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("store pack: %v, want an error containing %q", err, tc.want)
			}
			entries, _ := os.ReadDir(c.packDir)
			if len(entries) != 0 {
				t.Fatalf("a refused pack left %d files in the pack directory", len(entries))
			}
		})
	}
}

// TestLocalFetchStreams fetches a file URL repository with a blob of
// 3 MiB (over localLazyObject) and reads it back: the pack the local
// upstream writes is whole objects only, and correct.
func TestLocalFetchStreams(t *testing.T) {
	work := historyWithDeltas(t)
	r := newRepo(t, Config{URL: "file://" + work, MaxFileBytes: 8 << 20})
	head, err := exec.Command("git", "-C", work, "rev-parse", "main").Output()
	if err != nil {
		t.Fatal(err)
	}
	snap := syncTo(t, r, strings.TrimSpace(string(head)))
	want, err := os.ReadFile(filepath.Join(work, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, snap, "big.bin"); got != string(want) {
		t.Fatalf("big.bin reads back %d bytes, want the %d in the work tree", len(got), len(want))
	}
	list, err := exec.Command("git", "-C", work, "rev-list", "--objects", "--all").Output()
	if err != nil {
		t.Fatal(err)
	}
	checkEveryObject(t, r.storage, strings.Count(string(list), "\n"))
}

func zlibBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha1Of(b []byte) []byte {
	sum := sha1.Sum(b)
	return sum[:]
}
