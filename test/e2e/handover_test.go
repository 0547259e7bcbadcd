//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

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

// servingPods returns the uids and controllers of the pods the Service's
// ready endpoints name.
func servingPods(t *testing.T, ns string, endpoints *endpointWatch) map[types.UID]string {
	t.Helper()
	out := map[types.UID]string{}
	for _, name := range endpoints.readyNames() {
		p, err := suite.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owner := ""
		if ref := metav1.GetControllerOf(p); ref != nil {
			owner = ref.Name
		}
		out[p.UID] = owner
	}
	return out
}

// checkHandedOver checks that the 4 pods serving after a promotion are
// the ones the canary made, now the stable Deployment's, and that the
// revision made no more pods than its replicas: made are the pods first
// seen since the revision went out, by uid, with their first controller.
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
		if !hasPrefix(owner, "api-") || hasPrefix(owner, "api-canary-") {
			t.Errorf("pod %s serves owned by %q, want a ReplicaSet of the stable Deployment api", uid, owner)
		}
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
	h.s.repo.commit("api v1", canaryExample(t, "v1", handOverSteps...))
	h.d = kit.StartDaemon(t, h.s, "--interval", "1s")
	waitForDeployment(t, h.s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	h.endpoints = watchEndpoints(t, h.s.ns, "api")
	h.endpoints.waitReady(t, "4 endpoints", func(pods []string) bool { return len(pods) == 4 })
	h.pods = watchPods(t, h.s.ns)
	h.before, h.mark = h.pods.seen(), h.endpoints.mark()
	h.s.repo.commit("api v2", canaryExample(t, "v2", handOverSteps...))
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
	waitFor(t, "4 api pods on v2", func(context.Context) (bool, error) {
		return onlyImage(images(t, s.ns, "app=api", "api-"), 4, "registry.example/api:v2"), nil
	})
	checkMinReady(t, endpoints, h.mark, 4)
	checkHandedOver(t, s.ns, endpoints, h.pods.since(h.before))
	if c := getDeployment(t, s.ns, "api-canary"); c == nil || *c.Spec.Replicas != 0 {
		t.Errorf("api-canary after the promotion: %v, want one at 0 for the next revision", c)
	}
}

// TestCanaryHandOverSIGKILL kills the daemon in the middle of a hand-over,
// between the canary's ReplicaSet being deleted (its pods left running)
// and the stable Deployment adopting the pods: the controller manager,
// whose garbage collector takes the pods' owner away, is stopped when the
// canary is paused, so that the daemon is found waiting there. With the
// daemon gone and the controller manager back, the pods run with no owner
// and go on serving; the daemon started again adopts them into the
// stable. The Service never has fewer than 4 ready endpoints, and the
// pods serving in the end are the canary's. It stops a shared part of
// the control plane: it runs on its own.
func TestCanaryHandOverSIGKILL(t *testing.T) {
	h := startHandOver(t)
	s, d, endpoints := h.s, h.d, h.endpoints
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			cluster(t, "start", "kube-controller-manager")
		}
	})
	// The hand-over takes well under a second with the controller manager
	// running: the controller manager is stopped the moment a watch sees
	// the canary paused for it, and when even that was too late (the
	// stable Deployment was scaled up: the pods were adopted already), the
	// next revision is tried.
	revision := 2
	for attempt := 1; ; attempt++ {
		// A watch, not a poll: the pause lasts less than a poll's interval.
		paused := followDeployment(t, s.ns, "api-canary", func(d *appsv1.Deployment) bool {
			return d.Spec.Paused && d.Annotations["plimsoll.dev/revision"] == strconv.Itoa(revision)
		})
		select {
		case ok := <-paused:
			if !ok {
				t.Fatalf("api-canary: the watch ended before the canary was paused for the hand-over of revision %d", revision)
			}
		case <-time.After(kit.WaitTimeout):
			t.Fatalf("api-canary: not paused for the hand-over of revision %d within %s", revision, kit.WaitTimeout)
		}
		cluster(t, "stop", "kube-controller-manager")
		if api := getDeployment(t, s.ns, "api"); *api.Spec.Replicas == 0 {
			break
		}
		if attempt == 3 {
			t.Fatalf("the hand-over of %d revisions in a row finished before the controller manager was stopped", attempt)
		}
		t.Logf("revision %d was handed over before the controller manager stopped; trying revision %d", revision, revision+1)
		cluster(t, "start", "kube-controller-manager")
		waitForDeployment(t, s.ns, "api", fmt.Sprintf("revision %d Healthy", revision), phaseIs(revision, "Healthy"))
		revision++
		h.before, h.mark = h.pods.seen(), endpoints.mark()
		s.repo.commit(fmt.Sprintf("api v%d", revision), canaryExample(t, fmt.Sprintf("v%d", revision), handOverSteps...))
	}
	waitFor(t, "the canary's ReplicaSet deleted, its pods left to the stable", func(ctx context.Context) (bool, error) {
		list, err := suite.client.AppsV1().ReplicaSets(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
		if err != nil {
			return false, err
		}
		for _, rs := range list.Items {
			if hasPrefix(rs.Name, "api-canary-") && rs.Spec.Template.Labels["plimsoll.dev/track"] != "" && *rs.Spec.Replicas == 4 && rs.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err := d.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.Wait()
	cluster(t, "start", "kube-controller-manager")
	restarted = true
	if api := getDeployment(t, s.ns, "api"); *api.Spec.Replicas != 0 {
		t.Fatalf("the stable Deployment at %d replicas when the daemon was killed, want 0: the kill came after the adoption", *api.Spec.Replicas)
	}
	waitFor(t, "the canary's pods running without an owner", func(ctx context.Context) (bool, error) {
		list, err := suite.client.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
		if err != nil {
			return false, err
		}
		orphans := 0
		for _, p := range list.Items {
			if metav1.GetControllerOf(&p) == nil && p.DeletionTimestamp == nil {
				orphans++
			}
		}
		return orphans == 4, nil
	})
	endpoints.waitReady(t, "4 endpoints while no daemon runs", func(pods []string) bool { return len(pods) == 4 })

	t.Log("the daemon again: it adopts the pods into the stable Deployment")
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "api", fmt.Sprintf("revision %d Healthy", revision), phaseIs(revision, "Healthy"))
	checkMinReady(t, endpoints, h.mark, 4)
	checkHandedOver(t, s.ns, endpoints, h.pods.since(h.before))
}
