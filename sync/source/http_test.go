package source

import (
	"context"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// serveGitHTTP serves the bare repository at remoteDir over smart HTTP
// with git http-backend, behind allow (nil lets every request in), and
// returns the repository's URL.
func serveGitHTTP(t *testing.T, remoteDir string, allow func(*http.Request) bool) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("find git exec path: %v", err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env: []string{
			"GIT_PROJECT_ROOT=" + filepath.Dir(remoteDir),
			"GIT_HTTP_EXPORT_ALL=1",
		},
		Stderr: io.Discard,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if allow != nil && !allow(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + filepath.Base(remoteDir)
}

// credentialCheck accepts basic auth alice:s3cret, any user with the token
// as password, and the token as a bearer token; it records the users seen.
type credentialCheck struct {
	token string
	mu    sync.Mutex
	users []string
}

func (c *credentialCheck) allow(r *http.Request) bool {
	if r.Header.Get("Authorization") == "Bearer "+c.token {
		return true
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	c.mu.Lock()
	c.users = append(c.users, user)
	c.mu.Unlock()
	return (user == "alice" && pass == "s3cret") || pass == c.token
}

func (c *credentialCheck) lastUser() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.users) == 0 {
		return ""
	}
	return c.users[len(c.users)-1]
}

func TestHTTPAuth(t *testing.T) {
	const canary = "CANARY-7f3a9c-secret"
	remoteDir, _, head := newPushedRemote(t, "one", map[string]string{"apps/web.yaml": "kind: Deployment\n"}, nil)
	check := &credentialCheck{token: "tok-good-123"}
	url := serveGitHTTP(t, remoteDir, check.allow)

	for _, tc := range []struct {
		name     string
		auth     Auth
		wantUser string // user the server saw, for accepted credentials
		wantErr  string // error suffix after the action, for refused ones
	}{
		{name: "basic auth", auth: Auth{Username: "alice", Password: "s3cret"}, wantUser: "alice"},
		{name: "token defaults user to git", auth: Auth{Password: "tok-good-123"}, wantUser: "git"},
		{name: "token with a user", auth: Auth{Username: "x-access-token", Password: "tok-good-123"}, wantUser: "x-access-token"},
		{name: "anonymous", auth: Auth{}, wantErr: "authentication required"},
		{name: "wrong password", auth: Auth{Username: "alice", Password: canary}, wantErr: "authentication required"},
		{name: "wrong token", auth: Auth{Password: canary}, wantErr: "authentication required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t, Config{URL: url, Auth: tc.auth})
			if tc.wantErr == "" {
				snap := syncTo(t, r, head)
				if got := readFile(t, snap, "apps/web.yaml"); got != "kind: Deployment\n" {
					t.Fatalf("apps/web.yaml = %q", got)
				}
				if got := check.lastUser(); got != tc.wantUser {
					t.Fatalf("server saw user %q, want %q", got, tc.wantUser)
				}
				return
			}
			_, headErr := r.Head(context.Background())
			assertErr(t, headErr, "list remote refs of "+url+": "+tc.wantErr)
			fetchErr := r.Fetch(context.Background(), head)
			assertErr(t, fetchErr, "fetch main of "+url+": "+tc.wantErr)
			for _, err := range []error{headErr, fetchErr} {
				if strings.Contains(err.Error(), canary) {
					t.Fatalf("error leaks the secret: %v", err)
				}
			}
		})
	}
}

func TestHTTPRepositoryNotFound(t *testing.T) {
	remoteDir, _ := newBareRemote(t)
	url := serveGitHTTP(t, remoteDir, nil)
	missing := strings.TrimSuffix(url, "remote.git") + "missing.git"
	r := newRepo(t, Config{URL: missing})
	_, err := r.Head(context.Background())
	assertErr(t, err, "list remote refs of "+missing+": repository not found")
}

func TestHTTPIncrementalFetch(t *testing.T) {
	remoteDir, work, first := newPushedRemote(t, "one", map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 1\n"}, nil)
	r := newRepo(t, Config{URL: serveGitHTTP(t, remoteDir, nil)})
	syncTo(t, r, first)

	for i, content := range []string{"a: 2\n", "a: 3\n"} {
		next := work.commit("bump", map[string]string{"a.yaml": content}, nil)
		work.push("refs/heads/main:refs/heads/main")
		snap := syncTo(t, r, next)
		if got := readFile(t, snap, "a.yaml"); got != content {
			t.Fatalf("round %d: a.yaml = %q, want %q", i, got, content)
		}
		if got := readFile(t, snap, "b.yaml"); got != "b: 1\n" {
			t.Fatalf("round %d: b.yaml = %q", i, got)
		}
	}
	// An ancestor of the fetched tip is already local.
	if err := r.Fetch(context.Background(), first); err != nil {
		t.Fatalf("Fetch of an ancestor: %v", err)
	}
	if _, err := r.Snapshot(context.Background(), first); err != nil {
		t.Fatalf("Snapshot of an ancestor: %v", err)
	}
}
