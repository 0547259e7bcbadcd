//go:build bench

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// peerEnv is what a run of the comparison is told by its environment, and
// the tools it found.
type peerEnv struct {
	rollout    rolloutEnv // the binary, the control plane and the bounds
	bin        string     // plimsoll
	kubectl    string
	kubeconfig string
	logs       string
	parts      []string // of rollout, sync, scale, helm
	runs       int
	rolloutN   []int
	syncN      []int
	scaleN     []int
	helmN      []int
	note       string
	// resume keeps the runs an earlier invocation made with the same
	// versions of the tools, and measures only those missing.
	resume bool
	// tools are the tools measured (all when empty): with resume, the
	// peers' runs can be taken while plimsoll's wait for a binary.
	tools    []string
	argo     string // the Argo Rollouts controller (cmd/rollouts-controller)
	flux     *fluxDriver
	versions map[string]string // tool -> version
}

// readPeerEnv reads the comparison's settings:
//
//	PLIMSOLL_BENCH_BIN         the plimsoll binary (default bin/plimsoll)
//	PLIMSOLL_BENCH_KUBECONFIG  the benchmark's control plane (default .cluster-bench/kubeconfig)
//	PLIMSOLL_BENCH_PARTS       which comparisons, of rollout,sync,scale,helm (default all four)
//	PLIMSOLL_BENCH_RUNS        runs of each tool at each size (default 3)
//	PLIMSOLL_BENCH_ROLLOUT_N   workloads per strategy (default 100,300)
//	PLIMSOLL_BENCH_SYNC_N      ConfigMaps (default 1000,5000)
//	PLIMSOLL_BENCH_SCALE_N     rolling workloads of 10 pods (default 1000)
//	PLIMSOLL_BENCH_HELM_N      ConfigMaps a chart renders (default 1000)
//	PLIMSOLL_BENCH_NOTE        a line printed above the results, e.g. that a run is a check at small sizes
//	PLIMSOLL_BENCH_RESUME      "1": keep the runs already recorded of the same tool versions, run only the others
//	PLIMSOLL_BENCH_TOOLS       which tools to measure, of plimsoll, argo-rollouts, flux, plimsoll sync --once, kubectl (default all)
//
// It builds (or finds in the tools cache) the peers with hack/cluster
// (Argo Rollouts only when the rollout comparison runs) and installs their
// CRDs, from the same module sources, on the control plane.
func readPeerEnv(t *testing.T) peerEnv {
	r := readRolloutEnv(t)
	env := peerEnv{
		rollout: r, bin: r.bin, kubeconfig: r.kubeconfig,
		kubectl:  filepath.Join(filepath.Dir(r.kubeconfig), "bin", "kubectl"),
		logs:     filepath.Join(filepath.Dir(r.kubeconfig), "logs"),
		parts:    strings.Split(envOr("PLIMSOLL_BENCH_PARTS", "rollout,sync,scale,helm"), ","),
		runs:     envInt(t, "PLIMSOLL_BENCH_RUNS", "3")[0],
		rolloutN: envInt(t, "PLIMSOLL_BENCH_ROLLOUT_N", "100,300"),
		syncN:    envInt(t, "PLIMSOLL_BENCH_SYNC_N", "1000,5000"),
		scaleN:   envInt(t, "PLIMSOLL_BENCH_SCALE_N", "1000"),
		helmN:    envInt(t, "PLIMSOLL_BENCH_HELM_N", "1000"),
		note:     os.Getenv("PLIMSOLL_BENCH_NOTE"),
		resume:   os.Getenv("PLIMSOLL_BENCH_RESUME") == "1",
		tools:    strings.FieldsFunc(os.Getenv("PLIMSOLL_BENCH_TOOLS"), func(r rune) bool { return r == ',' }),
		versions: map[string]string{},
	}
	cluster := filepath.Join(r.root, "hack", "cluster")
	env.flux = newFluxDriver(t, r.root)
	crds := []string{filepath.Dir(env.flux.source)}
	if env.wants("rollout") {
		env.argo = strings.TrimSpace(runOutput(t, cluster, "argo-rollouts"))
		crds = append(crds, filepath.Dir(env.argo))
		env.versions[toolArgo] = "Argo Rollouts " + toolModuleVersion(t, r.root, "argo-rollouts", "github.com/argoproj/argo-rollouts")
	}
	for _, dir := range crds {
		runOutput(t, env.kubectl, "--kubeconfig", env.kubeconfig, "apply", "--server-side", "--force-conflicts",
			"--field-manager", "bench", "-f", filepath.Join(dir, "crds"))
	}
	runOutput(t, env.kubectl, "--kubeconfig", env.kubeconfig, "wait", "--for", "condition=Established", "crd", "--all", "--timeout", "2m")

	plimsoll := strings.TrimSpace(runOutput(t, env.bin, "version"))
	env.versions[toolPlimsoll], env.versions[toolOnce] = plimsoll, plimsoll
	env.versions[toolKubectl] = firstLine(runOutput(t, env.kubectl, "version", "--client"))
	env.versions[toolFlux] = "source-controller " + toolModuleVersion(t, r.root, "flux", "github.com/fluxcd/source-controller") +
		", kustomize-controller " + toolModuleVersion(t, r.root, "flux", "github.com/fluxcd/kustomize-controller") +
		", helm-controller " + toolModuleVersion(t, r.root, "flux", "github.com/fluxcd/helm-controller")
	return env
}

