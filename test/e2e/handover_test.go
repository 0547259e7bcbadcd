//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// podLog records every pod of a namespace as it was first seen: the
// ReplicaSet that controlled it then, by uid.
type podLog struct {
	mu    gosync.Mutex
	first map[types.UID]string // uid -> first controller, "" for none
}

// watchPods starts a podLog of namespace ns.
func watchPods(t *testing.T, ns string) *podLog {
	t.Helper()
	l := &podLog{first: map[types.UID]string{}}
	note := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, seen := l.first[p.UID]; !seen {
			owner := ""
			if ref := metav1.GetControllerOf(p); ref != nil {
				owner = ref.Name
			}
			l.first[p.UID] = owner
		}
	}
	informer := coreinformers.NewPodInformer(suite.client, ns, 0, cache.Indexers{})
	kit.RunInformer(t.Context(), t, informer, cache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) }}, "pods of "+ns)
	return l
}

// since returns the pods first seen after before (the uids seen then),
// by uid, with the ReplicaSet that controlled each when it was first
// seen.
func (l *podLog) since(before map[types.UID]bool) map[types.UID]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[types.UID]string{}
	for uid, owner := range l.first {
		if !before[uid] {
			out[uid] = owner
		}
	}
	return out
}

// seen returns the uids seen so far.
func (l *podLog) seen() map[types.UID]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[types.UID]bool{}
	for uid := range l.first {
		out[uid] = true
	}
	return out
}

// servingPods returns the uids of the pods the Service's ready endpoints
// name, with the Deployment that controls the ReplicaSet that controls
// each ("" for none).
func servingPods(t *testing.T, ns string, endpoints *endpointWatch) map[types.UID]string {
	t.Helper()
	out := map[types.UID]string{}
	for _, name := range endpoints.readyNames() {
		p, err := suite.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[p.UID] = ""
		if ref := metav1.GetControllerOf(p); ref != nil {
			out[p.UID] = replicaSetController(t, ns, ref.Name)
		}
	}
	return out
}

// replicaSetController names the Deployment that controls ReplicaSet
// name, "" for none.
func replicaSetController(t *testing.T, ns, name string) string {
	t.Helper()
	rs, err := suite.client.AppsV1().ReplicaSets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		return ref.Name
	}
	return ""
}

// replicaSetsOf names the ReplicaSets that Deployment name controls.
func replicaSetsOf(t *testing.T, ns, name string) []string {
	t.Helper()
	list, err := suite.client.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rs := range list.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.Kind == "Deployment" && ref.Name == name {
			out = append(out, rs.Name)
		}
	}
	return out
}

// checkHandedOver checks that the 4 pods serving after a promotion are
// the ones the canary made, in a ReplicaSet now the stable Deployment's,
// that the revision made no more pods than its replicas, and that the
// stable runs resumed with its earlier ReplicaSet back as history: made
// are the pods first seen since the revision went out, by uid, with
// their first controller.
func checkHandedOver(t *testing.T, ns string, endpoints *endpointWatch, made map[types.UID]string) {
	t.Helper()
	serving := servingPods(t, ns, endpoints)
	if len(serving) != 4 {
		t.Errorf("%d pods serve after the promotion, want 4", len(serving))
	}
	for uid, owner := range serving {
		first, ok := made[uid]
		if !ok || !hasPrefix(first, "api-canary-") {
			t.Errorf("pod %s serves after the promotion, first owned by %q: want a pod the canary made", uid, first)
		}
		if owner != "api" {
			t.Errorf("pod %s serves in a ReplicaSet of Deployment %q, want one of the stable Deployment api", uid, owner)
		}
	}
	if api := getDeployment(t, ns, "api"); api.Spec.Paused {
		t.Error("the stable Deployment api is paused after the promotion")
	}
	if sets := replicaSetsOf(t, ns, "api"); len(sets) < 2 {
		t.Errorf("api controls ReplicaSets %v after the promotion, want the canary's and its earlier one (`kubectl rollout undo`)", sets)
	}
	if len(made) != 4 {
		t.Errorf("the revision made %d pods, want 4 (its replicas): %v", len(made), made)
		list, err := suite.client.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
		if err == nil {
			for _, rs := range list.Items {
				t.Logf("ReplicaSet %s (made %s, at %d): labels %v, annotations %v", rs.Name, rs.CreationTimestamp.Format("15:04:05"),
					*rs.Spec.Replicas, rs.Spec.Template.Labels, rs.Annotations)
			}
		}
	}
}

