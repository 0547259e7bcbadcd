package ui

import (
	"net/url"
	"regexp"
	"strings"

	"plimsoll.dev/plimsoll/internal/revision"
)

// repoPath is the path of a repository on a forge: owner, groups and name,
// of the characters forges allow.
var repoPath = regexp.MustCompile(`^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)+$`)

// scpLike is Git's scp-like address: [user@]host:path.
var scpLike = regexp.MustCompile(`^(?:[^@/]+@)?([A-Za-z0-9.-]+):([^/].*)$`)

// commitPattern is a commit id.
var commitPattern = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// forge is how a forge's web pages name a commit, by host.
type forge struct {
	host string // a host, or the start of one ("gitlab.")
	// commitPath follows the repository's path: "/commit/" + the id.
	commitPath string
}

// forges are the forges whose commit pages the view links to; another
// host gets no link, since its pages cannot be guessed.
var forges = []forge{
	{"github.com", "/commit/"},
	{"gitlab.com", "/-/commit/"},
	{"gitlab.", "/-/commit/"},
	{"bitbucket.org", "/commits/"},
	{"codeberg.org", "/commit/"},
	{"gitea.", "/commit/"},
	{"forgejo.", "/commit/"},
}

// repoWeb is the https address of the web page of the repository at
// address repo (https, ssh or scp-like), and how its commits are named
// under it; ok is false when the address is of no known forge, or is not
// one of those forms. The user, password or token an address may hold
// never makes it to the result.
func repoWeb(repo string) (base, commitPath string, ok bool) {
	var host, path string
	if m := scpLike.FindStringSubmatch(repo); m != nil && !strings.Contains(repo, "://") {
		host, path = m[1], m[2]
	} else {
		u, err := url.Parse(repo)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "ssh") {
			return "", "", false
		}
		host, path = u.Hostname(), u.Path
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	if !repoPath.MatchString(path) {
		return "", "", false
	}
	for _, f := range forges {
		if host == f.host || (strings.HasSuffix(f.host, ".") && strings.HasPrefix(host, f.host)) {
			return "https://" + host + "/" + path, f.commitPath, true
		}
	}
	return "", "", false
}

// link is a piece of text that may be a link; URL is empty for none.
type link struct {
	Text, URL string
}

// commitLink is commit, shortened, linked to its page on the forge of
// repo when repo allows it.
func commitLink(repo, commit string) link {
	l := link{Text: revision.Short(commit)}
	if commit == "" {
		l.Text = "-"
		return l
	}
	if base, path, ok := repoWeb(repo); ok && commitPattern.MatchString(commit) {
		l.URL = base + path + commit
	}
	return l
}
