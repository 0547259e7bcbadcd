//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"plimsoll.dev/plimsoll/test/internal/kit"
	"plimsoll.dev/plimsoll/test/internal/testgit"
)

// The shape of the many-syncs benchmark.
const (
	// manyDeployments of manyPods pods and manyConfigMaps ConfigMaps are
	// what each sync applies.
	manyDeployments = 5
	manyPods        = 2
	manyConfigMaps  = 20
	// manyInterval is every tool's poll: of the repository and of each
	// sync (plimsoll's --interval and the declarations' interval, Flux's
	// GitRepository and Kustomizations).
	manyInterval = "10s"
	// manyWorkers is how many syncs a plimsoll replica runs at once, and
	// how many Kustomizations kustomize-controller reconciles at once.
	manyWorkers = 4
	// manyTimeout bounds every wait for the syncs to apply a commit.
	manyTimeout = 45 * time.Minute
)

// manyEnv is the settings of the many-syncs benchmark:
//
//	PLIMSOLL_BENCH_BIN            the plimsoll binary (default bin/plimsoll)
//	PLIMSOLL_BENCH_KUBECONFIG     the control plane (default .cluster-bench/kubeconfig)
//	PLIMSOLL_BENCH_MANY_N         syncs (default 200)
//	PLIMSOLL_BENCH_MANY_REPLICAS  the replica counts of plimsoll to measure (default 1,3)
//	PLIMSOLL_BENCH_MANY_SINGLES   single-sync daemons to measure (default 20)
//	PLIMSOLL_BENCH_MANY_IDLE      the idle window (default 60s)
//	PLIMSOLL_BENCH_TOOLS          which setups, of plimsoll, singles, flux (default all)
//	PLIMSOLL_BENCH_NOTE           a line printed above the results
type manyEnv struct {
	root, bin, kubeconfig string
	n, singles            int
	replicas              []int
	idle                  time.Duration
	tools                 []string
	note                  string
	flux                  *fluxDriver
	fluxVersion           string
}

func readManyEnv(t *testing.T) manyEnv {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	e := manyEnv{
		root:       root,
		bin:        envOr("PLIMSOLL_BENCH_BIN", filepath.Join(root, "bin", "plimsoll")),
		kubeconfig: envOr("PLIMSOLL_BENCH_KUBECONFIG", filepath.Join(root, ".cluster-bench", "kubeconfig")),
		n:          envInt(t, "PLIMSOLL_BENCH_MANY_N", "200")[0],
		replicas:   envInt(t, "PLIMSOLL_BENCH_MANY_REPLICAS", "1,3"),
		singles:    envInt(t, "PLIMSOLL_BENCH_MANY_SINGLES", "20")[0],
		tools:      strings.FieldsFunc(os.Getenv("PLIMSOLL_BENCH_TOOLS"), func(r rune) bool { return r == ',' }),
		note:       os.Getenv("PLIMSOLL_BENCH_NOTE"),
	}
	idle, err := time.ParseDuration(envOr("PLIMSOLL_BENCH_MANY_IDLE", "60s"))
	if err != nil {
		t.Fatalf("PLIMSOLL_BENCH_MANY_IDLE: %v", err)
	}
	e.idle = idle
	if e.measures("flux") {
		kubectl := filepath.Join(filepath.Dir(e.kubeconfig), "bin", "kubectl")
		e.flux = newFluxDriver(t, root)
		runOutput(t, kubectl, "--kubeconfig", e.kubeconfig, "apply", "--server-side", "--force-conflicts",
			"--field-manager", "bench", "-f", filepath.Join(filepath.Dir(e.flux.source), "crds"))
		runOutput(t, kubectl, "--kubeconfig", e.kubeconfig, "wait", "--for", "condition=Established", "crd", "--all", "--timeout", "2m")
		e.fluxVersion = "source-controller " + toolModuleVersion(t, root, "flux", "github.com/fluxcd/source-controller") +
			", kustomize-controller " + toolModuleVersion(t, root, "flux", "github.com/fluxcd/kustomize-controller")
	}
	return e
}

