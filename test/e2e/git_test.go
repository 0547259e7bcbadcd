//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// gitRepo is a bare repository served at file://, and a work tree that
// commits and pushes to it, driven with the git command as a user would.
type gitRepo struct {
	t      *testing.T
	bare   string
	work   string
	branch string
}

// newGitRepo creates an empty bare repository and a clone of it.
func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	dir := t.TempDir()
	r := &gitRepo{t: t, bare: filepath.Join(dir, "remote.git"), work: filepath.Join(dir, "work"), branch: "main"}
	r.git(dir, "init", "--quiet", "--bare", "--initial-branch=main", r.bare)
	r.git(dir, "init", "--quiet", "--initial-branch=main", r.work)
	r.git(r.work, "remote", "add", "origin", r.bare)
	return r
}

// URL is the repository's file:// URL.
func (r *gitRepo) URL() string { return "file://" + r.bare }

// write puts files (path -> content) in the work tree; an empty content
// removes the file.
func (r *gitRepo) write(files map[string]string) {
	r.t.Helper()
	kit.WriteFiles(r.t, r.work, files)
}

// commit writes files, commits everything with subject and pushes; it
// returns the new commit's hash.
func (r *gitRepo) commit(subject string, files map[string]string) string {
	r.t.Helper()
	return r.commitWith(subject, files, nil)
}

// commitWith is commit with settings (-c name=value pairs, for git) and
// extra arguments for git commit, such as -S to sign.
func (r *gitRepo) commitWith(subject string, files map[string]string, settings []string, args ...string) string {
	r.t.Helper()
	r.write(files)
	r.git(r.work, "add", "--all")
	cmd := append([]string{"-c", "user.name=e2e", "-c", "user.email=e2e@plimsoll.dev"}, settings...)
	cmd = append(append(cmd, "commit", "--quiet", "--allow-empty", "-m", subject), args...)
	r.git(r.work, cmd...)
	r.git(r.work, "push", "--quiet", "--force", "origin", "HEAD:refs/heads/"+r.branch)
	return strings.TrimSpace(r.git(r.work, "rev-parse", "HEAD"))
}

func (r *gitRepo) git(dir string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
