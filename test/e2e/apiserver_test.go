//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// apiServerOutage is how long TestAPIServerOutage keeps the API server
// down; afterOutage how long the rollout may then take to complete.
const (
	apiServerOutage = 20 * time.Second
	afterOutage     = 4 * time.Minute
)

// outageDeadline raises the examples' 60s progress deadline: the Deployment
// controller makes no progress while the API server is down, nor for a
// while after (its informers re-list with backoff), and the test is about
// the daemon coming through, not about a revision failing for that.
var outageDeadline = [2]string{"progressDeadlineSeconds: 60", "progressDeadlineSeconds: 600"}

// outageMinReady keeps the blue-green rollout under way when the API
// server stops. The simulated pods are Ready within some 100 ms, so that
// green comes up and the swap happens before the test has seen the commit
// applied; with it, green's pods count as available only 15 s after they
// are Ready, and the swap waits for that.
const outageMinReady = "  minReadySeconds: 15\n"

// TestAPIServerOutage stops the API server for 20 s in the middle of a
// canary and of a blue-green rollout (hack/cluster stop/start) and starts
// it again: the daemon keeps running and reconnects, the rollout completes,
// the Service's ready endpoints never drop below the workload's 4 replicas
// (as far as the endpoint watch, which reconnects too, saw), and the sync
// comes back to Synced at the commit and stays there.
func TestAPIServerOutage(t *testing.T) {
	for _, tt := range []struct {
		name, service, workload string
		// first is the Deployment that carries revision 1's status.
		first string
		files func(version string) map[string]string
		// started holds once the revision is under way, before it is done.
		started func(pods []string) bool
		// revised starts the names of revision 2's pods.
		revised string
	}{
		{
			name: "canary", service: "api", workload: "api", first: "api",
			files: func(version string) map[string]string {
				return canaryExample(t, version, `plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "25%, pause 15s, 50%, pause 5s, 100%"`,
					outageDeadline[0], outageDeadline[1])
			},
			started: func(pods []string) bool { return len(withPrefix(pods, "api-canary-")) == 1 },
			// The canary's pods are handed to the stable Deployment.
			revised: "api-canary-",
		},
		{
			name: "blue-green", service: "shop", workload: "shop-green", first: "shop-blue",
			files: func(version string) map[string]string {
				return example(t, "blue-green", "registry.example/shop:v1", "registry.example/shop:"+version,
					"plimsoll.dev/scale-down-delay: 30s", "plimsoll.dev/scale-down-delay: 5s", outageDeadline[0], outageDeadline[1],
					"  template:\n", outageMinReady+"  template:\n")
			},
			// Blue serves until the swap; green coming up is waited for below.
			started: func(pods []string) bool { return len(withPrefix(pods, "shop-blue-")) == 4 },
			revised: "shop-green-",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSyncTarget(t)
			s.repo.Commit("v1", tt.files("v1"))
			d := kit.StartDaemon(t, s, "--interval", "1s")
			endpoints := watchEndpoints(t, s.ns, tt.service)
			// After the previous subtest's outage, the controller manager's
			// EndpointSlice controller can take a minute or two to trust
			// its re-listed caches again ("EndpointSlice informer cache is
			// out of date"): no endpoints for a new Service meanwhile, which
			// is the control plane's recovery, not the daemon's.
			waitForWithin(t, "4 endpoints of revision 1", afterOutage, func(context.Context) (bool, error) {
				return len(endpoints.ready()) == 4, nil
			})
			waitForWithin(t, "revision 1 Healthy", afterOutage, func(ctx context.Context) (bool, error) {
				dep, err := suite.client.AppsV1().Deployments(s.ns).Get(ctx, tt.first, metav1.GetOptions{})
				return err == nil && phaseIs(1, "Healthy")(dep), nil
			})
			mark := endpoints.mark()
			deleted := watchDeletedPods(t, s.ns)

			v2 := s.repo.Commit("v2", tt.files("v2"))
			s.waitForCommit(t, v2)
			endpoints.waitReady(t, "revision 2 under way", tt.started)
			if tt.name == "blue-green" {
				waitForDeployment(t, s.ns, "shop-green", "green coming up", func(dep *appsv1.Deployment) bool {
					return dep.Status.Replicas > 0
				})
			}

			t.Logf("stopping the API server for %s", apiServerOutage)
			cluster(t, "stop", "kube-apiserver")
			time.Sleep(apiServerOutage)
			cluster(t, "start", "kube-apiserver")
			if !processAlive(d.Cmd.Process.Pid) {
				t.Fatalf("the daemon exited during the outage:\n%s", d.Log())
			}

			// Every client's reflector (the daemon's, the controller
			// manager's) retries its watch with a backoff that has grown
			// to up to a minute by the end of an outage; give it that.
			back := time.Now()
			waitForWithin(t, "revision 2 Healthy after the outage", afterOutage, func(ctx context.Context) (bool, error) {
				dep, err := suite.client.AppsV1().Deployments(s.ns).Get(ctx, tt.workload, metav1.GetOptions{})
				return err == nil && phaseIs(2, "Healthy")(dep), err
			})
			t.Logf("revision 2 Healthy %s after the API server was back", time.Since(back).Round(100*time.Millisecond))
			if !processAlive(d.Cmd.Process.Pid) {
				t.Fatalf("the daemon exited after the outage:\n%s", d.Log())
			}
			// The EndpointSlice controller catches up with the pods last:
			// after an outage it retries a Service with a backoff of its
			// own, and its slices can still show revision 1's pods a
			// minute after the rollout is done.
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("endpoints during revision 2:\n%s\nobjects:\n%s", strings.Join(endpoints.history(mark), "\n"), describeWorkloadObjects(s.ns))
				}
			})
			waitForWithin(t, "4 endpoints, all of revision 2", afterOutage, func(context.Context) (bool, error) {
				names := endpoints.readyNames()
				return len(names) == 4 && allWithPrefix(names, tt.revised), nil
			})
			if n, pods := endpoints.minReadySince(mark); n < 4 {
				t.Errorf("the Service had %d ready endpoints (%v), want never fewer than 4; history:\n%s",
					n, pods, strings.Join(endpoints.history(mark), "\n"))
			}
			t.Logf("endpoints during revision 2:\n%s", strings.Join(endpoints.history(mark), "\n"))
			// No pod of revision 2 goes: each one made counted toward the
			// step it was made for, and one deleted after it had (the
			// Deployment controller scaling a ReplicaSet back from a stale
			// cache) is a serving pod lost, whether or not the endpoint
			// watch was connected to see the count drop.
			if gone := withPrefix(deleted(), tt.revised); len(gone) > 0 {
				t.Errorf("pods of revision 2 were deleted during the rollout: %v", gone)
			}

			waitFor(t, "the sync Synced at v2 again", func(ctx context.Context) (bool, error) {
				st := s.status(t)
				return st["plimsoll.dev/sync-status"] == "Synced" && st["plimsoll.dev/commit"] == v2, nil
			})
			for _, e := range s.events(t) {
				if e.Reason == "SyncFailed" {
					t.Errorf("the outage left a SyncFailed Event: %s", e.Message)
				}
			}
			holdsFor(t, "the sync staying Synced", 5*time.Second, func(ctx context.Context) error {
				cm, err := suite.client.CoreV1().ConfigMaps(s.statusNamespace()).Get(ctx, "plimsoll-sync-"+s.ns, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if st := cm.Annotations["plimsoll.dev/sync-status"]; st != "Synced" {
					return fmt.Errorf("sync status %s after the outage: %s", st, cm.Annotations["plimsoll.dev/message"])
				}
				return nil
			})
		})
	}
}