// measures tells whether setup is to be measured.
func (e manyEnv) measures(setup string) bool {
	return len(e.tools) == 0 || slices.Contains(e.tools, setup)
}

// manyRecord is one setup's measurements.
type manyRecord struct {
	Setup string `json:"setup"`
	// Syncs are the syncs it served; Processes how many processes.
	Syncs     int `json:"syncs"`
	Processes int `json:"processes"`
	// FirstSeconds is from the start to every sync applied; CommitSeconds
	// from the push of one commit touching every sync to every sync
	// applied.
	FirstSeconds  float64 `json:"firstSeconds"`
	CommitSeconds float64 `json:"commitSeconds"`
	// PeakRSSKiB is each process's peak RSS over the whole run.
	PeakRSSKiB []int64 `json:"peakRSSKiB"`
	// IdleSeconds is the idle window, with the CPU seconds and the API
	// requests of every process together in it.
	IdleSeconds    float64       `json:"idleSeconds"`
	IdleCPUSeconds float64       `json:"idleCPUSeconds"`
	IdleRequests   requestCounts `json:"idleRequests"`
	// CommitRequests are the requests from the push to every sync applied.
	CommitRequests requestCounts `json:"commitRequests"`
}

// manySetup is a setup under measurement: its processes, each behind a
// proxy that counts its requests, and how to tell that its syncs applied
// a commit.
type manySetup struct {
	procs   procGroup
	proxies []*apiProxy
	applied func(ctx context.Context, commit string) (int, error)
}

func (s *manySetup) requests() requestCounts {
	sum := requestCounts{Verbs: map[string]int64{}}
	for _, p := range s.proxies {
		c := p.Snapshot()
		sum.Errors += c.Errors
		for v, n := range c.Verbs {
			sum.Verbs[v] += n
		}
	}
	return sum
}

