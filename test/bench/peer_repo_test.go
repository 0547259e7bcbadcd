//go:build bench

package bench

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// peerRepo is a Git work tree whose commits are pushed, one at a time, to
// branches of a bare repository served over smart HTTP: each controller
// run follows a branch of its own, and a push is the moment its
// measurement starts.
type peerRepo struct {
	work, bare, url string
	commits         map[string]string // name -> commit
}

// newPeerRepo makes an empty work tree and bare repository and serves the
// bare one at 127.0.0.1 (git http-backend).
func newPeerRepo(t *testing.T) *peerRepo {
	r := &peerRepo{work: t.TempDir(), bare: filepath.Join(t.TempDir(), "peers.git"), commits: map[string]string{}}
	runOutput(t, "git", "-C", r.work, "init", "--quiet", "--initial-branch=main")
	runOutput(t, "git", "init", "--quiet", "--bare", "--initial-branch=main", r.bare)
	r.url = serveHTTP(t, r.bare) + "/" + filepath.Base(r.bare)
	return r
}

// commit lets write change the work tree, commits all of it as name and
// returns the commit.
func (r *peerRepo) commit(t *testing.T, name, message string, write func(dir string)) string {
	write(r.work)
	runOutput(t, "git", "-C", r.work, "add", "--all")
	runOutput(t, "git", "-C", r.work, "-c", "user.name=bench", "-c", "user.email=bench@plimsoll.dev", "commit", "--quiet", "--allow-empty", "-m", message)
	c := strings.TrimSpace(runOutput(t, "git", "-C", r.work, "rev-parse", "HEAD"))
	r.commits[name] = c
	return c
}

// push points branch of the bare repository at the commit called name.
func (r *peerRepo) push(t *testing.T, name, branch string) string {
	c := r.commits[name]
	runOutput(t, "git", "-C", r.work, "push", "--quiet", "--force", r.bare, c+":refs/heads/"+branch)
	return c
}

// export writes the tree of the commit called name into a new directory
// and returns it, for kubectl.
func (r *peerRepo) export(t *testing.T, name string) string {
	dir, tarball := t.TempDir(), filepath.Join(t.TempDir(), name+".tar")
	runOutput(t, "git", "-C", r.work, "archive", "-o", tarball, r.commits[name])
	runOutput(t, "tar", "-x", "-f", tarball, "-C", dir)
	return dir
}

// writeFile writes content to dir/name, making its directory.
func writeFile(t *testing.T, dir, name, content string) {
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("create the directory of %s: %v", path, err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// configMapFiles writes n ConfigMaps without a namespace, cm-00000 ...,
// objectsPerFile to a file under dir/objects; changed names one whose data
// differs.
func configMapFiles(t *testing.T, dir string, n int, changed string) {
	var docs []string
	for i := range n {
		name := fmt.Sprintf("cm-%05d", i)
		index := fmt.Sprint(i)
		if name == changed {
			index += "-changed"
		}
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  index: %q\n  payload: %q\n",
			name, index, strings.Repeat("p", 200)))
	}
	for f := 0; f*objectsPerFile < len(docs); f++ {
		chunk := docs[f*objectsPerFile : min((f+1)*objectsPerFile, len(docs))]
		writeFile(t, dir, fmt.Sprintf("objects/cm-%03d.yaml", f), strings.Join(chunk, "---\n"))
	}
}

// freePorts returns n distinct free TCP ports of 127.0.0.1, for the peers'
// servers: they are released just before the peers bind them.
func freePorts(t *testing.T, n int) []int {
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}
