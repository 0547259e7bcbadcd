//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// canaryDaemonSet is DaemonSet agent at image, rolled by canary on its
// nodes in steps 33%, pause, 100%, each step reached within 30s.
func canaryDaemonSet(image string) map[string]string {
	return map[string]string{"agent.yaml": `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  annotations:
    plimsoll.dev/strategy: canary
    plimsoll.dev/steps: "33%, pause, 100%"
    plimsoll.dev/progress-deadline: 30s
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: ` + image + `}]
`}
}

// TestDaemonSetCanary rolls a DaemonSet on the cluster's 3 nodes by
// canary: the first node by name alone takes the new template, held at
// OnDelete, until promote; then Git's rolling update takes the others. A
// broken revision fails its first step at the deadline and is rolled back
// on the one node it reached; the other nodes' pods never restart. The
// web view lists it, and its page shows its nodes and its hold.
func TestDaemonSetCanary(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("agent v1", canaryDaemonSet("registry.example/agent:v1"))
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	kit.StartDaemon(t, s, "--interval", "1s", "--ui-listen", addr, "--watch-namespace", s.ns)
	waitForDaemonSet(t, s.ns, "revision 1 Healthy", daemonSetPhaseIs(1, "Healthy"))
	before := agentPods(t, s.ns)
	nodes := slices.Sorted(maps.Keys(before))
	if len(nodes) != 3 {
		t.Fatalf("DaemonSet agent runs on nodes %v, want 3", nodes)
	}

	t.Log("1. v2 at step 2: the first node alone updated, waiting for promote")
	s.repo.Commit("agent v2", canaryDaemonSet("registry.example/agent:v2"))
	ds := waitForDaemonSet(t, s.ns, "step 2 Paused", func(ds *appsv1.DaemonSet) bool {
		return daemonSetPhaseIs(2, "Paused")(ds) && ds.Annotations["plimsoll.dev/step"] == "2"
	})
	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Errorf("update strategy %s during the canary, want OnDelete", ds.Spec.UpdateStrategy.Type)
	}
	if msg := ds.Annotations["plimsoll.dev/message"]; !strings.Contains(msg, "canary step 2/3: 33% (1/3 nodes updated); waiting for promote") {
		t.Errorf("message %q, want one node of 3 waiting for promote", msg)
	}
	v1 := checkNodes(t, s.ns, map[string]bool{nodes[0]: true})
	var list, page string
	waitFor(t, "the web view showing the DaemonSet at step 2, its nodes and its hold", func(context.Context) (bool, error) {
		list, page = httpGet(t, "http://"+addr+"/workloads", nil), httpGet(t, "http://"+addr+"/daemonsets/"+s.ns+"/agent", nil)
		return containsAll(list, "DaemonSet", "agent", "Paused") && containsAll(page, nodes[0], nodes[1], nodes[2], "OnDelete", "waiting for promote"), nil
	})
	for _, node := range nodes[1:] {
		if v1[node] != before[node] {
			t.Errorf("node %s: pod %s, was %s; want it untouched", node, v1[node], before[node])
		}
	}

	t.Log("2. promote: Git's rolling update takes the other nodes; Healthy")
	out, code := runPlimsoll(t, append([]string{"promote", "agent"}, s.cliFlags()...)...)
	if code != 0 || !strings.Contains(out, "agent: promote: moved on from step 2/3") {
		t.Fatalf("plimsoll promote agent: exit %d:\n%s", code, out)
	}
	ds = waitForDaemonSet(t, s.ns, "revision 2 Healthy on every node", func(ds *appsv1.DaemonSet) bool {
		st := ds.Status
		return daemonSetPhaseIs(2, "Healthy")(ds) && st.UpdatedNumberScheduled == 3 && st.NumberAvailable == 3
	})
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ds.Annotations["plimsoll.dev/step"] != "" {
		t.Errorf("after the promotion: update strategy %s, step %q; want RollingUpdate and none", ds.Spec.UpdateStrategy.Type, ds.Annotations["plimsoll.dev/step"])
	}
	v2 := checkNodes(t, s.ns, map[string]bool{nodes[0]: true, nodes[1]: true, nodes[2]: true})

	t.Log("3. a broken image: step 1 fails at its deadline, rolled back on the one node it reached")
	s.repo.Commit("agent broken", canaryDaemonSet("registry.example/agent:does-not-exist"))
	waitForDaemonSet(t, s.ns, "revision 3 Degraded, rolled back, every node available on v2", func(ds *appsv1.DaemonSet) bool {
		st := ds.Status
		return daemonSetPhaseIs(3, "Degraded")(ds) && strings.Contains(ds.Annotations["plimsoll.dev/message"], "step 1/3 not reached within its deadline of 30s") &&
			st.ObservedGeneration == ds.Generation && st.UpdatedNumberScheduled == 3 && st.NumberAvailable == 3 &&
			ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType
	})
	after := agentPods(t, s.ns)
	for _, node := range nodes[1:] {
		if after[node] != v2[node] {
			t.Errorf("node %s: pod %s, was %s; want it untouched by the broken revision", node, after[node], v2[node])
		}
	}
	if after[nodes[0]] == v2[nodes[0]] {
		t.Errorf("node %s kept pod %s: want the broken revision to have reached it, and its rollback to have replaced it", nodes[0], after[nodes[0]])
	}
}

// checkNodes waits until DaemonSet agent runs a Ready pod on each of its
// nodes, of its newest revision on those of updated and of another on
// the others, and returns the pods by node.
func checkNodes(t *testing.T, ns string, updated map[string]bool) map[string]types.UID {
	t.Helper()
	var pods map[string]types.UID
	var got []string
	waitFor(t, fmt.Sprintf("the newest revision on nodes %v only", slices.Sorted(maps.Keys(updated))), func(ctx context.Context) (bool, error) {
		revs, err := suite.client.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil || len(revs.Items) == 0 {
			return false, nil
		}
		newest := slices.MaxFunc(revs.Items, func(a, b appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
		list, err := suite.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			return false, nil
		}
		pods, got = map[string]types.UID{}, nil
		ok := len(list.Items) == 3
		for _, p := range list.Items {
			current := p.Labels["controller-revision-hash"] == newest.Labels["controller-revision-hash"]
			got = append(got, fmt.Sprintf("%s=%v", p.Spec.NodeName, current))
			ok = ok && podReady(&p) && p.DeletionTimestamp == nil && current == updated[p.Spec.NodeName]
			pods[p.Spec.NodeName] = p.UID
		}
		return ok, nil
	})
	t.Logf("nodes on the newest revision: %v", got)
	return pods
}

// containsAll reports whether s contains each of subs.
func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