// TestManySyncsBenchmark serves N syncs, each of 5 Deployments of 2 pods
// and 20 ConfigMaps in a namespace of its own, read from paths of one
// repository: by plimsoll (the syncs declared in Git, each written as its
// namespace's ServiceAccount) on 1 and on 3 replicas, by single-sync
// daemons (the first 20 syncs, one daemon each: the memory a sync costs
// alone), and by Flux's source-controller and kustomize-controller (one
// GitRepository, N Kustomizations, each impersonating the same
// ServiceAccount). Each setup is measured from its start to every sync
// applied, then idle, then from one commit touching every sync to every
// sync applied. Writes bench/many-results.json and its section of
// bench/results.md.
func TestManySyncsBenchmark(t *testing.T) {
	env := readManyEnv(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig (is the control plane up?): %v", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	client := kubernetes.NewForConfigOrDie(cfg)
	// Each setup's record is written as soon as it is measured: a run
	// stopped in a later setup keeps the earlier ones. A run limited to
	// some setups (PLIMSOLL_BENCH_TOOLS) keeps the recorded ones of the
	// others.
	var records []manyRecord
	if len(env.tools) > 0 {
		records = loadMany(t, env)
	}
	record := func(r manyRecord) {
		i := slices.IndexFunc(records, func(old manyRecord) bool { return old.Setup == r.Setup })
		if i < 0 {
			records = append(records, r)
		} else {
			records[i] = r
		}
		writeMany(t, env, records)
	}
	for i, replicas := range env.replicas {
		if env.measures("plimsoll") {
			record(measureMany(t, env, cfg, client, fmt.Sprintf("bm%d", i), fmt.Sprintf("plimsoll, %d replica(s)", replicas), env.n,
				func(ns manyNamespaces, _, rootURL string) *manySetup {
					return startPlimsolls(t, env, cfg, ns, rootURL, replicas)
				}))
		}
	}
	if env.measures("singles") && env.singles > 0 {
		record(measureMany(t, env, cfg, client, "bms", fmt.Sprintf("plimsoll, %d daemons of one sync", env.singles), env.singles,
			func(ns manyNamespaces, appsURL, _ string) *manySetup { return startSingles(t, env, cfg, ns, appsURL) }))
	}
	if env.flux != nil {
		record(measureMany(t, env, cfg, client, "bmf", "Flux, "+strconv.Itoa(env.n)+" Kustomizations", env.n,
			func(ns manyNamespaces, appsURL, _ string) *manySetup { return startFlux(t, env, cfg, ns, appsURL) }))
	}
	t.Log("\n" + renderMany(env, records))
}

// loadMany reads the records of bench/many-results.json; none if there
// is no such file.
func loadMany(t *testing.T, env manyEnv) []manyRecord {
	raw, err := os.ReadFile(filepath.Join(env.root, "bench", "many-results.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var records []manyRecord
	if err := json.Unmarshal(raw, &records); err != nil {
		t.Fatalf("read bench/many-results.json: %v", err)
	}
	return records
}

// writeMany writes the records measured so far to bench/many-results.json
// and their section of bench/results.md.
func writeMany(t *testing.T, env manyEnv, records []manyRecord) {
	raw, err := json.MarshalIndent(records, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env.root, "bench", "many-results.json"), append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	writeSection(t, filepath.Join(env.root, "bench", "results.md"), "many-syncs", renderMany(env, records))
}

// manyNamespaces are a setup's namespaces: home (records, declarations,
// Leases; Flux's GitRepository) and one per sync.
type manyNamespaces struct {
	home  string
	syncs []string
}

// syncFiles are the manifests of sync i, at version.
func syncFiles(i int, version string) map[string]string {
	dir := fmt.Sprintf("s%03d/", i)
	files := map[string]string{}
	var cms []string
	for c := range manyConfigMaps {
		cms = append(cms, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-%02d}\ndata: {version: %q}\n", c, version))
	}
	files[dir+"config.yaml"] = strings.Join(cms, "---\n")
	for d := range manyDeployments {
		files[dir+fmt.Sprintf("deploy-%d.yaml", d)] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: app-%d}
spec:
  replicas: %d
  selector: {matchLabels: {app: app-%d}}
  template:
    metadata: {labels: {app: app-%d}}
    spec:
      containers:
      - name: app
        image: registry.example/app:v1
        resources: {requests: {cpu: 1m, memory: 4Mi}}
`, d, manyPods, d, d)
	}
	return files
}

// measureMany runs one setup of n syncs: namespaces and identities, the
// repositories, the processes (start, given the URLs of the syncs'
// repository and of the root one that declares them); the first sync,
// idle, one commit; then it stops the processes and deletes the
// namespaces.
func measureMany(t *testing.T, env manyEnv, cfg *rest.Config, client kubernetes.Interface, prefix, setup string, n int,
	start func(ns manyNamespaces, appsURL, rootURL string) *manySetup) manyRecord {
	ctx := context.Background()
	t.Logf("%s: %d syncs", setup, n)
	ns := manyNamespaces{home: prefix + "-home"}
	deleteNamespaceIfExists(t, client, ns.home)
	createNamespace(t, client, ns.home)
	files := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("%s-s%03d", prefix, i)
		deleteNamespaceIfExists(t, client, name)
		createNamespace(t, client, name)
		createDeployer(t, client, name)
		ns.syncs = append(ns.syncs, name)
		for f, text := range syncFiles(i, "v1") {
			files[f] = text
		}
	}
	// The syncs' repository is served over smart HTTP (git http-backend),
	// as Flux needs; the root one is read from its file:// URL.
	apps := testgit.New(t)
	first := apps.Commit("first", files)
	appsURL := serveHTTP(t, apps.Bare()) + "/" + filepath.Base(apps.Bare())
	declarations := map[string]string{}
	for i, name := range ns.syncs {
		declarations[fmt.Sprintf("s%03d.yaml", i)] = kit.SyncDeclaration(name, ns.home, fmt.Sprintf(
			"repository: %s\npath: s%03d\ninterval: %s\nnamespace: %s\nserviceAccount: %s/deployer\n", appsURL, i, manyInterval, name, name))
	}
	root := testgit.New(t)
	root.Commit("first", declarations)

	began := time.Now()
	s := start(ns, appsURL, root.URL())
	waitApplied(t, s, first, n, "the first sync")
	rec := manyRecord{Setup: setup, Syncs: n, Processes: len(s.procs), FirstSeconds: time.Since(began).Seconds()}
	time.Sleep(settle)

	cpu0, err := s.procs.cpu()
	if err != nil {
		t.Fatal(err)
	}
	req0, at := s.requests(), time.Now()
	time.Sleep(env.idle)
	cpu1, err := s.procs.cpu()
	if err != nil {
		t.Fatal(err)
	}
	rec.IdleSeconds, rec.IdleCPUSeconds, rec.IdleRequests = time.Since(at).Seconds(), cpu1-cpu0, s.requests().Minus(req0)

	changed := map[string]string{}
	for i := range n {
		for f, text := range syncFiles(i, "v2") {
			if strings.HasSuffix(f, "config.yaml") {
				changed[f] = text
			}
		}
	}
	req0 = s.requests()
	next := apps.Commit("every sync", changed)
	pushed := time.Now()
	waitApplied(t, s, next, n, "the commit touching every sync")
	rec.CommitSeconds, rec.CommitRequests = time.Since(pushed).Seconds(), s.requests().Minus(req0)
	for _, d := range s.procs {
		peak, err := procPeak(d)
		if err != nil {
			t.Fatal(err)
		}
		rec.PeakRSSKiB = append(rec.PeakRSSKiB, peak)
	}
	s.procs.failIfExited(t)
	s.procs.stop(t)
	for _, p := range s.proxies {
		p.Close()
	}
	dropDeclarationFinalizers(ctx, t, client, ns.home)
	if env.flux != nil && strings.HasPrefix(setup, "Flux") {
		for _, name := range ns.syncs {
			dropFluxFinalizers(ctx, t, cfg, name)
		}
		dropFluxFinalizers(ctx, t, cfg, ns.home)
	}
	deleteNamespace(t, client, append([]string{ns.home}, ns.syncs...)...)
	t.Logf("%s: first sync %.1fs, commit %.1fs, idle %.2f CPU s and %d requests in %.0fs, peak RSS %v KiB", setup,
		rec.FirstSeconds, rec.CommitSeconds, rec.IdleCPUSeconds, rec.IdleRequests.Total(), rec.IdleSeconds, rec.PeakRSSKiB)
	return rec
}

// dropDeclarationFinalizers removes the finalizer of every sync
// declaration in ns, once the daemons that would retire them are stopped,
// so that the namespace can be deleted.
func dropDeclarationFinalizers(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) {
	list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "plimsoll.dev/sync-declaration"})
	if err != nil {
		t.Fatalf("list the declarations of %s: %v", ns, err)
	}
	for _, cm := range list.Items {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := client.CoreV1().ConfigMaps(ns).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("drop the finalizer of declaration %s/%s: %v", ns, cm.Name, err)
		}
	}
}

// waitApplied waits until n syncs of s have applied commit.
func waitApplied(t *testing.T, s *manySetup, commit string, n int, what string) {
	ctx := context.Background()
	last := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, manyTimeout, true, func(ctx context.Context) (bool, error) {
		s.procs.failIfExited(t)
		got, err := s.applied(ctx, commit)
		if err != nil {
			return false, nil
		}
		if time.Since(last) > progressEvery {
			t.Logf("%s: %d of %d syncs applied %.7s", what, got, n, commit)
			last = time.Now()
		}
		return got >= n, nil
	})
	if err != nil {
		t.Fatalf("wait for %s: %v", what, err)
	}
}

// createDeployer creates ServiceAccount deployer of namespace ns, which
// may do everything there.
func createDeployer(t *testing.T, client kubernetes.Interface, ns string) {
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ServiceAccount %s/deployer: %v", ns, err)
	}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Role %s/deployer: %v", ns, err)
	}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RoleBinding %s/deployer: %v", ns, err)
	}
}

// recordsApplied counts the syncs of ns whose record in its home says
// commit is applied.
func recordsApplied(client kubernetes.Interface, ns manyNamespaces) func(ctx context.Context, commit string) (int, error) {
	return func(ctx context.Context, commit string) (int, error) {
		list, err := client.CoreV1().ConfigMaps(ns.home).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=plimsoll"})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, cm := range list.Items {
			name := strings.TrimPrefix(cm.Name, "plimsoll-sync-")
			if slices.Contains(ns.syncs, name) && cm.Annotations[keyCommit] == commit && cm.Annotations[keySyncStatus] == "Synced" {
				n++
			}
		}
		return n, nil
	}
}

// startPlimsolls starts replicas daemons serving the root repository's
// declarations.
func startPlimsolls(t *testing.T, env manyEnv, cfg *rest.Config, ns manyNamespaces, rootURL string, replicas int) *manySetup {
	s := &manySetup{applied: recordsApplied(kubernetes.NewForConfigOrDie(cfg), ns)}
	for range replicas {
		proxy, work, kubeconfig := startProxyDir(t, cfg)
		d := kit.LaunchDaemon(t, benchTarget{bin: env.bin, flags: []string{"--repo", rootURL, "--kubeconfig", kubeconfig,
			"--namespace", ns.home, "--status-namespace", ns.home, "--sync-name", ns.home + "-root", "--cache-dir", filepath.Join(work, "cache"),
			"--syncs-namespace", ns.home, "--sync-workers", strconv.Itoa(manyWorkers), "--interval", manyInterval, "--ui-listen", "",
			"--log-format", "json"}})
		s.procs, s.proxies = append(s.procs, d), append(s.proxies, proxy)
	}
	return s
}

// startSingles starts a daemon of one sync for each sync.
func startSingles(t *testing.T, env manyEnv, cfg *rest.Config, ns manyNamespaces, appsURL string) *manySetup {
	s := &manySetup{applied: recordsApplied(kubernetes.NewForConfigOrDie(cfg), ns)}
	for i, name := range ns.syncs {
		proxy, work, kubeconfig := startProxyDir(t, cfg)
		d := kit.LaunchDaemon(t, benchTarget{bin: env.bin, flags: []string{"--repo", appsURL, "--path", fmt.Sprintf("s%03d", i),
			"--kubeconfig", kubeconfig, "--namespace", name, "--status-namespace", ns.home, "--sync-name", name,
			"--cache-dir", filepath.Join(work, "cache"), "--interval", manyInterval, "--ui-listen", "", "--log-format", "json"}})
		s.procs, s.proxies = append(s.procs, d), append(s.proxies, proxy)
	}
	return s
}

// startFlux starts source-controller and kustomize-controller, one
// GitRepository in home and a Kustomization in each sync's namespace,
// impersonating its deployer.
func startFlux(t *testing.T, env manyEnv, cfg *rest.Config, ns manyNamespaces, appsURL string) *manySetup {
	ctx := context.Background()
	proxy, work, kubeconfig := startProxyDir(t, cfg)
	procs := env.flux.startControllers(t, kubeconfig, work, filepath.Join(filepath.Dir(env.kubeconfig), "logs", "many-flux"), ns.home,
		"--concurrent="+strconv.Itoa(manyWorkers))
	dyn := dynamic.NewForConfigOrDie(cfg)
	create := func(gvrName string, obj *unstructured.Unstructured) {
		gvr := gitRepositoryGVR
		if gvrName == "Kustomization" {
			gvr = kustomizationGVR
		}
		if _, err := dyn.Resource(gvr).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s/%s: %v", gvrName, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	create("GitRepository", &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": "apps", "namespace": ns.home},
		"spec":     map[string]any{"interval": manyInterval, "timeout": "60s", "url": appsURL, "ref": map[string]any{"branch": "main"}},
	}})
	for i, name := range ns.syncs {
		create("Kustomization", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": "apps", "namespace": name},
			"spec": map[string]any{"interval": manyInterval, "timeout": "30m", "path": fmt.Sprintf("./s%03d", i), "prune": true,
				"targetNamespace": name, "serviceAccountName": "deployer",
				"sourceRef": map[string]any{"kind": "GitRepository", "name": "apps", "namespace": ns.home}},
		}})
	}
	applied := func(ctx context.Context, commit string) (int, error) {
		n := 0
		for _, name := range ns.syncs {
			u, err := dyn.Resource(kustomizationGVR).Namespace(name).Get(ctx, "apps", metav1.GetOptions{})
			if err != nil {
				return 0, err
			}
			// lastAppliedRevision is written only once the revision is
			// applied. Ready is not asked: at 200 Kustomizations polled
			// every 10s by 4 workers, some are always in the middle of a
			// reconcile (Ready Unknown), and all 200 are never Ready at
			// one moment, though every one applied the commit.
			rev, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
			if strings.HasSuffix(rev, "@sha1:"+commit) {
				n++
			}
		}
		return n, nil
	}
	return &manySetup{procs: procs, proxies: []*apiProxy{proxy}, applied: applied}
}

// benchTarget is a plimsoll daemon of the benchmark: its binary and
// flags.
type benchTarget struct {
	bin   string
	flags []string
}

func (b benchTarget) RunFlags(extra ...string) (string, []string) {
	return b.bin, append(slices.Clone(b.flags), extra...)
}

// procPeak is d's peak RSS in KiB.
func procPeak(d *kit.Daemon) (int64, error) {
	peak, _, err := procGroup{d}.memory()
	return peak, err
}

// renderMany is the section of bench/results.md.
func renderMany(env manyEnv, records []manyRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Many syncs in one install\n\n")
	if env.note != "" {
		fmt.Fprintf(&b, "%s\n\n", env.note)
	}
	fmt.Fprintf(&b, `Each sync applies %d Deployments of %d pods and %d ConfigMaps into a
namespace of its own, read from its own path of one repository served over HTTP, polled
every %s. plimsoll's syncs are declared in Git and each writes as its
namespace's ServiceAccount; Flux (%s) has one GitRepository and a
Kustomization per sync impersonating the same ServiceAccount; %d workers
on each side. "First" is from the start to every sync applied, "commit"
from the push of one commit touching every sync (its ConfigMaps) to every
sync applied; idle is %s with nothing to do, every process together; the
requests are the tools' own, counted by a proxy in front of each process.
Generated by `+"`make bench-many`"+` on %s.

| setup | syncs | processes | first | commit | peak RSS per process (least–most) | peak RSS per sync | idle CPU | idle requests | commit requests |
|---|---|---|---|---|---|---|---|---|---|
`, manyDeployments, manyPods, manyConfigMaps, manyInterval, env.fluxVersion, manyWorkers, env.idle, time.Now().UTC().Format("2006-01-02"))
	for _, r := range records {
		peaks := slices.Sorted(slices.Values(r.PeakRSSKiB))
		var sum int64
		for _, p := range peaks {
			sum += p
		}
		// The least and the most, not a median: the processes of a row
		// need not be alike (Flux's two controllers, 107 and 189 MiB).
		perProcess := "—"
		if n := len(peaks); n > 0 {
			perProcess = fmt.Sprintf("%d MiB", peaks[0]/1024)
			if hi := peaks[n-1] / 1024; hi != peaks[0]/1024 {
				perProcess = fmt.Sprintf("%d–%d MiB", peaks[0]/1024, hi)
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f s | %.1f s | %s | %.1f MiB | %.2f s | %d | %d |\n", r.Setup, r.Syncs, r.Processes,
			r.FirstSeconds, r.CommitSeconds, perProcess, float64(sum)/1024/float64(max(r.Syncs, 1)),
			r.IdleCPUSeconds, r.IdleRequests.Total(), r.CommitRequests.Total())
	}
	fmt.Fprintf(&b, "\nEvery run: [many-results.json](many-results.json).\n")
	return b.String()
}
