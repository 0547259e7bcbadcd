//go:build bench

package bench

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// rolloutDriver is the controller a rollout run measures and how it is
// handed its workloads: plimsoll from Git, Argo Rollouts from applied
// Rollouts.
type rolloutDriver interface {
	// watch starts the informers that feed w when each workload of ss is
	// Healthy at which revision, and when what the controller was handed
	// was applied; they stop with ctx.
	watch(ctx context.Context, t *testing.T, cfg *rest.Config, w *healthWatch, ss []strategy)
	// begin starts the controller, talking to the API server through
	// kubeconfig and logging to logPath, with n workloads of each of ss at
	// imageV1 (work is a directory of its own). It returns the
	// controller's processes and the key the applied time of that first
	// revision is recorded under in the watch.
	begin(t *testing.T, kubeconfig, work, logPath string, n int, ss []strategy) (procGroup, string)
	// roll changes the image of every workload of s to image and returns
	// the key its applied time is recorded under in w.
	roll(t *testing.T, s strategy, image string, w *healthWatch) string
}

// plimsollDriver is `plimsoll run`, polling a file:// repository of the
// workloads' Deployments and Services every pollInterval; n is how many
// workloads of each strategy it holds.
type plimsollDriver struct {
	bin  string
	repo *testgit.Repo
	n    int
}

func (p *plimsollDriver) watch(ctx context.Context, t *testing.T, cfg *rest.Config, w *healthWatch, ss []strategy) {
	watchPlimsoll(ctx, t, kubernetes.NewForConfigOrDie(cfg), w, ss)
}

func (p *plimsollDriver) begin(t *testing.T, kubeconfig, work, logPath string, n int, ss []strategy) (procGroup, string) {
	p.repo, p.n = testgit.New(t), n
	files := map[string]string{}
	for _, s := range ss {
		maps.Copy(files, workloadFiles(s, n, imageV1))
	}
	first := p.repo.Commit(fmt.Sprintf("%d workloads of each of %s at %s", n, strategyNames(ss), imageV1), files)
	d := kit.Start(t, kit.Process{Bin: p.bin, Log: logPath, Args: []string{"run", "--repo", p.repo.URL(), "--interval", pollInterval,
		"--listen", "127.0.0.1:0", "--kubeconfig", kubeconfig, "--namespace", statusNamespace,
		"--status-namespace", statusNamespace, "--sync-name", syncName, "--cache-dir", filepath.Join(work, "cache")}})
	return procGroup{d}, first
}

func (p *plimsollDriver) roll(_ *testing.T, s strategy, image string, _ *healthWatch) string {
	return p.repo.Commit(fmt.Sprintf("Roll the %d %s workloads to %s", p.n, s.name, image), workloadFiles(s, p.n, image))
}
