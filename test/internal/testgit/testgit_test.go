package testgit

import (
	"strings"
	"testing"
)

// remoteHead is what branch points at in r's bare repository.
func remoteHead(r *Repo, branch string) string {
	return strings.TrimSpace(r.Git(r.Bare(), "rev-parse", "refs/heads/"+branch))
}

func TestRepo(t *testing.T) {
	r := New(t)
	if want := "file://" + r.Bare(); r.URL() != want {
		t.Errorf("URL %q, want %q", r.URL(), want)
	}

	v1 := r.Commit("v1", map[string]string{"app.yaml": "one\n", "dir/b.yaml": "b\n"})
	if got := remoteHead(r, Branch); got != v1 {
		t.Fatalf("after Commit: %s is at %s, want %s", Branch, got, v1)
	}
	if got := r.Git(r.Bare(), "show", v1+":dir/b.yaml"); got != "b\n" {
		t.Errorf("dir/b.yaml of v1: %q, want %q", got, "b\n")
	}
	if got := strings.TrimSpace(r.Git(r.Bare(), "log", "-1", "--format=%an <%ae> %s", v1)); got != Name+" <"+Email+"> v1" {
		t.Errorf("v1's author and subject: %q", got)
	}

	v2 := r.Commit("v2, without dir/b.yaml", map[string]string{"dir/b.yaml": ""})
	if files := strings.Fields(r.Git(r.Bare(), "ls-tree", "-r", "--name-only", v2)); len(files) != 1 || files[0] != "app.yaml" {
		t.Errorf("files of v2: %v, want [app.yaml]", files)
	}
	if again := r.Commit("v3, no change", nil); again == v2 {
		t.Error("a Commit of no change made no commit")
	}

	local := r.CommitLocal("local", map[string]string{"app.yaml": "local\n"})
	if got := remoteHead(r, Branch); got == local {
		t.Error("CommitLocal pushed")
	}
	r.PushTo(local, "other")
	if got := remoteHead(r, "other"); got != local {
		t.Errorf("after PushTo: other is at %s, want %s", got, local)
	}

	r.Push()
	if got := remoteHead(r, Branch); got != local {
		t.Errorf("after Push: %s is at %s, want %s", Branch, got, local)
	}

	r.ForcePush(v1)
	if got := remoteHead(r, Branch); got != v1 {
		t.Errorf("after ForcePush: %s is at %s, want %s", Branch, got, v1)
	}
	if r.Head() != v1 {
		t.Errorf("after ForcePush: the work tree is at %s, want %s", r.Head(), v1)
	}
}

func TestCommitWith(t *testing.T) {
	r := New(t)
	h := r.CommitWith("with a setting", nil, []string{"user.name=someone else"}, "--author=A <a@example.org>")
	if got := strings.TrimSpace(r.Git(r.Work(), "log", "-1", "--format=%an|%cn", h)); got != "A|someone else" {
		t.Errorf("author|committer: %q, want %q", got, "A|someone else")
	}
}
