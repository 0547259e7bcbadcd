//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// benchRepo is a Git work tree of the workloads' manifests and the bare
// repository the daemon fetches from; commits lists what was pushed.
type benchRepo struct {
	work, bare string
	n          int
	commits    []string
}

// newBenchRepo writes n canary and n blue-green workloads at imageV1,
// commits them and pushes them to a new bare repository.
func newBenchRepo(t *testing.T, n int) *benchRepo {
	r := &benchRepo{work: t.TempDir(), bare: filepath.Join(t.TempDir(), "bench.git"), n: n}
	r.git(t, "init", "--quiet", "--initial-branch=main")
	r.git(t, "init", "--quiet", "--bare", "--initial-branch=main", r.bare)
	for _, s := range []strategy{canary, blueGreen} {
		r.write(t, s, imageV1)
	}
	r.commit(t, fmt.Sprintf("%d canary and %d blue-green workloads at %s", n, n, imageV1))
	return r
}

// roll changes the image of every workload of s, commits, pushes, and
// returns the commit.
func (r *benchRepo) roll(t *testing.T, s strategy, image string) string {
	r.write(t, s, image)
	return r.commit(t, fmt.Sprintf("Roll the %d %s workloads to %s", r.n, s.name, image))
}

func (r *benchRepo) write(t *testing.T, s strategy, image string) {
	dir := filepath.Join(r.work, s.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("create %s: %v", dir, err)
	}
	for i := 0; i < r.n; i++ {
		name := fmt.Sprintf("%s-%04d", s.prefix, i)
		file := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(file, []byte(workloadManifest(s, name, image)), 0o644); err != nil {
			t.Fatalf("write %s: %v", file, err)
		}
	}
}

func (r *benchRepo) commit(t *testing.T, message string) string {
	r.git(t, "add", "--all")
	r.git(t, "-c", "user.name=bench", "-c", "user.email=bench@plimsoll.dev", "commit", "--quiet", "-m", message)
	r.git(t, "push", "--quiet", r.bare, "HEAD:refs/heads/main")
	commit := strings.TrimSpace(r.git(t, "rev-parse", "HEAD"))
	r.commits = append(r.commits, commit)
	return commit
}

func (r *benchRepo) git(t *testing.T, args ...string) string {
	return runOutput(t, "git", append([]string{"-C", r.work}, args...)...)
}

