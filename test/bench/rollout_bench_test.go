//go:build bench

package bench

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The workloads of the rollout benchmark and how they roll. The steps and
// the delay are timed, so that every rollout ends without a command.
const (
	rolloutReplicas = 4
	scaleReplicas   = 10
	canarySteps     = "25%, pause 10s, 50%, pause 10s, 100%"
	scaleDownDelay  = "10s"
	pollInterval    = "2s"
	imageV1         = "registry.example/bench:v1"
	imageV2         = "registry.example/bench:v2"

	// statusNamespace holds the sync's status ConfigMap; each strategy's
	// workloads have a namespace of their own.
	statusNamespace    = "plimsoll-bench"
	canaryNamespace    = "plimsoll-bench-canary"
	blueGreenNamespace = "plimsoll-bench-blue-green"
	rollingNamespace   = "plimsoll-bench-rolling"
	syncName           = "bench"

	// settle is the wait after all workloads are Healthy before the next
	// measurement starts, so that one rollout's last writes are not
	// counted in the next; idleWindow is how long idle is measured.
	settle     = 15 * time.Second
	idleWindow = 60 * time.Second
	// progressEvery is how often a wait logs how far it got.
	progressEvery = 30 * time.Second
)

// Keys of the contract (docs/reference.md), spelled out here so that the
// benchmark reads any version of the daemon without importing the code it
// measures.
const (
	keyStrategy       = "plimsoll.dev/strategy"
	keyService        = "plimsoll.dev/service"
	keySteps          = "plimsoll.dev/steps"
	keyActiveService  = "plimsoll.dev/active-service"
	keyScaleDownDelay = "plimsoll.dev/scale-down-delay"
	keyPhase          = "plimsoll.dev/phase"
	keyRevision       = "plimsoll.dev/revision"
	keyRole           = "plimsoll.dev/role"
	keyCommit         = "plimsoll.dev/commit"
	keySyncStatus     = "plimsoll.dev/sync-status"
	labelWorkload     = "plimsoll.dev/workload"
	phaseHealthy      = "Healthy"
	phaseDegraded     = "Degraded"
	roleActive        = "active"
)

// strategy is one of the strategies the benchmark rolls.
type strategy struct {
	name      string // as in plimsoll.dev/strategy
	namespace string
	prefix    string // of the workloads' names
	replicas  int
}

var (
	canary    = strategy{name: "canary", namespace: canaryNamespace, prefix: "c", replicas: rolloutReplicas}
	blueGreen = strategy{name: "blue-green", namespace: blueGreenNamespace, prefix: "bg", replicas: rolloutReplicas}
	// rolling is the scale benchmark's: many workloads of more pods.
	rolling = strategy{name: "rolling", namespace: rollingNamespace, prefix: "r", replicas: scaleReplicas}
)

// rolloutEnv is what a run of the benchmark is told by its environment.
type rolloutEnv struct {
	root       string
	bin        string // PLIMSOLL_BENCH_BIN
	label      string // PLIMSOLL_BENCH_LABEL
	kubeconfig string // PLIMSOLL_BENCH_KUBECONFIG
	sizes      []benchSize
	// rolloutTimeout, when set, bounds every rollout instead of
	// rolloutBound (PLIMSOLL_BENCH_ROLLOUT_TIMEOUT).
	rolloutTimeout time.Duration
}

// benchSize is a number of workloads per strategy and how many runs to
// take of it.
type benchSize struct{ n, runs int }

