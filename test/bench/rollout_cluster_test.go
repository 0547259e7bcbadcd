//go:build bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
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

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// workloadFiles are the manifests of the n workloads of s at image, one
// file each under the strategy's directory: what plimsoll's repository
// holds.
func workloadFiles(s strategy, n int, image string) map[string]string {
	files := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("%s-%04d", s.prefix, i)
		files[s.name+"/"+name+".yaml"] = workloadManifest(s, name, image)
	}
	return files
}

// workloadManifest is one workload of strategy s: its Deployment, as in
// examples/canary and examples/blue-green but with timed steps and delay,
// and, but for a rolling workload, its Service.
func workloadManifest(s strategy, name, image string) string {
	var annotations string
	switch s {
	case canary:
		annotations = fmt.Sprintf("    %s: canary\n    %s: %s\n    %s: %q\n", keyStrategy, keyService, name, keySteps, canarySteps)
	case blueGreen:
		annotations = fmt.Sprintf("    %s: blue-green\n    %s: %s\n    %s: %s\n", keyStrategy, keyActiveService, name, keyScaleDownDelay, scaleDownDelay)
	default:
		annotations = fmt.Sprintf("    %s: rolling\n", keyStrategy)
	}
	spec := workloadSpec(name, image, s.replicas)
	if s == rolling {
		// The scale comparison rolls 1,000 of these at once, and
		// kube-controller-manager's controllers, 20 requests a second
		// each, take longer than the default 600 s to get round to some
		// of them: the Deployment controller then reports
		// ProgressDeadlineExceeded whoever applied them (53 of Flux's,
		// 22 minutes in), and plimsoll rolls those back. An hour leaves
		// the deadline to pods that fail.
		spec = strings.Replace(spec, "spec:\n", "spec:\n  progressDeadlineSeconds: 3600\n", 1)
	}
	out := fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %[1]s\n  namespace: %[2]s\n  labels:\n    app: %[1]s\n  annotations:\n%[3]s",
		name, s.namespace, annotations) + spec
	if s != rolling {
		out += serviceManifest(name, s.namespace)
	}
	return out
}

// workloadSpec is the spec of every benchmark workload's Deployment (or
// Rollout): replicas pods of image, selected by app: name.
func workloadSpec(name, image string, replicas int) string {
	return fmt.Sprintf(`spec:
  replicas: %[2]d
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
        image: %[3]s
        ports:
        - name: http
          containerPort: 8080
        resources:
          requests:
            cpu: 10m
            memory: 16Mi
`, name, replicas, image)
}

// serviceManifest is a workload's Service, a document of its own.
func serviceManifest(name, namespace string) string {
	return fmt.Sprintf(`---
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
`, name, namespace)
}

// healthWatch follows, through informers, whether each workload is
// Healthy and at which revision, and when what a controller was handed
// was applied. It records when each workload was first seen Healthy at each
// revision. Its informers read the cluster once and then only watch, so
// that their own requests do not weigh in the API server's counts. What
// Healthy means is the controller's: see watchPlimsoll, watchArgo and
// watchNative.
type healthWatch struct {
	mu      sync.Mutex
	healthy map[string]map[int]time.Time // "namespace/name" -> revision -> first seen Healthy
	phase   map[string]string            // "namespace/name" -> phase
	applied map[string]time.Time         // commit (or other key) -> first seen applied
}

func newHealthWatch() *healthWatch {
	return &healthWatch{healthy: map[string]map[int]time.Time{}, phase: map[string]string{}, applied: map[string]time.Time{}}
}

// watchPlimsoll feeds w the phase and revision of every plimsoll workload
// of ss (its primary Deployment: the canary's and rolling workload's
// Deployment <name>, the blue-green color with role active), and the
// commits the status of the sync syncName names, in any namespace.
func watchPlimsoll(ctx context.Context, t *testing.T, client kubernetes.Interface, w *healthWatch, ss []strategy) {
	for _, s := range ss {
		lw := cache.NewFilteredListWatchFromClient(client.AppsV1().RESTClient(), "deployments", s.namespace,
			func(o *metav1.ListOptions) { o.LabelSelector = labelWorkload })
		inf := cache.NewSharedIndexInformer(lw, &appsv1.Deployment{}, 0, cache.Indexers{})
		kit.RunInformer(ctx, t, inf, kit.OnAddOrUpdate(func(obj any) { w.observePlimsoll(s, obj) }), "the Deployments of "+s.namespace)
	}
	watchSyncStatus(ctx, t, client, w)
}

// watchSyncStatus feeds w the commits the status of the sync syncName
// names, in any namespace.
func watchSyncStatus(ctx context.Context, t *testing.T, client kubernetes.Interface, w *healthWatch) {
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll,
		fields.OneTermEqualSelector("metadata.name", "plimsoll-sync-"+syncName))
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	kit.RunInformer(ctx, t, inf, kit.OnAddOrUpdate(func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Annotations[keyCommit] != "" {
			w.markAppliedNow(cm.Annotations[keyCommit])
		}
	}), "the sync status")
}

// observePlimsoll records the status of a workload whose Deployment
// changed.
func (w *healthWatch) observePlimsoll(s strategy, obj any) {
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
	rev, _ := strconv.Atoi(d.Annotations[keyRevision])
	w.record(d.Namespace+"/"+name, d.Annotations[keyPhase], rev)
}

// record notes that workload key is in phase at revision now.
func (w *healthWatch) record(key, phase string, revision int) {
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
	if _, seen := w.healthy[key][revision]; !seen {
		w.healthy[key][revision] = now
	}
}

// markApplied notes that what key names was applied at, unless it was
// seen before.
func (w *healthWatch) markApplied(key string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.applied[key]; !seen {
		w.applied[key] = at
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

// markAppliedNow notes that what key names was applied now, unless it was
// seen before.
func (w *healthWatch) markAppliedNow(key string) { w.markApplied(key, time.Now()) }

// waitApplied waits until what key names is applied, for at most bound,
// and reports whether it got there. It fails the test if a process of the
// controller exits.
func (w *healthWatch) waitApplied(t *testing.T, procs procGroup, key string, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		procs.failIfExited(t)
		if _, ok := w.appliedAt(key); ok {
			return true
		}
		if time.Now().After(deadline) {
			t.Logf("%s not applied after %s", key, bound)
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// appliedAt returns when what key names was first seen applied.
func (w *healthWatch) appliedAt(key string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.applied[key]
	return at, ok
}

// waitHealthy waits until the n workloads of each of ss are Healthy at
// revision, for at most bound, and reports whether they all got there. It
// fails the test if a process of the controller exits.
func (w *healthWatch) waitHealthy(t *testing.T, procs procGroup, ss []strategy, n, revision int, bound time.Duration) bool {
	start := time.Now()
	want := n * len(ss)
	lastLog := start
	for {
		procs.failIfExited(t)
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

// freshNamespaces deletes the namespaces, if they exist, and creates them
// anew; it returns the function that deletes them at the end of a run.
func freshNamespaces(t *testing.T, client kubernetes.Interface, namespaces ...string) func() {
	for _, ns := range namespaces {
		deleteNamespaceIfExists(t, client, ns)
	}
	for _, ns := range namespaces {
		createNamespace(t, client, ns)
	}
	return func() {
		for _, ns := range namespaces {
			deleteNamespaceIfExists(t, client, ns)
		}
	}
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
