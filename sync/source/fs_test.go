package source

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// testFileLimit is the MaxFileBytes of the FS tests.
const testFileLimit = 1024

// snapshotOf writes a commit of files into a fresh remote and returns the
// snapshot a Repository reads of it.
func snapshotOf(t *testing.T, files map[string]treeFile) *Snapshot {
	t.Helper()
	remoteDir, remote := newBareRemote(t)
	head := writeCommit(t, remote.Storer, files)
	r := newRepo(t, Config{URL: "file://" + remoteDir, MaxFileBytes: testFileLimit})
	return syncTo(t, r, head)
}

// A tree with nothing unusual passes the standard FS conformance checks.
func TestFSConformance(t *testing.T) {
	snap := snapshotOf(t, map[string]treeFile{
		"README.md":             file("# demo\n"),
		"apps/web.yaml":         file("kind: Deployment\n"),
		"apps/db/statefulset.y": file("kind: StatefulSet\n"),
		"apps/link.yaml":        symlink("web.yaml"),
		"apps/shared":           symlink("../base"),
		"base/common.yaml":      file("kind: ConfigMap\n"),
		"hack/run.sh":           {mode: filemode.Executable, content: "#!/bin/sh\n"},
		"vendor/lib":            gitlink(plumbing.NewHash(strings.Repeat("e", 40))),
	})
	if err := fstest.TestFS(snap.FS,
		"README.md", "apps/web.yaml", "apps/db/statefulset.y", "apps/link.yaml", "apps/shared",
		"base/common.yaml", "hack/run.sh"); err != nil {
		t.Fatal(err)
	}
}

func TestFSWalk(t *testing.T) {
	snap := snapshotOf(t, map[string]treeFile{
		"apps/web.yaml":    file("kind: Deployment\n"),
		"apps/link.yaml":   symlink("web.yaml"),
		"apps/shared":      symlink("../base"),
		"apps/loop":        symlink("."),
		"base/common.yaml": file("kind: ConfigMap\n"),
		"vendor/lib":       gitlink(plumbing.NewHash(strings.Repeat("e", 40))),
	})
	var got []string
	err := fs.WalkDir(snap.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		got = append(got, p+" "+d.Type().String())
		return nil
	})
	if err != nil {
		t.Fatalf("WalkDir: %v", err)
	}
	want := []string{
		". d---------",
		"apps d---------",
		"apps/link.yaml L---------",
		"apps/loop L---------",
		"apps/shared L---------",
		"apps/web.yaml ----------",
		"base d---------",
		"base/common.yaml ----------",
		"vendor d---------",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("WalkDir visited\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestFSSymlinksInside(t *testing.T) {
	snap := snapshotOf(t, map[string]treeFile{
		"apps/web.yaml":     file("kind: Deployment\n"),
		"apps/link.yaml":    symlink("web.yaml"),
		"apps/chain.yaml":   symlink("link.yaml"),
		"apps/shared":       symlink("../base"),
		"apps/dotted.yaml":  symlink("./../apps/./web.yaml"),
		"apps/via-dir.yaml": symlink("shared/../apps/web.yaml"),
		"base/common.yaml":  file("kind: ConfigMap\n"),
	})
	for _, tc := range []struct {
		name, path, want string
	}{
		{name: "link to a sibling", path: "apps/link.yaml", want: "kind: Deployment\n"},
		{name: "chain of links", path: "apps/chain.yaml", want: "kind: Deployment\n"},
		{name: "through a linked directory", path: "apps/shared/common.yaml", want: "kind: ConfigMap\n"},
		{name: "dot elements in the target", path: "apps/dotted.yaml", want: "kind: Deployment\n"},
		// ".." after a linked directory climbs from where the link points
		// (base), as the kernel resolves it.
		{name: "dot-dot after a linked directory", path: "apps/via-dir.yaml", want: "kind: Deployment\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readFile(t, snap, tc.path); got != tc.want {
				t.Fatalf("%s = %q, want %q", tc.path, got, tc.want)
			}
			info, err := fs.Stat(snap.FS, tc.path)
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			if info.Size() != int64(len(tc.want)) || !info.Mode().IsRegular() {
				t.Fatalf("Stat = size %d mode %s, want a regular file of %d bytes", info.Size(), info.Mode(), len(tc.want))
			}
		})
	}
	target, err := fs.ReadLink(snap.FS, "apps/chain.yaml")
	if err != nil || target != "link.yaml" {
		t.Fatalf("ReadLink(apps/chain.yaml) = %q, %v; want link.yaml", target, err)
	}
	info, err := fs.Lstat(snap.FS, "apps/shared")
	if err != nil || info.Mode().Type() != fs.ModeSymlink || info.Size() != int64(len("../base")) {
		t.Fatalf("Lstat(apps/shared) = %v, %v; want a symlink of 7 bytes", info, err)
	}
	_, err = fs.ReadLink(snap.FS, "apps/web.yaml")
	assertErr(t, err, "readlink apps/web.yaml: not a symlink")
	entries, err := fs.ReadDir(snap.FS, "apps/shared")
	if err != nil || len(entries) != 1 || entries[0].Name() != "common.yaml" {
		t.Fatalf("ReadDir of a linked directory = %v, %v", entries, err)
	}
}