// readRolloutEnv reads the benchmark's settings:
//
//	PLIMSOLL_BENCH_BIN              the plimsoll binary (default bin/plimsoll)
//	PLIMSOLL_BENCH_LABEL            the name of its rows in the results (default "current")
//	PLIMSOLL_BENCH_KUBECONFIG       the benchmark's control plane (default .cluster-bench/kubeconfig)
//	PLIMSOLL_BENCH_SIZES            N:runs,... workloads per strategy and runs of each (default 100:1,300:1)
//	PLIMSOLL_BENCH_ROLLOUT_TIMEOUT  bound of each rollout (default 5m + 6s per workload)
func readRolloutEnv(t *testing.T) rolloutEnv {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatalf("find the repository root: %v", err)
	}
	env := rolloutEnv{
		root:       root,
		bin:        envOr("PLIMSOLL_BENCH_BIN", filepath.Join(root, "bin", "plimsoll")),
		label:      envOr("PLIMSOLL_BENCH_LABEL", "current"),
		kubeconfig: envOr("PLIMSOLL_BENCH_KUBECONFIG", filepath.Join(root, ".cluster-bench", "kubeconfig")),
	}
	if !filepath.IsAbs(env.bin) {
		env.bin = filepath.Join(root, env.bin)
	}
	for spec := range strings.SplitSeq(envOr("PLIMSOLL_BENCH_SIZES", "100:1,300:1"), ",") {
		ns, rs, _ := strings.Cut(strings.TrimSpace(spec), ":")
		n, err1 := strconv.Atoi(ns)
		runs, err2 := strconv.Atoi(cmp.Or(rs, "1"))
		if err1 != nil || err2 != nil || n < 1 || runs < 1 {
			t.Fatalf("PLIMSOLL_BENCH_SIZES: %q is not N:runs", spec)
		}
		env.sizes = append(env.sizes, benchSize{n: n, runs: runs})
	}
	if v := os.Getenv("PLIMSOLL_BENCH_ROLLOUT_TIMEOUT"); v != "" {
		if env.rolloutTimeout, err = time.ParseDuration(v); err != nil {
			t.Fatalf("PLIMSOLL_BENCH_ROLLOUT_TIMEOUT: %v", err)
		}
	}
	return env
}

// initialBound bounds the first sync of 2n workloads until all are
// Healthy: 5 minutes and 3 s per workload of a strategy, 10 minutes for
// 100.
func initialBound(n int) time.Duration { return 5*time.Minute + time.Duration(n)*3*time.Second }

// rolloutBound bounds the rollout of n workloads of one strategy:
// 5 minutes and 6 s per workload, 15 minutes for 100 and 35 for 300.
func (e rolloutEnv) rolloutBound(n int) time.Duration {
	if e.rolloutTimeout > 0 {
		return e.rolloutTimeout
	}
	return 5*time.Minute + time.Duration(n)*6*time.Second
}

// TestRolloutBenchmark rolls N canary and N blue-green workloads to a new
// image, one commit per strategy, with the daemon of PLIMSOLL_BENCH_BIN,
// and measures each rollout: time until all are Healthy, the daemon's CPU
// and peak RSS, and the API requests per workload, then 60 s of idle. It
// merges the runs into bench/rollout-results.json under
// PLIMSOLL_BENCH_LABEL and renders every label's runs into
// bench/results.md. Earlier runs of the same label and N are kept when
// they measured the same binary (by SHA-256), so that runs can be added in
// several sittings, and replaced when they did not. With
// PLIMSOLL_BENCH_DRY=1 it measures and logs the runs but records nothing:
// a probe (of another cluster, an audited one, a binary under work) is
// not for the record.
func TestRolloutBenchmark(t *testing.T) {
	env := readRolloutEnv(t)
	dry := os.Getenv("PLIMSOLL_BENCH_DRY") == "1"
	cfg, client := benchClient(t, env.kubeconfig)
	version := strings.TrimSpace(runOutput(t, env.bin, "version"))
	sum := fileSHA256(t, env.bin)
	jsonPath := filepath.Join(env.root, "bench", "rollout-results.json")
	mdPath := filepath.Join(env.root, "bench", "results.md")
	results := loadRolloutResults(t, jsonPath)
	for _, size := range env.sizes {
		kept := results.keep(env.label, size.n, sum)
		for i := kept + 1; i <= kept+size.runs; i++ {
			t.Logf("%s: N=%d, run %d, binary %s", env.label, size.n, i, version)
			rec := rolloutRun(t, env, cfg, client, size.n, i)
			rec.Binary, rec.BinarySHA256 = version, sum
			results.Runs = append(results.Runs, rec)
			if !dry {
				results.save(t, jsonPath)
				writeSection(t, mdPath, "rollout", results.render())
			}
			t.Logf("%s: N=%d, run %d: %s", env.label, size.n, i, rec.summary())
		}
	}
	t.Log("\n" + results.render())
}

