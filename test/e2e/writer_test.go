//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// TestSecondWriterRefused starts a second daemon on the same sync name,
// without --leader-elect, following another repository whose Deployment
// runs another image (a second install, a stale replica). It writes
// nothing while the first runs: the workload stays at revision 1 on the
// first's image, and the second says who holds the sync in its log, on
// /readyz (503) and on the sync record, which `plimsoll status` shows. Once
// the first stops, the second takes over and rolls its image out.
func TestSecondWriterRefused(t *testing.T) {
	const staleImage = "registry.example/web:stale"
	s := newSyncTarget(t)
	first := s.repo.Commit("base", baseTree())
	d1 := kit.StartDaemon(t, s, "--interval", "1s")
	s.waitForCommit(t, first)
	waitForDeployment(t, s.ns, "web", "revision 1 Healthy", phaseIs(1, "Healthy"))

	other := &syncTarget{ns: s.ns, repo: testgit.New(t), cacheDir: t.TempDir()}
	files := baseTree()
	files["deployment.yaml"] = rollingDeployment(1, staleImage)
	other.repo.Commit("stale", files)
	d2 := kit.LaunchDaemon(t, other, "--interval", "1s")

	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s_%d", strings.ReplaceAll(host, "_", "-"), d1.Cmd.Process.Pid)
	waitFor(t, "the second daemon to say who holds the sync", func(ctx context.Context) (bool, error) {
		code, body := readyz(d2)
		return code == http.StatusServiceUnavailable && strings.Contains(body, holder) &&
			strings.Contains(d2.Log(), "another daemon holds the sync"), nil
	})
	holdsFor(t, "the first daemon's workload", 6*time.Second, func(ctx context.Context) error {
		d := getDeployment(t, s.ns, "web")
		if d == nil {
			return fmt.Errorf("Deployment web is gone")
		}
		if image, rev := d.Spec.Template.Spec.Containers[0].Image, d.Annotations["plimsoll.dev/revision"]; image != goodImage || rev != "1" {
			return fmt.Errorf("web runs %s at revision %s, want %s at revision 1: the second daemon wrote", image, rev, goodImage)
		}
		if note := s.status(t)["plimsoll.dev/blocked-writer"]; !strings.Contains(note, holder) {
			return fmt.Errorf("sync record's plimsoll.dev/blocked-writer %q does not name the holder %s", note, holder)
		}
		return nil
	})
	out, code := runPlimsoll(t, append([]string{"status", "--sync-name", s.ns}, s.cliFlags()...)...)
	if code != 0 || !strings.Contains(out, "another daemon writes nothing") || !strings.Contains(out, holder) {
		t.Errorf("plimsoll status exited %d and does not name the blocked writer and %s:\n%s", code, holder, out)
	}

	if err := d1.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = d1.Wait()
	waitForDeployment(t, s.ns, "web", "the second daemon's image", func(d *appsv1.Deployment) bool {
		return d.Spec.Template.Spec.Containers[0].Image == staleImage
	})
	d2.WaitReady(t)
	if note := s.status(t)["plimsoll.dev/blocked-writer"]; note != "" {
		t.Errorf("plimsoll.dev/blocked-writer %q left on the record after the takeover", note)
	}
}

// readyz returns d's /readyz status code and body.
func readyz(d *kit.Daemon) (int, string) {
	resp, err := http.Get("http://" + d.Addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
