//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// agentDaemonSet is DaemonSet agent running image on every node, rolled
// with a progress deadline of 20s.
func agentDaemonSet(image string) string {
	return `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  annotations: {plimsoll.dev/progress-deadline: 20s}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: ` + image + `}]
`
}

// TestDaemonSetRollback rolls a DaemonSet on the cluster's nodes: a
// broken image reaches one node (maxUnavailable 1), is Degraded at its
// deadline and rolled back there, the pods of the other nodes never
// restarted; every node back on the old template, Ready.
func TestDaemonSetRollback(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("agent v1", map[string]string{"agent.yaml": agentDaemonSet("registry.example/agent:v1")})
	kit.StartDaemon(t, s, "--interval", "1s")

	t.Log("1. on every node, Healthy at revision 1")
	waitForDaemonSet(t, s.ns, "revision 1 Healthy", daemonSetPhaseIs(1, "Healthy"))
	before := agentPods(t, s.ns)
	if len(before) == 0 {
		t.Fatal("DaemonSet agent runs no pod")
	}

	t.Log("2. an image that never pulls: one node reached, Degraded at the deadline, rolled back there only")
	s.repo.Commit("agent broken", map[string]string{"agent.yaml": agentDaemonSet("registry.example/agent:does-not-exist")})
	waitForDaemonSet(t, s.ns, "revision 2 Degraded, rolled back", func(ds *appsv1.DaemonSet) bool {
		return daemonSetPhaseIs(2, "Degraded")(ds) && strings.Contains(ds.Annotations["plimsoll.dev/message"], "rolled back to template")
	})
	ds := waitForDaemonSet(t, s.ns, "every node back on the stable template, available", func(ds *appsv1.DaemonSet) bool {
		st := ds.Status
		return st.ObservedGeneration == ds.Generation && st.UpdatedNumberScheduled == st.DesiredNumberScheduled &&
			st.NumberAvailable == st.DesiredNumberScheduled && st.DesiredNumberScheduled == int32(len(before))
	})
	if img := ds.Spec.Template.Spec.Containers[0].Image; img != "registry.example/agent:v1" {
		t.Errorf("DaemonSet agent runs %s after the rollback, want registry.example/agent:v1", img)
	}
	after := agentPods(t, s.ns)
	kept := 0
	for node, uid := range before {
		if after[node] == uid {
			kept++
		}
	}
	if kept != len(before)-1 {
		t.Errorf("pods by node before %v, after %v: want every node's pod but the one the broken template reached kept", before, after)
	}
}

// daemonSetPhaseIs matches a DaemonSet at revision and phase.
func daemonSetPhaseIs(revision int, phase string) func(*appsv1.DaemonSet) bool {
	return func(ds *appsv1.DaemonSet) bool {
		return ds.Annotations["plimsoll.dev/revision"] == fmt.Sprint(revision) && ds.Annotations["plimsoll.dev/phase"] == phase
	}
}

// waitForDaemonSet waits until DaemonSet agent of ns matches cond.
func waitForDaemonSet(t *testing.T, ns, describe string, cond func(*appsv1.DaemonSet) bool) *appsv1.DaemonSet {
	t.Helper()
	var got *appsv1.DaemonSet
	waitFor(t, "DaemonSet agent: "+describe, func(ctx context.Context) (bool, error) {
		ds, err := suite.client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = ds
		return cond(ds), nil
	})
	return got
}

// agentPods are the Ready pods of DaemonSet agent, by node.
func agentPods(t *testing.T, ns string) map[string]types.UID {
	t.Helper()
	list, err := suite.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range list.Items {
		if podReady(&p) && p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = p.UID
		}
	}
	return out
}