// TestRenderRolloutResults renders bench/rollout-results.json into
// bench/results.md again, without measuring anything: for a change of the
// report's layout.
func TestRenderRolloutResults(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatalf("find the repository root: %v", err)
	}
	results := loadRolloutResults(t, filepath.Join(root, "bench", "rollout-results.json"))
	writeSection(t, filepath.Join(root, "bench", "results.md"), "rollout", results.render())
}

// rolloutRun takes one run of n workloads per strategy with plimsoll, the
// binary of env: see driverRun.
func rolloutRun(t *testing.T, env rolloutEnv, cfg *rest.Config, client kubernetes.Interface, n, run int) rolloutRecord {
	return driverRun(t, env, cfg, client, &plimsollDriver{bin: env.bin}, env.label, n, run)
}

// driverRun takes one run of n workloads per strategy with the controller
// of drv, its rows named label: fresh namespaces, the controller and its
// first revision, a canary rollout, a blue-green rollout, idle; then it
// stops the controller and deletes the namespaces.
func driverRun(t *testing.T, env rolloutEnv, cfg *rest.Config, client kubernetes.Interface, drv rolloutDriver, label string, n, run int) rolloutRecord {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer freshNamespaces(t, client, statusNamespace, canaryNamespace, blueGreenNamespace)()

	rec := rolloutRecord{
		Label: label, N: n, Run: run, Replicas: rolloutReplicas,
		Date:    time.Now().UTC().Format(time.RFC3339),
		Machine: machine(),
		Load:    []float64{loadAverage()},
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list the nodes: %v", err)
	}
	rec.Nodes = len(nodes.Items)
	both := []strategy{canary, blueGreen}
	watch := newHealthWatch()
	drv.watch(ctx, t, cfg, watch, both)
	proxy, work, proxyKubeconfig := startProxyDir(t, cfg)
	defer proxy.Close()
	logPath := filepath.Join(filepath.Dir(env.kubeconfig), "logs", fmt.Sprintf("%s-n%d-%d.log", label, n, run))
	procs, first := drv.begin(t, proxyKubeconfig, work, logPath, n, both)
	defer procs.stop(t)

	m := &meter{t: t, ctx: ctx, client: client, proxy: proxy, procs: procs, watch: watch}
	// The first revision: 2n workloads from nothing to Healthy.
	start := m.read(false)
	done := watch.waitHealthy(t, procs, both, n, 1, initialBound(n))
	rec.Initial = m.phase(start, procs.started(), 2*n, done, initialBound(n), first, both, 1)
	if !rec.Initial.Finished {
		rec.Load = append(rec.Load, loadAverage())
		rec.PeakRSSKiB = rec.Initial.PeakRSSKiB
		return rec
	}
	for _, s := range both {
		time.Sleep(settle)
		before := m.read(true)
		pushed := time.Now()
		key := drv.roll(t, s, imageV2, watch)
		bound := env.rolloutBound(n)
		done := watch.waitHealthy(t, procs, []strategy{s}, n, 2, bound)
		p := m.phase(before, pushed, n, done, bound, key, []strategy{s}, 2)
		if s == canary {
			rec.Canary = p
		} else {
			rec.BlueGreen = p
		}
	}
	time.Sleep(settle)
	before := m.read(false)
	time.Sleep(idleWindow)
	after := m.read(false)
	rec.Idle = idleRecord{
		Seconds:    after.at.Sub(before.at).Seconds(),
		CPUSeconds: after.cpu - before.cpu,
		API:        after.api.Minus(before.api),
		Daemon:     after.daemon.Minus(before.daemon),
	}
	rec.PeakRSSKiB = max(rec.Initial.PeakRSSKiB, rec.Canary.PeakRSSKiB, rec.BlueGreen.PeakRSSKiB, after.peakRSS)
	rec.Load = append(rec.Load, loadAverage())
	return rec
}