func hasPrefix(s, prefix string) bool { return strings.HasPrefix(s, prefix) }

// handOver is a canary workload api (4 replicas, steps "50%, 100%")
// whose revision 2 was committed, with the watches that follow it.
type handOver struct {
	s         *syncTarget
	d         *kit.Daemon
	endpoints *endpointWatch
	pods      *podLog
	// before are the pods seen before revision 2, mark where the
	// endpoints stood then.
	before map[types.UID]bool
	mark   int
}

// handOverSteps turn the example's steps into "50%, 100%".
var handOverSteps = []string{`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "50%, 100%"`}

// startHandOver rolls api's revision 1 out, starts the watches, and
// commits revision 2.
func startHandOver(t *testing.T) handOver {
	t.Helper()
	h := handOver{s: newSyncTarget(t)}
	h.s.repo.Commit("api v1", canaryExample(t, "v1", handOverSteps...))
	h.d = kit.StartDaemon(t, h.s, "--interval", "1s")
	waitForDeployment(t, h.s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	h.endpoints = watchEndpoints(t, h.s.ns, "api")
	h.endpoints.waitReady(t, "4 endpoints", func(pods []string) bool { return len(pods) == 4 })
	h.pods = watchPods(t, h.s.ns)
	h.before, h.mark = h.pods.seen(), h.endpoints.mark()
	h.s.repo.Commit("api v2", canaryExample(t, "v2", handOverSteps...))
	return h
}

// TestCanaryHandOver promotes a canary (4 replicas, steps "50%, 100%")
// and checks that its pods become the stable Deployment's: the pods that
// serve at 100% are the canary's, the revision makes 4 pods and no more,
// and the Service never has fewer than 4 ready endpoints.
func TestCanaryHandOver(t *testing.T) {
	parallel(t)
	h := startHandOver(t)
	s, endpoints := h.s, h.endpoints
	waitForDeployment(t, s.ns, "api", "revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForPods(t, s.ns, "api", 4, "registry.example/api:v2")
	checkMinReady(t, endpoints, h.mark, 4)
	checkHandedOver(t, s.ns, endpoints, h.pods.since(h.before))
	if c := getDeployment(t, s.ns, "api-canary"); c == nil || *c.Spec.Replicas != 0 {
		t.Errorf("api-canary after the promotion: %v, want one at 0 for the next revision", c)
	}
}

// TestCanaryHandOverSIGKILL kills the daemon twice in the middle of a
// hand-over. The controller manager is frozen (SIGSTOP) the moment a
// watch sees the stable let go of its own ReplicaSets (step 3): from
// there the daemon needs nothing of it to give the stable the canary's
// template (step 4), and it must wait for the Deployment controller to
// read that template before handing the canary's ReplicaSet over, since
// one that saw the ReplicaSet the stable's first would scale it to 0.
// Killed there and the controller manager thawed, the stable stays
// paused on no ReplicaSet and the canary serves, with no daemon running.
// The daemon started again hands the canary's ReplicaSet to the stable
// and deletes the canary, which a finalizer of the test's holds
// half-deleted: killed between the hand-over and the stable's resume,
// the stable holds the canary's ReplicaSet, paused, with no daemon
// running; the daemon started a third time resumes it. The Service never
// has fewer than 4 ready endpoints, and the pods serving in the end are
// the canary's. It stops a shared part of the control plane: it runs on
// its own.
func TestCanaryHandOverSIGKILL(t *testing.T) {
	h := startHandOver(t)
	s, d, endpoints := h.s, h.d, h.endpoints
	kcm := controllerManager(t)
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := kcm.Signal(syscall.SIGCONT); err != nil {
				t.Errorf("thaw kube-controller-manager: %v", err)
			}
		}
	}
	t.Cleanup(thaw)
	// The hand-over takes well under a second with the controller manager
	// running: when freezing it came too late (the canary's ReplicaSet
	// the stable's already, or step 4 read by the Deployment controller),
	// the next revision is tried.
	revision := 2
	for attempt := 1; ; attempt++ {
		// A watch, not a poll: the state lasts less than a poll's interval.
		released := followReplicaSets(t, s.ns, func(rs *appsv1.ReplicaSet) bool {
			return rs.Annotations["plimsoll.dev/held-out"] != "" && metav1.GetControllerOf(rs) == nil
		})
		select {
		case ok := <-released:
			if !ok {
				t.Fatalf("the watch of ReplicaSets ended before the stable let go of its own for revision %d", revision)
			}
		case <-time.After(kit.WaitTimeout):
			t.Fatalf("the stable did not let go of its ReplicaSets for the hand-over of revision %d within %s", revision, kit.WaitTimeout)
		}
		if err := kcm.Signal(syscall.SIGSTOP); err != nil {
			t.Fatalf("freeze kube-controller-manager: %v", err)
		}
		thawed = false
		// Too late too: the Deployment controller read step 4 before the
		// freeze, which lets the daemon hand the ReplicaSet over.
		api, canary := getDeployment(t, s.ns, "api"), getDeployment(t, s.ns, "api-canary")
		read := api != nil && canary != nil && equality.Semantic.DeepEqual(api.Spec.Template, canary.Spec.Template) &&
			api.Status.ObservedGeneration >= api.Generation
		if canary != nil && canary.Spec.Paused && len(replicaSetsOf(t, s.ns, "api")) == 0 && !read {
			break
		}
		if attempt == 3 {
			t.Fatalf("the hand-over of %d revisions in a row finished before the controller manager was frozen", attempt)
		}
		t.Logf("revision %d was handed over before the controller manager was frozen; trying revision %d", revision, revision+1)
		thaw()
		waitForDeployment(t, s.ns, "api", fmt.Sprintf("revision %d Healthy", revision), phaseIs(revision, "Healthy"))
		revision++
		h.before, h.mark = h.pods.seen(), endpoints.mark()
		s.repo.Commit(fmt.Sprintf("api v%d", revision), canaryExample(t, fmt.Sprintf("v%d", revision), handOverSteps...))
	}
	waitFor(t, "the stable on the canary's template, paused (step 4), with the controller manager frozen", func(context.Context) (bool, error) {
		api, canary := getDeployment(t, s.ns, "api"), getDeployment(t, s.ns, "api-canary")
		return api != nil && canary != nil && api.Spec.Paused && equality.Semantic.DeepEqual(api.Spec.Template, canary.Spec.Template), nil
	})
	d.Kill(t)
	if c, sets := getDeployment(t, s.ns, "api-canary"), replicaSetsOf(t, s.ns, "api"); c == nil || c.DeletionTimestamp != nil || len(sets) != 0 {
		t.Errorf("before the Deployment controller read the stable's new template, the daemon deleted the canary (%v) "+
			"or handed its ReplicaSet over (the stable controls %v)", c, sets)
	}
	thaw()
	waitFor(t, "the Deployment controller reading the stable's new template, no daemon running", func(context.Context) (bool, error) {
		api := getDeployment(t, s.ns, "api")
		return api.Status.ObservedGeneration >= api.Generation, nil
	})
	endpoints.waitReady(t, "4 endpoints while no daemon runs", func(pods []string) bool { return len(pods) == 4 })
	if sets := replicaSetsOf(t, s.ns, "api"); len(sets) != 0 {
		t.Errorf("the stable Deployment, paused with no daemon running, controls ReplicaSets %v, want none", sets)
	}

	t.Log("the daemon again, the canary's deletion held by a finalizer: it hands the canary's ReplicaSet over")
	holdDeletion(t, s.ns, "api-canary")
	d = kit.StartDaemon(t, s, "--interval", "1s")
	waitFor(t, "the canary's ReplicaSet the stable's, the canary being deleted", func(context.Context) (bool, error) {
		c := getDeployment(t, s.ns, "api-canary")
		return c != nil && c.DeletionTimestamp != nil && slices.ContainsFunc(replicaSetsOf(t, s.ns, "api"), func(name string) bool {
			return hasPrefix(name, "api-canary-")
		}), nil
	})
	d.Kill(t)
	endpoints.waitReady(t, "4 endpoints while no daemon runs", func(pods []string) bool { return len(pods) == 4 })
	if api := getDeployment(t, s.ns, "api"); !api.Spec.Paused || *api.Spec.Replicas != 4 {
		t.Errorf("the stable Deployment with no daemon: paused %v at %d, want paused at 4", api.Spec.Paused, *api.Spec.Replicas)
	}
	releaseDeletion(t, s.ns, "api-canary")

	t.Log("the daemon a third time: it resumes the stable Deployment")
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "api", fmt.Sprintf("revision %d Healthy", revision), phaseIs(revision, "Healthy"))
	checkMinReady(t, endpoints, h.mark, 4)
	checkHandedOver(t, s.ns, endpoints, h.pods.since(h.before))
}