// workloadManifest is one workload of strategy s: its Deployment, as in
// examples/canary and examples/blue-green but with timed steps and delay,
// and its Service.
func workloadManifest(s strategy, name, image string) string {
	annotations := fmt.Sprintf("    %s: canary\n    %s: %s\n    %s: %q\n", keyStrategy, keyService, name, keySteps, canarySteps)
	if s == blueGreen {
		annotations = fmt.Sprintf("    %s: blue-green\n    %s: %s\n    %s: %s\n", keyStrategy, keyActiveService, name, keyScaleDownDelay, scaleDownDelay)
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: %[2]s
  labels:
    app: %[1]s
  annotations:
%[3]sspec:
  replicas: %[4]d
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
      - name: app
        image: %[5]s
        ports:
        - name: http
          containerPort: 8080
        resources:
          requests:
            cpu: 10m
            memory: 16Mi
---
apiVersion: v1
kind: Service
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  selector:
    app: %[1]s
  ports:
  - name: http
    port: 80
    targetPort: http
`, name, s.namespace, annotations, rolloutReplicas, image)
}

// daemon is a running `plimsoll run`.
type daemon struct {
	cmd     *exec.Cmd
	started time.Time
	log     *os.File
	exited  chan struct{}
	waitErr error
}

// startDaemon starts bin with args, its output in logPath.
func startDaemon(t *testing.T, bin, logPath string, args ...string) *daemon {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatalf("create the daemon's log directory: %v", err)
	}
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("create the daemon's log: %v", err)
	}
	d := &daemon{cmd: exec.Command(bin, args...), log: f, exited: make(chan struct{})}
	d.cmd.Stdout, d.cmd.Stderr = f, f
	d.started = time.Now()
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	t.Logf("daemon started (pid %d), log %s", d.cmd.Process.Pid, logPath)
	return d
}

// failIfExited fails the test when the daemon is no longer running.
func (d *daemon) failIfExited(t *testing.T) {
	select {
	case <-d.exited:
		out, _ := os.ReadFile(d.log.Name())
		t.Fatalf("the daemon exited: %v\n%s", d.waitErr, tail(string(out)))
	default:
	}
}

// stop sends SIGTERM, then SIGKILL after stopGrace, and waits for the exit.
func (d *daemon) stop(t *testing.T) {
	defer d.log.Close()
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(stopGrace):
		t.Logf("the daemon did not stop on SIGTERM within %s; killing it", stopGrace)
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
}

// healthWatch follows, through informers, the phase and revision of every
// workload's primary Deployment (the canary's stable Deployment <name>,
// the blue-green color with role active), and the commits the sync status
// names. It records when each workload was first seen Healthy at each
// revision. It reads the cluster once and then only watches, so that its
// own requests do not weigh in the API server's counts.
type healthWatch struct {
	mu      sync.Mutex
	healthy map[string]map[int]time.Time // "namespace/name" -> revision -> first seen Healthy
	phase   map[string]string            // "namespace/name" -> phase of the primary
	applied map[string]time.Time         // commit -> first seen in the sync status
}

func startHealthWatch(ctx context.Context, t *testing.T, client kubernetes.Interface) *healthWatch {
	w := &healthWatch{healthy: map[string]map[int]time.Time{}, phase: map[string]string{}, applied: map[string]time.Time{}}
	var synced []cache.InformerSynced
	for _, s := range []strategy{canary, blueGreen} {
		lw := cache.NewFilteredListWatchFromClient(client.AppsV1().RESTClient(), "deployments", s.namespace,
			func(o *metav1.ListOptions) { o.LabelSelector = labelWorkload })
		inf := cache.NewSharedIndexInformer(lw, &appsv1.Deployment{}, 0, cache.Indexers{})
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.observe(s, obj) },
			UpdateFunc: func(_, obj any) { w.observe(s, obj) },
		}); err != nil {
			t.Fatalf("watch the Deployments of %s: %v", s.namespace, err)
		}
		go inf.Run(ctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", statusNamespace,
		fields.OneTermEqualSelector("metadata.name", "plimsoll-sync-"+syncName))
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	record := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if c := cm.Annotations[keyCommit]; c != "" {
			if _, seen := w.applied[c]; !seen {
				w.applied[c] = time.Now()
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		t.Fatalf("watch the sync status: %v", err)
	}
	go inf.Run(ctx.Done())
	synced = append(synced, inf.HasSynced)
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("the benchmark's informers did not sync")
	}
	return w
}

// observe records the status of a workload whose Deployment changed.
func (w *healthWatch) observe(s strategy, obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	name := d.Labels[labelWorkload]
	primary := d.Name == name
	if s == blueGreen {
		primary = d.Annotations[keyRole] == roleActive
	}
	if name == "" || !primary {
		return
	}
	key := d.Namespace + "/" + name
	phase := d.Annotations[keyPhase]
	rev, _ := strconv.Atoi(d.Annotations[keyRevision])
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase[key] = phase
	if phase != phaseHealthy {
		return
	}
	if w.healthy[key] == nil {
		w.healthy[key] = map[int]time.Time{}
	}
	if _, seen := w.healthy[key][rev]; !seen {
		w.healthy[key][rev] = now
	}
}

// healthyTimes returns, sorted, how long after start each workload of ss
// was first seen Healthy at revision.
func (w *healthWatch) healthyTimes(ss []strategy, revision int, start time.Time) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for key, revs := range w.healthy {
		if at, ok := revs[revision]; ok && inStrategies(key, ss) {
			out = append(out, at.Sub(start))
		}
	}
	slices.Sort(out)
	return out
}

// count returns how many workloads of ss are in phase now.
func (w *healthWatch) count(ss []strategy, phase string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for key, p := range w.phase {
		if p == phase && inStrategies(key, ss) {
			n++
		}
	}
	return n
}

// appliedAt returns when the sync status was first seen naming commit.
func (w *healthWatch) appliedAt(commit string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.applied[commit]
	return at, ok
}

// waitHealthy waits until the n workloads of each of ss are Healthy at
// revision, for at most bound, and reports whether they all got there. It
// fails the test if the daemon exits.
func (w *healthWatch) waitHealthy(t *testing.T, d *daemon, ss []strategy, n, revision int, bound time.Duration) bool {
	start := time.Now()
	want := n * len(ss)
	lastLog := start
	for {
		d.failIfExited(t)
		got := len(w.healthyTimes(ss, revision, start))
		if got == want {
			return true
		}
		if time.Since(start) >= bound {
			t.Logf("%s: %d/%d Healthy at revision %d after %s: did not finish", strategyNames(ss), got, want, revision, bound)
			return false
		}
		if time.Since(lastLog) >= progressEvery {
			lastLog = time.Now()
			t.Logf("%s: %d/%d Healthy at revision %d after %s", strategyNames(ss), got, want, revision, time.Since(start).Round(time.Second))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func inStrategies(key string, ss []strategy) bool {
	ns, _, _ := strings.Cut(key, "/")
	return slices.ContainsFunc(ss, func(s strategy) bool { return s.namespace == ns })
}

func strategyNames(ss []strategy) string {
	var names []string
	for _, s := range ss {
		names = append(names, s.name)
	}
	return strings.Join(names, "+")
}

// createNamespace creates namespace ns and waits for its default
// ServiceAccount, without which no pod can be created in it.
func createNamespace(t *testing.T, client kubernetes.Interface, ns string) {
	ctx := context.Background()
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("wait for the default ServiceAccount of %s: %v", ns, err)
	}
}

// deleteNamespaceIfExists deletes namespace ns, if there is one, and
// waits until it is gone, so that a run starts on an empty cluster and the
// deletion of its pods does not load the next run.
func deleteNamespaceIfExists(t *testing.T, client kubernetes.Interface, ns string) {
	ctx := context.Background()
	err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Fatalf("delete namespace %s: %v", ns, err)
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("wait for namespace %s to be deleted: %v", ns, err)
	}
}