// meter takes the readings a measurement is the difference of.
type meter struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	proxy  *apiProxy
	procs  procGroup
	watch  *healthWatch
}

// reading is the state of the counters at one moment.
type reading struct {
	at      time.Time
	cpu     float64 // the controller's CPU seconds so far
	harness float64 // the benchmark process's CPU seconds so far
	peakRSS int64   // KiB
	rss     int64   // KiB, now
	api     requestCounts
	daemon  requestCounts
}

// read takes a reading; with resetPeak, it first sets the controller's
// peak RSS back to its current RSS, so that the next reading's peak is
// that of what happened in between.
func (m *meter) read(resetPeak bool) reading {
	t := m.t
	m.procs.failIfExited(t)
	if resetPeak {
		if err := m.procs.resetPeakRSS(); err != nil {
			t.Fatal(err)
		}
	}
	api, err := scrapeRequests(m.ctx, m.client)
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := m.procs.cpu()
	if err != nil {
		t.Fatal(err)
	}
	peak, rss, err := m.procs.memory()
	if err != nil {
		t.Fatal(err)
	}
	harness, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return reading{at: time.Now(), cpu: cpu, harness: harness, peakRSS: peak, rss: rss, api: api, daemon: m.proxy.Snapshot()}
}

// phase measures what happened since reading before: the rollout of n
// workloads of strategies to revision, started at start (the push of a
// commit, the apply of manifests), which ended (done) or not within
// bound. key is what the rollout's applied time is recorded under.
func (m *meter) phase(before reading, start time.Time, n int, done bool, bound time.Duration, key string, ss []strategy, revision int) phaseRecord {
	after := m.read(false)
	times := m.watch.healthyTimes(ss, revision, start)
	p := phaseRecord{
		Workloads: n, Healthy: len(times), Degraded: m.watch.count(ss, phaseDegraded),
		Finished: done, BoundSeconds: bound.Seconds(),
		CPUSeconds: after.cpu - before.cpu, HarnessCPUSeconds: after.harness - before.harness, PeakRSSKiB: after.peakRSS,
		API: after.api.Minus(before.api), Daemon: after.daemon.Minus(before.daemon),
	}
	if at, ok := m.watch.appliedAt(key); ok {
		p.AppliedSeconds = at.Sub(start).Seconds()
	}
	if len(times) > 0 {
		p.FirstSeconds = times[0].Seconds()
	}
	// The median workload: with every workload done, the middle one; a
	// workload not done is later than any done, so the median is known
	// as long as more than half are done.
	if len(times) > n/2 {
		p.MedianSeconds = times[n/2].Seconds()
	}
	if done {
		p.TotalSeconds = times[len(times)-1].Seconds()
	} else {
		p.TotalSeconds = bound.Seconds()
	}
	return p
}

// benchClient is a client of the benchmark's control plane, as its admin.
func benchClient(t *testing.T, kubeconfig string) (*rest.Config, kubernetes.Interface) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig %s (is the benchmark's control plane up? make bench starts it): %v", kubeconfig, err)
	}
	return cfg, kubernetes.NewForConfigOrDie(cfg)
}

// fileSHA256 returns the SHA-256 of the file at path, in hex.
func fileSHA256(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// machine describes the machine the benchmark runs on.
func machine() string {
	model := "unknown CPU"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d cores, %s", runtime.NumCPU(), model)
}

func envOr(key, fallback string) string {
	return cmp.Or(os.Getenv(key), fallback)
}
