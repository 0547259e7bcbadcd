package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

func TestHeadFetchSnapshot(t *testing.T) {
	remoteDir, work, first := newPushedRemote(t, "add web\n\nlonger body", map[string]string{"apps/web.yaml": "kind: Deployment\n"}, nil)

	r := newRepo(t, Config{URL: "file://" + remoteDir})
	snap := syncTo(t, r, first)
	want := Commit{Hash: first, Subject: "add web", Author: "Ada Lovelace <ada@example.com>", Time: testSignature.When}
	if snap.Commit.Hash != want.Hash || snap.Commit.Subject != want.Subject || snap.Commit.Author != want.Author || !snap.Commit.Time.Equal(want.Time) {
		t.Fatalf("Commit = %+v, want %+v", snap.Commit, want)
	}
	if got := readFile(t, snap, "apps/web.yaml"); got != "kind: Deployment\n" {
		t.Fatalf("apps/web.yaml = %q", got)
	}

	second := work.commit("scale web", map[string]string{"apps/web.yaml": "kind: Deployment\nreplicas: 3\n"}, nil)
	work.push("refs/heads/main:refs/heads/main")
	next := syncTo(t, r, second)
	if got := readFile(t, next, "apps/web.yaml"); got != "kind: Deployment\nreplicas: 3\n" {
		t.Fatalf("apps/web.yaml at second commit = %q", got)
	}
	// The first snapshot still reads its own commit.
	if got := readFile(t, snap, "apps/web.yaml"); got != "kind: Deployment\n" {
		t.Fatalf("apps/web.yaml at first commit = %q", got)
	}
}

func TestFetchSkipsServerWhenCommitIsLocal(t *testing.T) {
	remoteDir, _, head := newPushedRemote(t, "one", map[string]string{"a.yaml": "a: 1\n"}, nil)
	url := "file://" + remoteDir
	r := newRepo(t, Config{URL: url})
	syncTo(t, r, head)

	// With the server gone, a known commit needs no server; anything else does.
	if err := os.RemoveAll(remoteDir); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Fetch(ctx, head); err != nil {
		t.Fatalf("Fetch of a local commit: %v", err)
	}
	if _, err := r.Snapshot(ctx, head); err != nil {
		t.Fatalf("Snapshot of a local commit: %v", err)
	}
	_, err := r.Head(ctx)
	assertErr(t, err, "list remote refs of "+url+": repository not found")
	err = r.Fetch(ctx, strings.Repeat("b", 40))
	assertErr(t, err, "fetch main of "+url+": repository not found")
}