// watchDeletedPods records the pods of namespace ns deleted from now on,
// and returns their names so far.
func watchDeletedPods(t *testing.T, ns string) func() []string {
	t.Helper()
	var mu gosync.Mutex
	seen := map[string]bool{}
	note := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
			mu.Lock()
			seen[p.Name] = true
			mu.Unlock()
		}
	}
	informer := coreinformers.NewPodInformer(suite.client, ns, 0, cache.Indexers{})
	kit.RunInformer(t.Context(), t, informer, cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if p, ok := obj.(*corev1.Pod); ok && p.DeletionTimestamp != nil {
				note(p)
			}
		},
		DeleteFunc: note,
	}, "deleted pods of "+ns)
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(maps.Keys(seen))
	}
}

// cluster runs hack/cluster with args against the suite's control plane.
func cluster(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(clusterScript(), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("hack/cluster %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// describeWorkloadObjects lists the ReplicaSets and pods of namespace ns,
// one line each (count or phase, controller, labels), for a failure's log.
func describeWorkloadObjects(ns string) string {
	ctx := context.Background()
	var lines []string
	if rsets, err := suite.client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, rs := range rsets.Items {
			lines = append(lines, fmt.Sprintf("replicaset %s: spec %d, status %d ready %d, owner %s, labels %v",
				rs.Name, ptr.Deref(rs.Spec.Replicas, 1), rs.Status.Replicas, rs.Status.ReadyReplicas, cmp.Or(controllerName(&rs), "(none)"), rs.Labels))
		}
	}
	if pods, err := suite.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			lines = append(lines, fmt.Sprintf("pod %s: phase %s, deleting %v, owner %s, labels %v",
				p.Name, p.Status.Phase, p.DeletionTimestamp != nil, cmp.Or(controllerName(&p), "(none)"), p.Labels))
		}
	}
	return strings.Join(lines, "\n")
}