// testFinalizer is the finalizer holdDeletion puts on a Deployment.
const testFinalizer = "e2e.plimsoll.dev/hold"

// holdDeletion puts a finalizer on Deployment name, so that once deleted
// it stays, being deleted, until releaseDeletion (or the test's end)
// takes it away.
func holdDeletion(t *testing.T, ns, name string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, testFinalizer)
	if _, err := suite.client.AppsV1().Deployments(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("hold the deletion of Deployment %s: %v", name, err)
	}
	t.Cleanup(func() { releaseDeletion(t, ns, name) })
}

// releaseDeletion takes holdDeletion's finalizer away from Deployment
// name, if it is still there; again when the garbage collector took its
// own away in between.
func releaseDeletion(t *testing.T, ns, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := getDeployment(t, ns, name)
		if d == nil || !slices.Contains(d.Finalizers, testFinalizer) {
			return nil
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": d.ResourceVersion,
			"finalizers":      slices.DeleteFunc(slices.Clone(d.Finalizers), func(f string) bool { return f == testFinalizer }),
		}})
		if err != nil {
			return err
		}
		_, err = suite.client.AppsV1().Deployments(ns).Patch(context.Background(), name, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("release the deletion of Deployment %s: %v", name, err)
	}
}

// controllerManager returns the process of the control plane's
// kube-controller-manager, from hack/cluster's pid file.
func controllerManager(t *testing.T) *os.Process {
	t.Helper()
	dir := os.Getenv("PLIMSOLL_CLUSTER_DIR")
	if dir == "" {
		dir = filepath.Join(suite.root, ".cluster")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "run", "kube-controller-manager.pid"))
	if err != nil {
		t.Fatalf("find kube-controller-manager: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("read the pid of kube-controller-manager: %v", err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatalf("find kube-controller-manager: %v", err)
	}
	return p
}

// followReplicaSets watches the ReplicaSets of namespace ns; the channel
// gets true once one meets on, false if the watch ends first.
func followReplicaSets(t *testing.T, ns string, on func(*appsv1.ReplicaSet) bool) <-chan bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := suite.client.AppsV1().ReplicaSets(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch the ReplicaSets of %s: %v", ns, err)
	}
	return follow(w, on)
}