// TestLocalHeadFollowsTheRepository: a file URL's head follows the
// repository from poll to poll: a push, a force-push, and the repository
// replaced at the same path by one with a work tree, each seen at the
// next Head, without an error.
func TestLocalHeadFollowsTheRepository(t *testing.T) {
	remoteDir, work, first := newPushedRemote(t, "one", map[string]string{"a.yaml": "a: 1\n"}, nil)
	r := newRepo(t, Config{URL: "file://" + remoteDir})
	ctx := context.Background()
	head := func(want string) {
		t.Helper()
		got, err := r.Head(ctx)
		if err != nil || got != want {
			t.Fatalf("Head = %s, %v; want %s", got, err, want)
		}
	}
	head(first)

	second := work.commit("two", map[string]string{"a.yaml": "a: 2\n"}, nil)
	work.push("refs/heads/main:refs/heads/main")
	head(second)

	rewrite := newWorkClone(t, remoteDir)
	rewritten := rewrite.commit("new history", map[string]string{"a.yaml": "a: 3\n"}, nil)
	rewrite.push("+refs/heads/main:refs/heads/main")
	head(rewritten)

	replacement := newWorkClone(t, remoteDir)
	replaced := replacement.commit("replaced", map[string]string{"a.yaml": "a: 4\n"}, nil)
	if err := os.RemoveAll(remoteDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(replacement.dir, remoteDir); err != nil {
		t.Fatal(err)
	}
	head(replaced)
	syncTo(t, r, replaced)
}

func TestReopenKeepsClone(t *testing.T) {
	remoteDir, _, head := newPushedRemote(t, "one", map[string]string{"a.yaml": "a: 1\n"}, nil)
	dir := filepath.Join(t.TempDir(), "clone")
	syncTo(t, newRepo(t, Config{URL: "file://" + remoteDir, Dir: dir}), head)

	again := newRepo(t, Config{URL: "file://" + remoteDir, Dir: dir})
	snap, err := again.Snapshot(context.Background(), head)
	if err != nil {
		t.Fatalf("Snapshot after reopening: %v", err)
	}
	if got := readFile(t, snap, "a.yaml"); got != "a: 1\n" {
		t.Fatalf("a.yaml = %q", got)
	}
}

func TestForcePush(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(t *testing.T, remoteDir string) string
	}{
		{name: "file", serve: func(_ *testing.T, remoteDir string) string { return "file://" + remoteDir }},
		{name: "http", serve: func(t *testing.T, remoteDir string) string { return serveGitHTTP(t, remoteDir, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			remoteDir, _, old := newPushedRemote(t, "old history", map[string]string{"app.yaml": "version: 1\n"}, nil)
			r := newRepo(t, Config{URL: tc.serve(t, remoteDir)})
			syncTo(t, r, old)

			// An unrelated history replaces main.
			rewrite := newWorkClone(t, remoteDir)
			rewritten := rewrite.commit("new history", map[string]string{"app.yaml": "version: 2\n"}, nil)
			rewrite.push("+refs/heads/main:refs/heads/main")

			snap := syncTo(t, r, rewritten)
			if got := readFile(t, snap, "app.yaml"); got != "version: 2\n" {
				t.Fatalf("app.yaml after force-push = %q", got)
			}
			if snap.Commit.Subject != "new history" {
				t.Fatalf("subject = %q, want %q", snap.Commit.Subject, "new history")
			}
		})
	}
}

func TestBranchNotFound(t *testing.T) {
	for _, transport := range []string{"file", "http"} {
		for _, tc := range []struct {
			name   string
			branch string
			setup  func(t *testing.T, remoteDir string)
			want   string
		}{
			{
				name: "deleted branch",
				setup: func(t *testing.T, remoteDir string) {
					work := newWorkClone(t, remoteDir)
					work.commit("one", map[string]string{"a.yaml": "a: 1\n"}, nil)
					work.push("refs/heads/main:refs/heads/main")
					work.push("refs/heads/main:refs/heads/keep")
					remote, err := git.PlainOpen(remoteDir)
					if err != nil {
						t.Fatal(err)
					}
					// The server refuses to delete the branch its HEAD names.
					if err := remote.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, "refs/heads/keep")); err != nil {
						t.Fatal(err)
					}
					work.push(":refs/heads/main")
				},
				want: "branch not found: refs/heads/main",
			},
			{
				name:  "empty repository",
				setup: func(*testing.T, string) {},
				want:  "branch not found: refs/heads/main (the repository is empty)",
			},
			{
				name:   "branch never existed",
				branch: "release",
				setup: func(t *testing.T, remoteDir string) {
					work := newWorkClone(t, remoteDir)
					work.commit("one", map[string]string{"a.yaml": "a: 1\n"}, nil)
					work.push("refs/heads/main:refs/heads/main")
				},
				want: "branch not found: refs/heads/release",
			},
		} {
			t.Run(transport+"/"+tc.name, func(t *testing.T) {
				remoteDir, _ := newBareRemote(t)
				tc.setup(t, remoteDir)
				url := "file://" + remoteDir
				if transport == "http" {
					url = serveGitHTTP(t, remoteDir, nil)
				}
				r := newRepo(t, Config{URL: url, Branch: tc.branch})
				_, err := r.Head(context.Background())
				if !errors.Is(err, ErrBranchNotFound) {
					t.Fatalf("Head error = %v, want ErrBranchNotFound", err)
				}
				assertErr(t, err, "list remote refs of "+url+": "+tc.want)

				err = r.Fetch(context.Background(), strings.Repeat("c", 40))
				if !errors.Is(err, ErrBranchNotFound) {
					t.Fatalf("Fetch error = %v, want ErrBranchNotFound", err)
				}
			})
		}
	}
}

func TestFetchAndSnapshotErrors(t *testing.T) {
	remoteDir, _, head := newPushedRemote(t, "one", map[string]string{"a.yaml": "a: 1\n"}, nil)
	url := "file://" + remoteDir
	missing := strings.Repeat("a", 40)

	for _, tc := range []struct {
		name string
		call func(r *Repository) error
		want string
	}{
		{
			name: "snapshot before fetch",
			call: func(r *Repository) error { _, err := r.Snapshot(context.Background(), head); return err },
			want: "read commit " + head + ": not in the local clone (fetch it first)",
		},
		{
			name: "commit not on the branch",
			call: func(r *Repository) error { return r.Fetch(context.Background(), missing) },
			want: "fetch main of " + url + ": commit " + missing + " is not on the branch, which now points at " + head,
		},
		{
			name: "short hash to fetch",
			call: func(r *Repository) error { return r.Fetch(context.Background(), "abc123") },
			want: `fetch main of ` + url + `: commit hash "abc123" is not a full hexadecimal object name`,
		},
		{
			name: "empty hash to snapshot",
			call: func(r *Repository) error { _, err := r.Snapshot(context.Background(), ""); return err },
			want: `read commit: commit hash "" is not a full hexadecimal object name`,
		},
		{
			name: "cancelled context",
			call: func(r *Repository) error {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_, err := r.Head(ctx)
				return err
			},
			want: "list remote refs of " + url + ": context canceled",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t, Config{URL: url})
			assertErr(t, tc.call(r), tc.want)
		})
	}
}

func TestConcurrentCalls(t *testing.T) {
	remoteDir, _, head := newPushedRemote(t, "one", map[string]string{"a.yaml": "a: 1\n"}, nil)
	r := newRepo(t, Config{URL: "file://" + remoteDir})

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			ctx := context.Background()
			for range 5 {
				got, err := r.Head(ctx)
				if err == nil && got != head {
					err = errors.New("Head = " + got)
				}
				if err == nil {
					err = r.Fetch(ctx, got)
				}
				var snap *Snapshot
				if err == nil {
					snap, err = r.Snapshot(ctx, got)
				}
				if err == nil {
					var data []byte
					data, err = snap.FS.(interface{ ReadFile(string) ([]byte, error) }).ReadFile("a.yaml")
					if err == nil && string(data) != "a: 1\n" {
						err = errors.New("a.yaml = " + string(data))
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call: %v", err)
	}
}