// wants tells whether the comparison called part is to run.
func (e peerEnv) wants(part string) bool { return slices.Contains(e.parts, part) }

// measures tells whether tool is to be measured.
func (e peerEnv) measures(tool string) bool {
	return len(e.tools) == 0 || slices.Contains(e.tools, tool)
}

// kept returns the version of each tool whose recorded runs are kept
// (resume), none otherwise: a run made by another version of a tool, a
// plimsoll built from another commit, is measured again.
func (e peerEnv) kept() map[string]string {
	if !e.resume {
		return nil
	}
	return e.versions
}

// TestPeerBenchmark compares plimsoll with its peers on the benchmark's
// control plane: the rollout of N canary and N blue-green workloads
// against Argo Rollouts, the sync of N ConfigMaps against Flux and
// `kubectl apply --server-side`, 1,000 rolling workloads against Flux, and
// a Helm chart kept in Git rendering N ConfigMaps against Flux's
// helm-controller.
// The tools take turns, run by run (plimsoll run 1, the peer's run 1,
// plimsoll run 2, ...), so that a drift of the machine's load weighs on
// both. Every run is kept in bench/peers-results.json, replacing those of
// an earlier invocation at the same sizes, and the medians, the ratios and
// the plots go to bench/results.md and bench/*.svg after each run. The
// whole comparison takes longer than a working day on 2 cores; with
// PLIMSOLL_BENCH_RESUME=1 an invocation that was stopped is carried on:
// the runs recorded with the same versions of the tools are kept and not
// measured again.
func TestPeerBenchmark(t *testing.T) {
	env := readPeerEnv(t)
	cfg, client := benchClient(t, env.kubeconfig)
	deleteNamespaceIfExists(t, client, argoNamespace)
	createNamespace(t, client, argoNamespace)
	results := loadPeerResults(t, env.rollout.root)
	if env.note != "" || !env.resume {
		results.Note = env.note
	}
	// A run is saved when it returns, after its namespaces are deleted
	// (minutes at N=1,000): stop the benchmark after this line, not after
	// a run's last figures, or the run is lost.
	save := func() {
		results.save(t, env.rollout.root)
		t.Logf("saved to %s", peerResultsFile)
	}

	if env.wants("rollout") {
		argo := &argoDriver{bin: env.argo, kubectl: env.kubectl, admin: env.kubeconfig, ports: [2]int(freePorts(t, 2))}
		for _, n := range env.rolloutN {
			results.dropRollout(n, env.kept())
			for run := 1; run <= env.runs; run++ {
				for _, d := range []struct {
					tool string
					drv  rolloutDriver
				}{{toolPlimsoll, &plimsollDriver{bin: env.bin}}, {toolArgo, argo}} {
					if !env.measures(d.tool) {
						continue
					}
					if results.hasRollout(d.tool, n, run) {
						t.Logf("rollout: %s, N=%d, run %d: recorded by an earlier invocation", d.tool, n, run)
						continue
					}
					t.Logf("rollout: %s, N=%d, run %d", d.tool, n, run)
					rec := driverRun(t, env.rollout, cfg, client, d.drv, d.tool, n, run)
					rec.Binary = env.versions[d.tool]
					results.Rollout = append(results.Rollout, rec)
					save()
					t.Logf("rollout: %s", rec.summary())
				}
			}
		}
	}
	// The sync, scale and helm comparisons: for each size, each tool's
	// runs in turns on one repository.
	for _, c := range []struct {
		part  string
		sizes []int
		repo  func(*testing.T, int) *peerRepo
		run   func(*testing.T, peerEnv, *rest.Config, kubernetes.Interface, string, *peerRepo, int, int) peerRecord
		tools []string
	}{
		{"sync", env.syncN, newSyncRepo, syncRun, []string{toolPlimsoll, toolFlux, toolOnce, toolKubectl}},
		{"scale", env.scaleN, newScaleRepo, scaleRun, []string{toolPlimsoll, toolFlux}},
		{"helm", env.helmN, newHelmRepo, helmRun, []string{toolPlimsoll, toolFlux}},
	} {
		if !env.wants(c.part) {
			continue
		}
		for _, n := range c.sizes {
			results.drop(c.part, n, env.kept())
			repo := c.repo(t, n)
			for run := 1; run <= env.runs; run++ {
				for _, tool := range c.tools {
					if !env.measures(tool) || results.has(c.part, tool, n, run) {
						continue
					}
					results.Peers = append(results.Peers, c.run(t, env, cfg, client, tool, repo, n, run))
					save()
				}
			}
		}
	}
	t.Log("\n" + results.render())
}

// TestRenderPeerResults renders bench/peers-results.json into
// bench/results.md and the plots again, without measuring anything: for
// a change of the report's layout.
func TestRenderPeerResults(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatalf("find the repository root: %v", err)
	}
	loadPeerResults(t, root).save(t, root)
}

// envInt reads a comma-separated list of positive integers from key.
func envInt(t *testing.T, key, fallback string) []int {
	var out []int
	for s := range strings.SplitSeq(envOr(key, fallback), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			t.Fatalf("%s: %q is not a positive integer", key, s)
		}
		out = append(out, n)
	}
	return out
}

// toolModuleVersion is the version of module that the tool module
// hack/tools/name requires.
func toolModuleVersion(t *testing.T, root, name, module string) string {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module)
	cmd.Dir = filepath.Join(root, "hack", "tools", name)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("read the version of %s in hack/tools/%s: %v", module, name, err)
	}
	return strings.TrimSpace(string(out))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
