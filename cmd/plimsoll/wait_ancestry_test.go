package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/internal/revision"
)

// gitIn runs git in dir and returns its output, trimmed.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@plimsoll.dev"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestRepoAncestry asks a clone of a repository whose branch goes
// a1 <- x2 <- y3, then is force-pushed to z2 on a1, how each applied
// commit stands to x2.
func TestRepoAncestry(t *testing.T) {
	dir := t.TempDir()
	remote, work := filepath.Join(dir, "remote.git"), filepath.Join(dir, "work")
	gitIn(t, dir, "init", "--quiet", "--bare", "--initial-branch=main", remote)
	gitIn(t, dir, "clone", "--quiet", remote, work)
	commit := func(subject string) string {
		gitIn(t, work, "commit", "--quiet", "--allow-empty", "-m", subject)
		gitIn(t, work, "push", "--quiet", "--force", "origin", "HEAD:refs/heads/main")
		return gitIn(t, work, "rev-parse", "HEAD")
	}
	a1 := commit("a1")
	x2 := commit("x2")
	y3 := commit("y3")

	anc, err := newRepoAncestry(&sourceOptions{repo: "file://" + remote, branch: "main", cacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(applied string, want ancestry) {
		t.Helper()
		got, err := anc.relate(ctx, x2, applied)
		if err != nil || got != want {
			t.Errorf("relate(x2, %s) = %+v, %v; want %+v", revision.Short(applied), got, err, want)
		}
	}
	check(x2, ancestry{rel: relSame})
	check(a1, ancestry{rel: relPending})
	check(y3, ancestry{rel: relContains, by: y3})

	gitIn(t, work, "reset", "--quiet", "--hard", a1)
	z2 := commit("z2")
	check(z2, ancestry{rel: relReplaced, by: z2})
	check(y3, ancestry{rel: relContains, by: y3}) // asked before: the answer is kept
}
