//go:build e2e

package e2e

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// Modes of the test Git server.
const (
	serverUp   = "up"   // serve Git
	serverHang = "hang" // accept requests and never answer
	serverDown = "down" // drop every connection at once
)

// gitServer serves a bare repository over smart HTTP with `git
// http-backend`, behind basic auth, on a loopback port; a test switches it
// between serving, hanging and dropping connections.
type gitServer struct {
	addr     string
	user     string
	password string

	mu   gosync.Mutex
	mode string
	// hanging counts the requests held by the hang mode right now.
	hanging int
}

// newGitServer serves repo's bare repository until the test ends.
func newGitServer(t *testing.T, repo *testgit.Repo, user, password string) *gitServer {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("find git's exec path: %v", err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env: []string{
			"GIT_PROJECT_ROOT=" + filepath.Dir(repo.Bare()),
			"GIT_HTTP_EXPORT_ALL=1",
		},
	}
	s := &gitServer{user: user, password: password, mode: serverUp}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	done := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch s.currentMode() {
		case serverHang:
			s.hang(1)
			defer s.hang(-1)
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		case serverDown:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
				}
			}
			return
		}
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(s.user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(s.password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		close(done)
		srv.Close()
	})
	return s
}

// URL is the repository's URL on the server.
func (s *gitServer) URL(repo *testgit.Repo) string {
	return "http://" + s.addr + "/" + filepath.Base(repo.Bare())
}

func (s *gitServer) setMode(mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = mode
}

func (s *gitServer) currentMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// hang counts a request that the hang mode holds (+1) or let go (-1).
func (s *gitServer) hang(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hanging += n
}

// hangingNow is how many requests the hang mode holds now.
func (s *gitServer) hangingNow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hanging
}