func TestFSRefusesEscapes(t *testing.T) {
	snap := snapshotOf(t, map[string]treeFile{
		"abs/evil.yaml":     symlink("/etc/passwd"),
		"rel/evil.yaml":     symlink("../../outside.yaml"),
		"rel/deep.yaml":     symlink("../abs/../../etc/shadow"),
		"chain/a.yaml":      symlink("hop/b.yaml"),
		"chain/hop":         symlink("../hop"),
		"hop/b.yaml":        symlink("../../secret"),
		"dirlink/up":        symlink(".."),
		"dirlink/escape":    symlink("up/../x"),
		"loop/self":         symlink("self"),
		"dangling/gone":     symlink("nothing-here"),
		"big/huge.yaml":     file(strings.Repeat("x", testFileLimit+1)),
		"big/exact.yaml":    file(strings.Repeat("y", testFileLimit)),
		"big/link.yaml":     symlink("huge.yaml"),
		"sub/module":        gitlink(plumbing.NewHash(strings.Repeat("e", 40))),
		"sub/readme.md":     file("hi\n"),
		"plain/config.yaml": file("a: 1\n"),
	})
	fsys := snap.FS

	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{name: "absolute symlink, open", call: openErr(fsys, "abs/evil.yaml"), want: "open abs/evil.yaml: symlink abs/evil.yaml -> /etc/passwd leaves the repository"},
		{name: "absolute symlink, read", call: readErr(fsys, "abs/evil.yaml"), want: "open abs/evil.yaml: symlink abs/evil.yaml -> /etc/passwd leaves the repository"},
		{name: "absolute symlink, stat", call: statErr(fsys, "abs/evil.yaml"), want: "stat abs/evil.yaml: symlink abs/evil.yaml -> /etc/passwd leaves the repository"},
		{name: "absolute symlink, list", call: readDirErr(fsys, "abs"), want: "readdir abs: symlink abs/evil.yaml -> /etc/passwd leaves the repository"},
		{name: "absolute symlink, lstat", call: func() error { _, err := fs.Lstat(fsys, "abs/evil.yaml"); return err }, want: "lstat abs/evil.yaml: symlink abs/evil.yaml -> /etc/passwd leaves the repository"},
		{name: "absolute symlink, readlink", call: func() error { _, err := fs.ReadLink(fsys, "abs/evil.yaml"); return err }, want: "readlink abs/evil.yaml: symlink abs/evil.yaml -> /etc/passwd leaves the repository"},
		{name: "relative symlink escaping", call: readErr(fsys, "rel/evil.yaml"), want: "open rel/evil.yaml: symlink rel/evil.yaml -> ../../outside.yaml leaves the repository"},
		{name: "relative symlink escaping after a detour", call: readErr(fsys, "rel/deep.yaml"), want: "open rel/deep.yaml: symlink rel/deep.yaml -> ../abs/../../etc/shadow leaves the repository"},
		{name: "chain escaping", call: readErr(fsys, "chain/a.yaml"), want: "open chain/a.yaml: symlink hop/b.yaml -> ../../secret leaves the repository"},
		{name: "chain escaping, list", call: readDirErr(fsys, "chain"), want: "readdir chain: symlink hop/b.yaml -> ../../secret leaves the repository"},
		{name: "escape through a linked directory", call: readErr(fsys, "dirlink/escape"), want: "open dirlink/escape: symlink dirlink/escape -> up/../x leaves the repository"},
		{name: "symlink loop", call: readErr(fsys, "loop/self"), want: "open loop/self: too many levels of symlinks at loop/self (more than 10)"},
		{name: "dangling symlink", call: readErr(fsys, "dangling/gone"), want: "open dangling/gone: file does not exist"},
		{name: "dangling symlink, list", call: readDirErr(fsys, "dangling"), want: "readdir dangling: symlink dangling/gone: file does not exist"},
		{name: "dot-dot path", call: readErr(fsys, "../etc/passwd"), want: "open ../etc/passwd: invalid argument: not a slash path inside the repository"},
		{name: "dot-dot inside a path", call: openErr(fsys, "plain/../../x"), want: "open plain/../../x: invalid argument: not a slash path inside the repository"},
		{name: "absolute path", call: statErr(fsys, "/etc/passwd"), want: "stat /etc/passwd: invalid argument: not a slash path inside the repository"},
		{name: "oversized file, open", call: openErr(fsys, "big/huge.yaml"), want: "open big/huge.yaml: file big/huge.yaml is 1025 bytes, over the limit of 1024 bytes"},
		{name: "oversized file, read", call: readErr(fsys, "big/huge.yaml"), want: "open big/huge.yaml: file big/huge.yaml is 1025 bytes, over the limit of 1024 bytes"},
		{name: "oversized file through a link", call: readErr(fsys, "big/link.yaml"), want: "open big/link.yaml: file big/huge.yaml is 1025 bytes, over the limit of 1024 bytes"},
		{name: "submodule", call: openErr(fsys, "sub/module"), want: "open sub/module: sub/module is a submodule, not a file or directory"},
		{name: "missing file", call: readErr(fsys, "plain/nope.yaml"), want: "open plain/nope.yaml: file does not exist"},
		{name: "file used as a directory", call: readErr(fsys, "plain/config.yaml/x"), want: "open plain/config.yaml/x: plain/config.yaml is not a directory"},
		{name: "directory read as a file", call: readErr(fsys, "plain"), want: "open plain: is a directory"},
		{name: "file listed as a directory", call: readDirErr(fsys, "plain/config.yaml"), want: "readdir plain/config.yaml: not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			assertErr(t, err, tc.want)
			var pathErr *fs.PathError
			if !errors.As(err, &pathErr) {
				t.Fatalf("error %T is not an *fs.PathError", err)
			}
		})
	}

	t.Run("missing file is fs.ErrNotExist", func(t *testing.T) {
		if _, err := fs.ReadFile(fsys, "plain/nope.yaml"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("error = %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("file at the limit reads", func(t *testing.T) {
		if got := readFile(t, snap, "big/exact.yaml"); len(got) != testFileLimit {
			t.Fatalf("read %d bytes, want %d", len(got), testFileLimit)
		}
	})
	t.Run("oversized file still stats", func(t *testing.T) {
		info, err := fs.Stat(fsys, "big/huge.yaml")
		if err != nil || info.Size() != testFileLimit+1 {
			t.Fatalf("Stat = %v, %v; want size %d", info, err, testFileLimit+1)
		}
	})
	t.Run("submodule left out of listings", func(t *testing.T) {
		entries, err := fs.ReadDir(fsys, "sub")
		if err != nil || len(entries) != 1 || entries[0].Name() != "readme.md" {
			t.Fatalf("ReadDir(sub) = %v, %v; want only readme.md", entries, err)
		}
	})
}

func TestFSOpenFile(t *testing.T) {
	snap := snapshotOf(t, map[string]treeFile{
		"apps/web.yaml": file("kind: Deployment\n"),
		"hack/run.sh":   {mode: filemode.Executable, content: "#!/bin/sh\n"},
	})
	f, err := snap.FS.Open("apps/web.yaml")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	data, err := io.ReadAll(f)
	if err != nil || string(data) != "kind: Deployment\n" {
		t.Fatalf("ReadAll = %q, %v", data, err)
	}
	info, err := f.Stat()
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if info.Name() != "web.yaml" || info.Mode() != 0o444 || !info.ModTime().Equal(testSignature.When) {
		t.Fatalf("Stat = %s %s %s", info.Name(), info.Mode(), info.ModTime())
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("Read after Close = %v, want fs.ErrClosed", err)
	}

	exec, err := fs.Stat(snap.FS, "hack/run.sh")
	if err != nil || exec.Mode() != 0o555 {
		t.Fatalf("Stat(hack/run.sh) = %v, %v; want mode 0555", exec, err)
	}
	root, err := fs.Stat(snap.FS, ".")
	if err != nil || root.Mode() != fs.ModeDir|0o555 {
		t.Fatalf("Stat(.) = %v, %v; want a read-only directory", root, err)
	}
}

// The FS keeps working while the Repository fetches newer commits.
func TestFSOutlivesFetch(t *testing.T) {
	remoteDir, work, first := newPushedRemote(t, "one", map[string]string{"a.yaml": "a: 1\n"}, nil)
	r := newRepo(t, Config{URL: "file://" + remoteDir})
	snap := syncTo(t, r, first)
	second := work.commit("two", map[string]string{"a.yaml": "a: 2\n"}, nil)
	work.push("refs/heads/main:refs/heads/main")
	if err := r.Fetch(context.Background(), second); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if got := readFile(t, snap, "a.yaml"); got != "a: 1\n" {
		t.Fatalf("a.yaml = %q", got)
	}
}

func openErr(fsys fs.FS, name string) func() error {
	return func() error {
		f, err := fsys.Open(name)
		if err == nil {
			_ = f.Close()
		}
		return err
	}
}

func readErr(fsys fs.FS, name string) func() error {
	return func() error { _, err := fs.ReadFile(fsys, name); return err }
}

func statErr(fsys fs.FS, name string) func() error {
	return func() error { _, err := fs.Stat(fsys, name); return err }
}

func readDirErr(fsys fs.FS, name string) func() error {
	return func() error { _, err := fs.ReadDir(fsys, name); return err }
}
