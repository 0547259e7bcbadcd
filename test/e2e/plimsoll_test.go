//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// syncTarget is where one test syncs to: a namespace of its own, which is
// also the sync's name and the home of its status ConfigMap.
type syncTarget struct {
	ns       string
	repo     *testgit.Repo
	cacheDir string
	// url overrides the repository's file:// URL (to go through a server).
	url string
	// oci, when set, are the flags of an OCI artifact source, given in
	// place of --repo.
	oci []string
	// kubeconfig overrides the suite's (to act as another user), statusNS
	// the namespace of the status ConfigMap (ns by default).
	kubeconfig, statusNS string
}

// statusNamespace is where the sync's status ConfigMap lives.
func (s *syncTarget) statusNamespace() string {
	if s.statusNS != "" {
		return s.statusNS
	}
	return s.ns
}

func newSyncTarget(t *testing.T) *syncTarget {
	t.Helper()
	return &syncTarget{ns: kit.NewNamespace(t, suite.client, ""), repo: testgit.New(t), cacheDir: t.TempDir()}
}

// RunFlags is the plimsoll binary and the flags of `plimsoll run` for s,
// with extra: what kit.StartDaemon runs.
func (s *syncTarget) RunFlags(extra ...string) (string, []string) {
	return suite.plimsoll, s.flags(extra...)
}

// flags are the source flags of every plimsoll command of the test.
func (s *syncTarget) flags(extra ...string) []string {
	url := s.repo.URL()
	if s.url != "" {
		url = s.url
	}
	kubeconfig := suite.kubeconfig
	if s.kubeconfig != "" {
		kubeconfig = s.kubeconfig
	}
	from := []string{"--repo", url}
	if s.oci != nil {
		from = append([]string(nil), s.oci...)
	}
	return append(append(from,
		"--kubeconfig", kubeconfig,
		"--namespace", s.ns,
		"--status-namespace", s.statusNamespace(),
		"--sync-name", s.ns,
		"--cache-dir", s.cacheDir,
	), extra...)
}

// syncOnce runs `plimsoll sync --once` and returns its output and exit code.
func (s *syncTarget) syncOnce(t *testing.T, extra ...string) (string, int) {
	t.Helper()
	return runPlimsoll(t, append([]string{"sync", "--once"}, s.flags(extra...)...)...)
}

// mustSync runs one sync that must succeed.
func (s *syncTarget) mustSync(t *testing.T, extra ...string) {
	t.Helper()
	if out, code := s.syncOnce(t, extra...); code != 0 {
		t.Fatalf("plimsoll sync --once exited %d:\n%s", code, out)
	}
}

// status returns the sync's status annotations.
func (s *syncTarget) status(t *testing.T) map[string]string {
	t.Helper()
	cm, err := suite.client.CoreV1().ConfigMaps(s.statusNamespace()).Get(context.Background(), "plimsoll-sync-"+s.ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read sync status: %v", err)
	}
	return cm.Annotations
}

// events returns the messages of the Events about the sync's ConfigMap.
func (s *syncTarget) events(t *testing.T) []corev1.Event {
	t.Helper()
	list, err := suite.client.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=plimsoll-sync-" + s.ns,
	})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	return list.Items
}

// runPlimsoll runs the plimsoll binary built for the suite and returns its
// combined output and exit code.
func runPlimsoll(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(suite.plimsoll, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("run plimsoll %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), 0
}
