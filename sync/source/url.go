package source

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// scpLike matches the short SSH form user@host:path (user optional). The
// user part stops at the first "@", so "user:secret@host:path" is caught as
// a user with a password and refused.
var scpLike = regexp.MustCompile(`^(?:([^@/]+)@)?([^@/:]+):(.+)$`)

// remoteURL is a repository address that passed validation: it carries no
// credentials, so its text may appear in errors as it is.
type remoteURL struct {
	text     string // the URL as configured
	kind     string // one of the kind constants
	user     string // SSH user named in the URL, if any
	host     string // host without port; empty for file URLs
	port     string // port as written; empty for the default
	endpoint *transport.Endpoint
}

// parseURL validates a repository URL. Errors never repeat a password or a
// token the URL may carry.
func parseURL(raw string) (remoteURL, error) {
	if raw == "" {
		return remoteURL{}, errors.New("repository URL is empty")
	}
	if strings.HasPrefix(raw, "-") {
		return remoteURL{}, errors.New(`repository URL must not begin with "-"`)
	}
	if strings.IndexFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return remoteURL{}, errors.New("repository URL must not contain spaces or control characters")
	}

	var (
		u   remoteURL
		err error
	)
	if strings.Contains(raw, "://") {
		u, err = parseSchemeURL(raw)
	} else {
		u, err = parseSCPURL(raw)
	}
	if err != nil {
		return remoteURL{}, err
	}
	if strings.HasPrefix(u.host, "-") {
		return remoteURL{}, errors.New(`repository host must not begin with "-"`)
	}

	ep, err := transport.NewEndpoint(raw)
	if err != nil || ep.Protocol != u.kind {
		return remoteURL{}, errors.New("repository URL is not a valid Git URL")
	}
	u.text = raw
	u.endpoint = ep
	u.host = ep.Host
	if ep.Port != 0 {
		u.port = strconv.Itoa(ep.Port)
	}
	return u, nil
}

// parseSchemeURL validates the scheme://... forms.
func parseSchemeURL(raw string) (remoteURL, error) {
	parsed, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			// url.Error repeats the whole URL; keep only the reason.
			err = uerr.Err
		}
		return remoteURL{}, fmt.Errorf("repository URL is not valid: %w", err)
	}
	kind := strings.ToLower(parsed.Scheme)
	switch kind {
	case kindFile, kindHTTP, kindHTTPS, kindSSH:
	default:
		return remoteURL{}, fmt.Errorf("repository URL scheme %q is not supported (use file, http, https or ssh)", parsed.Scheme)
	}
	if parsed.RawQuery != "" || parsed.ForceQuery || parsed.Fragment != "" {
		return remoteURL{}, errors.New("repository URL must not have a query or a fragment")
	}

	u := remoteURL{kind: kind, host: parsed.Hostname(), port: parsed.Port()}
	if parsed.User != nil {
		_, hasPassword := parsed.User.Password()
		if kind != kindSSH || hasPassword {
			bare := *parsed
			bare.User = nil
			return remoteURL{}, fmt.Errorf("repository URL %s carries credentials: give them in the auth settings instead", bare.String())
		}
		u.user = parsed.User.Username()
	}

	if kind == kindFile {
		if parsed.Host != "" {
			return remoteURL{}, errors.New("file repository URL must not name a host (use file:///absolute/path)")
		}
	} else if u.host == "" {
		return remoteURL{}, errors.New("repository URL has no host")
	}
	if strings.Trim(parsed.Path, "/") == "" {
		return remoteURL{}, errors.New("repository URL has no repository path")
	}
	return u, nil
}

// parseSCPURL validates the short SSH form user@host:path.
func parseSCPURL(raw string) (remoteURL, error) {
	m := scpLike.FindStringSubmatch(raw)
	if m == nil {
		return remoteURL{}, errors.New("repository URL is not supported: use file://, http://, https://, ssh:// or user@host:path")
	}
	user, host, repoPath := m[1], m[2], m[3]
	if strings.Contains(user, ":") {
		return remoteURL{}, fmt.Errorf("repository URL %s:%s carries credentials: give them in the auth settings instead", host, repoPath)
	}
	return remoteURL{kind: kindSSH, user: user, host: host}, nil
}

// hostWithPort is the host and port of an SSH URL, as known_hosts looks
// them up.
func (u remoteURL) hostWithPort() string {
	port := u.port
	if port == "" {
		port = defaultSSHPort
	}
	return net.JoinHostPort(u.host, port)
}

// branchRef validates a branch name and returns its full reference name.
// An empty name means the default branch; "refs/heads/x" is taken as "x".
func branchRef(branch string) (plumbing.ReferenceName, error) {
	if branch == "" {
		branch = defaultBranch
	}
	branch = strings.TrimPrefix(branch, "refs/heads/")
	if strings.HasPrefix(branch, "-") {
		return "", errors.New(`branch must not begin with "-"`)
	}
	ref := plumbing.NewBranchReferenceName(branch)
	if err := ref.Validate(); err != nil {
		return "", fmt.Errorf("branch %q is not a valid branch name", branch)
	}
	return ref, nil
}

// CheckURL reports what is wrong with a repository URL, as New would
// (credentials in it, a leading "-", a scheme other than file, http,
// https and ssh, no host or path); nil for a URL New takes. The error
// never repeats a password or token the URL carries.
func CheckURL(raw string) error {
	_, err := parseURL(raw)
	return err
}

// CheckBranch reports what is wrong with a branch name, as New would;
// nil for one it takes ("" is the default branch).
func CheckBranch(branch string) error {
	_, err := branchRef(branch)
	return err
}
