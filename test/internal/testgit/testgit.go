// Package testgit is the Git repository the e2e tests and the benchmarks
// sync from: a bare repository, which the daemon fetches, and a work tree
// that commits and pushes to it with the git command, as a user would.
// Both suites drive it the same way, so that what a commit looks like to
// the daemon cannot differ between them.
package testgit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// The repository's defaults.
const (
	// Branch is the branch that New makes and that Commit, Push and
	// ForcePush move.
	Branch = "main"
	// Name and Email are the author and committer of every commit the
	// suites make.
	Name  = "plimsoll test"
	Email = "test@plimsoll.dev"
)

// Repo is a bare repository and a work tree whose remote origin it is.
// Its methods fail the test that made it on any git error.
type Repo struct {
	t    testing.TB
	bare string
	work string
}

// New makes an empty bare repository, remote.git, and an empty work tree
// beside it, in a directory removed when t ends.
func New(t testing.TB) *Repo {
	t.Helper()
	dir := t.TempDir()
	r := &Repo{t: t, bare: filepath.Join(dir, "remote.git"), work: filepath.Join(dir, "work")}
	r.Git(dir, "init", "--quiet", "--bare", "--initial-branch="+Branch, r.bare)
	r.Git(dir, "init", "--quiet", "--initial-branch="+Branch, r.work)
	r.Git(r.work, "remote", "add", "origin", r.bare)
	return r
}

// URL is the bare repository's file:// URL.
func (r *Repo) URL() string { return "file://" + r.bare }

// Bare is the bare repository's directory: what a Git server serves.
func (r *Repo) Bare() string { return r.bare }

// Work is the work tree's directory.
func (r *Repo) Work() string { return r.work }

// Write puts files (slash-separated path -> content) in the work tree; an
// empty content removes the file.
func (r *Repo) Write(files map[string]string) {
	r.t.Helper()
	kit.WriteFiles(r.t, r.work, files)
}

// Commit writes files, commits the whole work tree with subject, even if
// nothing changed, and force-pushes it to Branch; it returns the commit.
func (r *Repo) Commit(subject string, files map[string]string) string {
	r.t.Helper()
	return r.CommitWith(subject, files, nil)
}

// CommitWith is Commit with settings, name=value pairs given to git as
// -c name=value, and extra arguments for git commit, such as -S to sign.
func (r *Repo) CommitWith(subject string, files map[string]string, settings []string, args ...string) string {
	r.t.Helper()
	commit := r.commit(subject, files, settings, args)
	r.Push()
	return commit
}

// CommitLocal is Commit without the push: the commit is in the work tree
// only, until Push or PushTo.
func (r *Repo) CommitLocal(subject string, files map[string]string) string {
	r.t.Helper()
	return r.commit(subject, files, nil, nil)
}

func (r *Repo) commit(subject string, files map[string]string, settings, args []string) string {
	r.t.Helper()
	r.Write(files)
	r.Git(r.work, "add", "--all")
	cmd := []string{"-c", "user.name=" + Name, "-c", "user.email=" + Email}
	for _, s := range settings {
		cmd = append(cmd, "-c", s)
	}
	cmd = append(append(cmd, "commit", "--quiet", "--allow-empty", "-m", subject), args...)
	r.Git(r.work, cmd...)
	return r.Head()
}

// Push points Branch of the bare repository at the work tree's HEAD,
// forcing: a test may rewrite history.
func (r *Repo) Push() {
	r.t.Helper()
	r.PushTo("HEAD", Branch)
}

// PushTo is Push of rev (a commit, or HEAD) to branch.
func (r *Repo) PushTo(rev, branch string) {
	r.t.Helper()
	r.Git(r.work, "push", "--quiet", "--force", "origin", rev+":refs/heads/"+branch)
}

// ForcePush points Branch at commit, as `git reset --hard` and `git push
// --force` do, and leaves the work tree there for the next commit.
func (r *Repo) ForcePush(commit string) {
	r.t.Helper()
	r.Git(r.work, "reset", "--quiet", "--hard", commit)
	r.Push()
}

// Head is the commit the work tree is at.
func (r *Repo) Head() string {
	r.t.Helper()
	return strings.TrimSpace(r.Git(r.work, "rev-parse", "HEAD"))
}

// Git runs git with args in dir (the work tree, the bare repository or
// any other) and returns its output, stdout and stderr together.
func (r *Repo) Git(dir string, args ...string) string {
	r.t.Helper()
	out, err := Command(dir, args...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Command is git with args in dir, reading neither the user's nor the
// system's configuration: the machine's settings (a signing default, a
// hook path) must not change what a test commits.
func Command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	return cmd
}
