//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestDaemonUndoesKubectlEdits checks that what kubectl changes on a synced
// object is undone whole, additions included, while other managers' fields
// stay:
//   - a ConfigMap that `kubectl apply` created with a key Git dropped loses
//     the key and kubectl's last-applied annotation once Git adopts it;
//   - a Service port replaced with `kubectl patch` is put back, and the
//     hand-made port is gone, not kept beside Git's;
//   - a label added with `kubectl label` is removed, while a label another
//     tool (field manager ops-tool) added is kept, and so is one kubectl
//     added to a ConfigMap marked plimsoll.dev/kubectl-edits: keep;
//   - then the polls are quiet again: nothing is written in a loop.
func TestDaemonUndoesKubectlEdits(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	tree := baseTree()
	tree["legacy.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: legacy\ndata:\n  a: \"1\"\n"
	tree["kept.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  annotations:\n    plimsoll.dev/kubectl-edits: keep\ndata:\n  a: \"1\"\n"
	kubectlApply(t, s.ns, map[string]string{
		"legacy.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: legacy\ndata:\n  a: \"1\"\n  old: x\n",
	})

	t.Log("1. adopted: the key Git dropped goes, with kubectl's annotation")
	head := s.repo.Commit("base and legacy", tree)
	d := kit.StartDaemon(t, s, "--interval", "1s")
	s.waitForCommit(t, head)
	// The first sync labels it (it was not the sync's to read before);
	// the poll after that finds kubectl's fields and takes them over.
	waitFor(t, "ConfigMap legacy adopted as Git has it", func(ctx context.Context) (bool, error) {
		cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(ctx, "legacy", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		_, annotated := cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"]
		return maps.Equal(cm.Data, map[string]string{"a": "1"}) && !annotated, nil
	})
	legacy := getConfigMap(t, s.ns, "legacy")
	checkNoKubectlFields(t, s.ns, "configmaps", "legacy", legacy.ManagedFields)
	waitForQuietPolls(t, d, 3)

	t.Log("2. a port replaced with kubectl patch, a label added with kubectl label, another by ops-tool")
	kubectl(t, "patch", "service", "web", "-n", s.ns, "--type=json", "-p", `[{"op":"replace","path":"/spec/ports/0/port","value":8080}]`)
	kubectl(t, "label", "configmap", "app", "-n", s.ns, "by-hand=yes")
	kubectl(t, "label", "configmap", "kept", "-n", s.ns, "by-hand=yes")
	patch := []byte(`{"metadata":{"labels":{"team":"ops"}}}`)
	if _, err := suite.client.CoreV1().ConfigMaps(s.ns).Patch(context.Background(), "app", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "ops-tool"}); err != nil {
		t.Fatalf("label ConfigMap app as ops-tool: %v", err)
	}
	waitFor(t, "kubectl's changes undone", func(ctx context.Context) (bool, error) {
		svc, err := suite.client.CoreV1().Services(s.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cm, err := suite.client.CoreV1().ConfigMaps(s.ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		_, labelled := cm.Labels["by-hand"]
		return len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].Port == 80 && !labelled, nil
	})
	if cm := getConfigMap(t, s.ns, "app"); cm.Labels["team"] != "ops" {
		t.Errorf("ConfigMap app lost the label ops-tool set: labels %v", cm.Labels)
	}
	if cm := getConfigMap(t, s.ns, "kept"); cm.Labels["by-hand"] != "yes" {
		t.Errorf("ConfigMap kept (plimsoll.dev/kubectl-edits: keep) lost the label kubectl set: labels %v", cm.Labels)
	}
	svc, err := suite.client.CoreV1().Services(s.ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkNoKubectlFields(t, s.ns, "services", "web", svc.ManagedFields)
	checkNoKubectlFields(t, s.ns, "configmaps", "app", getConfigMap(t, s.ns, "app").ManagedFields)

	t.Log("3. quiet again: nothing written in a loop")
	waitForQuietPolls(t, d, 2)
	objs := append(baseObjects(s.ns), object{gvr: configMaps, namespace: s.ns, name: "legacy"}, object{gvr: configMaps, namespace: s.ns, name: "kept"})
	checkQuietPollsWriteNothing(t, d, objs)
}

// checkNoKubectlFields fails t if a kubectl command still owns fields of the
// object named.
func checkNoKubectlFields(t *testing.T, ns, resource, name string, entries []metav1.ManagedFieldsEntry) {
	t.Helper()
	var managers []string
	for _, e := range entries {
		managers = append(managers, fmt.Sprintf("%s (%s)", e.Manager, e.Operation))
		if strings.HasPrefix(e.Manager, "kubectl") && e.Subresource == "" {
			t.Errorf("%s %s/%s: kubectl still owns fields (%s)", resource, ns, name, e.Manager)
		}
	}
	t.Logf("%s %s/%s: field managers %s", resource, ns, name, strings.Join(managers, ", "))
}

// getConfigMap reads ConfigMap ns/name or fails t.
func getConfigMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := suite.client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm
}
