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
)

// statefulSet is StatefulSet db of 2 without volumes, with its service
// name, its pods' labels (beside app: db, which its selector also
// matches), and annotations.
func statefulSet(serviceName, selector, annotations string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  annotations: {%s}
spec:
  serviceName: %s
  replicas: 2
  selector: {matchLabels: {%s}}
  template:
    metadata: {labels: {app: db, tier: data}}
    spec:
      containers: [{name: db, image: registry.example/db:v1}]
`, annotations, serviceName, selector)
}

// TestStatefulSetFixedFields: a change to a field of a StatefulSet the
// API server does not update is refused before anything of the commit
// is applied, naming the field and the way out; blue-green on a
// StatefulSet and a DaemonSet likewise. With plimsoll.dev/force the
// StatefulSet is created again without its pods going: the same pods,
// adopted. Its selector cannot change, forced or not.
func TestStatefulSetFixedFields(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	s := newSyncTarget(t)
	settings := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {v: " + v + "}\n"
	}
	s.repo.Commit("db", map[string]string{"db.yaml": statefulSet("db", "app: db", ""), "settings.yaml": settings("v1")})
	s.mustSync(t)
	pods := waitForStatefulSetPods(t, s.ns, 2)

	refused := func(what string, files map[string]string, want ...string) {
		t.Helper()
		s.repo.Commit(what, files)
		out, code := s.syncOnce(t)
		if code == 0 {
			t.Fatalf("%s: sync exited 0:\n%s", what, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", what, w, out)
			}
		}
		checkSettings(t, s.ns, "v1")
		sts, err := suite.client.AppsV1().StatefulSets(s.ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil || sts.Spec.ServiceName != "db" || sts.UID != pods.owner {
			t.Errorf("%s: StatefulSet db %v (service %s), want the first one untouched", what, err, sts.Spec.ServiceName)
		}
	}

	t.Log("1. another service name: refused, naming the field and plimsoll.dev/force")
	refused("rename the service", map[string]string{"db.yaml": statefulSet("db-headless", "app: db", ""), "settings.yaml": settings("v2")},
		"db.yaml, document 1: field spec.serviceName: dry-run apps/StatefulSet "+s.ns+"/db: the API server does not change it on a live StatefulSet",
		`set annotation plimsoll.dev/force: "true" on it to delete it leaving its pods and their volumes`)

	t.Log("2. blue-green on a StatefulSet and a DaemonSet: refused")
	daemonSet := "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, annotations: {plimsoll.dev/strategy: blue-green}}\n" +
		"spec:\n  selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n    spec:\n      containers: [{name: agent, image: registry.example/agent:v1}]\n"
	refused("blue-green", map[string]string{"db.yaml": statefulSet("db", "app: db", "plimsoll.dev/strategy: blue-green"), "agent.yaml": daemonSet},
		`db.yaml, document 1: field metadata.annotations["plimsoll.dev/strategy"]: StatefulSet `+s.ns+`/db cannot be rolled out blue-green`,
		`agent.yaml, document 1: field metadata.annotations["plimsoll.dev/strategy"]: DaemonSet `+s.ns+`/agent cannot be rolled out blue-green`)

	t.Log("3. another selector, forced: refused all the same")
	refused("select by tier too", map[string]string{"db.yaml": statefulSet("db", "app: db, tier: data", `plimsoll.dev/force: "true"`), "agent.yaml": ""},
		"field spec.selector.matchLabels.tier: dry-run", "a StatefulSet's selector cannot change")

	t.Log("4. another service name, forced: a new StatefulSet, the same pods adopted")
	s.repo.Commit("rename the service, forced", map[string]string{"db.yaml": statefulSet("db-headless", "app: db", `plimsoll.dev/force: "true"`), "settings.yaml": settings("v2")})
	s.mustSync(t)
	checkSettings(t, s.ns, "v2")
	sts, err := suite.client.AppsV1().StatefulSets(s.ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil || sts.Spec.ServiceName != "db-headless" || sts.UID == pods.owner {
		t.Fatalf("StatefulSet db after the forced commit: %v, service %s, uid %s (was %s); want a new one", err, sts.Spec.ServiceName, sts.UID, pods.owner)
	}
	adopted := waitForStatefulSetPods(t, s.ns, 2)
	if adopted.owner != sts.UID || !maps.Equal(adopted.uids, pods.uids) {
		t.Errorf("pods after the recreation: %v owned by %s; want the same pods %v, adopted by %s", adopted.uids, adopted.owner, pods.uids, sts.UID)
	}
}

// statefulSetPods are the pods of StatefulSet db, by name, and the one
// owner they share.
type statefulSetPods struct {
	uids  map[string]types.UID
	owner types.UID
}

// waitForStatefulSetPods waits until StatefulSet db of ns runs n pods,
// Ready and all owned by it.
func waitForStatefulSetPods(t *testing.T, ns string, n int) statefulSetPods {
	t.Helper()
	var got statefulSetPods
	waitFor(t, fmt.Sprintf("%d Ready pods of StatefulSet db, owned by it", n), func(ctx context.Context) (bool, error) {
		sts, err := suite.client.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		list, err := suite.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil {
			return false, nil
		}
		got = statefulSetPods{uids: map[string]types.UID{}, owner: sts.UID}
		for _, p := range list.Items {
			owned := slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == sts.UID })
			if !owned || !podReady(&p) {
				return false, nil
			}
			got.uids[p.Name] = p.UID
		}
		return len(got.uids) == n && readyStatefulSet(sts, n), nil
	})
	return got
}

// readyStatefulSet reports whether sts has observed its spec and counts n
// Ready replicas.
func readyStatefulSet(sts *appsv1.StatefulSet, n int) bool {
	return sts.Status.ObservedGeneration == sts.Generation && int(sts.Status.ReadyReplicas) == n
}

// checkSettings checks that ConfigMap settings of ns holds v.
func checkSettings(t *testing.T, ns, v string) {
	t.Helper()
	cm, err := suite.client.CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil || cm.Data["v"] != v {
		t.Errorf("ConfigMap settings: %v, %v; want v %s", cm.Data, err, v)
	}
}
