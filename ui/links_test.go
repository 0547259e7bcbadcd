package ui

import (
	"strings"
	"testing"
)

// TestCommitLink links a commit to its page on the forges whose pages
// are known, never with the credentials an address holds, and not at all
// elsewhere.
func TestCommitLink(t *testing.T) {
	const c = "3f2a9c1e0b7d4a55aa00bb11cc22dd33ee44ff55"
	tests := []struct {
		name, repo, want string
	}{
		{"GitHub over https", "https://github.com/acme/platform.git", "https://github.com/acme/platform/commit/" + c},
		{"GitHub with a token", "https://x-access-token:ghp_s3cret@github.com/acme/platform", "https://github.com/acme/platform/commit/" + c},
		{"GitHub over ssh, scp-like", "git@github.com:acme/platform.git", "https://github.com/acme/platform/commit/" + c},
		{"GitHub over ssh://", "ssh://git@github.com/acme/platform.git", "https://github.com/acme/platform/commit/" + c},
		{"GitLab with groups", "https://gitlab.com/acme/infra/platform.git", "https://gitlab.com/acme/infra/platform/-/commit/" + c},
		{"a GitLab of one's own", "https://oauth2:glpat-s3cret@gitlab.acme.internal/infra/platform.git", "https://gitlab.acme.internal/infra/platform/-/commit/" + c},
		{"Bitbucket", "https://bitbucket.org/acme/platform.git", "https://bitbucket.org/acme/platform/commits/" + c},
		{"Codeberg", "https://codeberg.org/acme/platform", "https://codeberg.org/acme/platform/commit/" + c},
		{"an unknown host", "https://git.acme.internal/platform.git", ""},
		{"a file URL", "file:///srv/manifests.git", ""},
		{"a query is left out", "https://github.com/acme/platform?x=<script>", "https://github.com/acme/platform/commit/" + c},
		{"a path with odd characters", "https://github.com/acme/pla\"tform", ""},
		{"no repository", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := commitLink(tt.repo, c)
			if l.URL != tt.want || l.Text != "3f2a9c1" {
				t.Errorf("commitLink = %+v, want URL %q", l, tt.want)
			}
			if strings.Contains(l.URL, "s3cret") {
				t.Errorf("the link %q carries the credentials", l.URL)
			}
		})
	}
	if l := commitLink("https://github.com/acme/platform", "main"); l.URL != "" {
		t.Errorf("a branch name was linked as a commit: %+v", l)
	}
	if l := commitLink("https://github.com/acme/platform", ""); l.Text != "-" || l.URL != "" {
		t.Errorf("no commit: %+v, want a dash", l)
	}
}
