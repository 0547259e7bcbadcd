//go:build bench

package bench

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// peerRepo is a repository whose trees are committed once each, under a
// name, and pushed, one at a time, to branches served over smart HTTP:
// each controller run follows a branch of its own, and a push is the
// moment its measurement starts.
type peerRepo struct {
	repo    *testgit.Repo
	url     string            // the bare repository over smart HTTP
	commits map[string]string // name -> commit
}

// newPeerRepo makes an empty repository and serves its bare one at
// 127.0.0.1 (git http-backend).
func newPeerRepo(t *testing.T) *peerRepo {
	r := &peerRepo{repo: testgit.New(t), commits: map[string]string{}}
	r.url = serveHTTP(t, r.repo.Bare()) + "/" + filepath.Base(r.repo.Bare())
	return r
}

// commit writes files in the work tree, commits all of it as name without
// pushing it, and returns the commit.
func (r *peerRepo) commit(name, message string, files map[string]string) string {
	r.commits[name] = r.repo.CommitLocal(message, files)
	return r.commits[name]
}

// push points branch of the bare repository at the commit called name.
func (r *peerRepo) push(name, branch string) string {
	c := r.commits[name]
	r.repo.PushTo(c, branch)
	return c
}

// export writes the tree of the commit called name into a new directory
// and returns it, for kubectl.
func (r *peerRepo) export(t *testing.T, name string) string {
	dir, tarball := t.TempDir(), filepath.Join(t.TempDir(), name+".tar")
	r.repo.Git(r.repo.Work(), "archive", "-o", tarball, r.commits[name])
	runOutput(t, "tar", "-x", "-f", tarball, "-C", dir)
	return dir
}

// noopFiles change a README and no object.
var noopFiles = map[string]string{"README.md": "No object changes.\n"}

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

// configMapFiles are n ConfigMaps without a namespace, cm-00000 ...,
// objectsPerFile to a file under objects/; changed names one whose data
// differs.
func configMapFiles(n int, changed string) map[string]string {
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
	files := map[string]string{}
	for f := 0; f*objectsPerFile < len(docs); f++ {
		chunk := docs[f*objectsPerFile : min((f+1)*objectsPerFile, len(docs))]
		files[fmt.Sprintf("objects/cm-%03d.yaml", f)] = strings.Join(chunk, "---\n")
	}
	return files
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
