package kit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Helm runs the helm hack/cluster builds (from its cache after the first
// time), in the repository's root, with homes of its own, and returns its
// standard output; a failure's error holds its standard error.
func Helm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	root := Root(t)
	path, err := exec.Command(filepath.Join(root, "hack", "cluster"), "helm").Output()
	if err != nil {
		t.Fatalf("build helm: %v", err)
	}
	cmd := exec.Command(strings.TrimSpace(string(path)), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w\n%s", args[0], err, stderr.String())
	}
	return string(out), nil
}
