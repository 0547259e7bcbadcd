//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"plimsoll.dev/plimsoll/test/internal/proc"
)

// The memory promise of the sync, the same as the chart's limit halved:
// what the repository holds outside the manifests never reaches memory.
const (
	heavyBlobBytes = 200 << 20
	memoryBoundMiB = 256
)

// TestHeavyRepositoryStaysSmall syncs a repository with a 200 MB
// incompressible blob beside the manifests (outside --path), cold and then
// after a second commit, over a file URL and over smart HTTP, and reads
// the daemon's peak resident set from the kernel: it stays under 256 MiB
// every time, and the manifests are applied.
func TestHeavyRepositoryStaysSmall(t *testing.T) {
	for _, transport := range []string{"file", "http"} {
		t.Run(transport, func(t *testing.T) {
			s := newSyncTarget(t)
			if transport == "http" {
				server := newGitServer(t, s.repo, "deploy", "heavy-password")
				s.url = server.URL(s.repo)
				t.Setenv("E2E_GIT_PASSWORD", "heavy-password")
			}
			extra := []string{"--path", "deploy"}
			if transport == "http" {
				extra = append(extra, "--git-username", "deploy", "--git-password-env", "E2E_GIT_PASSWORD")
			}
			files := map[string]string{}
			for name, content := range baseTree() {
				files["deploy/"+name] = content
			}
			writeRandom(t, filepath.Join(s.repo.Work(), "assets", "blob.bin"))
			first := s.repo.Commit("manifests and a heavy asset", files)
			for i, commit := range []string{first, ""} {
				if i == 1 {
					// A new version of the asset, and of the app.
					writeRandom(t, filepath.Join(s.repo.Work(), "assets", "blob.bin"))
					commit = s.repo.Commit("a new asset", map[string]string{
						"deploy/config.yaml": strings.Replace(baseTree()["config.yaml"], "color: blue", "color: green", 1)})
				}
				out, code, peakMiB := syncOnceRSS(t, s, extra...)
				t.Logf("sync of %s over %s: peak RSS %d MiB", commit[:7], transport, peakMiB)
				if code != 0 {
					t.Fatalf("sync exited %d:\n%s", code, out)
				}
				if peakMiB >= memoryBoundMiB {
					t.Errorf("peak RSS %d MiB syncing a repository with a %d MB blob, want under %d MiB", peakMiB, heavyBlobBytes>>20, memoryBoundMiB)
				}
				if got := s.status(t)["plimsoll.dev/commit"]; got != commit {
					t.Fatalf("status commit %s, want %s", got, commit)
				}
			}
			cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(context.Background(), "app", metav1.GetOptions{})
			if err != nil || cm.Data["color"] != "green" {
				t.Fatalf("ConfigMap app after the second commit: %v, %v; want color green", cm.Data, err)
			}
		})
	}
}

// syncOnceRSS runs `plimsoll sync --once` and returns its output, exit
// code and peak resident set in MiB (see proc.RunPeak).
func syncOnceRSS(t *testing.T, s *syncTarget, extra ...string) (string, int, int64) {
	t.Helper()
	cmd := exec.Command(suite.plimsoll, append([]string{"sync", "--once"}, s.flags(extra...)...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	peakKiB, err := proc.RunPeak(cmd, 10*time.Millisecond)
	if cmd.ProcessState == nil {
		t.Fatalf("run plimsoll: %v", err)
	}
	return out.String(), cmd.ProcessState.ExitCode(), peakKiB / 1024
}

// writeRandom writes heavyBlobBytes incompressible bytes to path.
func writeRandom(t *testing.T, path string) {
	t.Helper()
	if err := proc.WriteRandom(path, heavyBlobBytes); err != nil {
		t.Fatal(err)
	}
}
