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
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/test/internal/kit"
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

// rollingStatefulSet is StatefulSet db of 3 running image, rolled with a
// progress deadline of 20s.
func rollingStatefulSet(image string) string {
	return `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  annotations: {plimsoll.dev/progress-deadline: 20s}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: ` + image + `}]
`
}

// TestStatefulSetRollback rolls a StatefulSet of 3 through its own rolling
// update, watched by the daemon: an image that never becomes Ready is
// Degraded at the deadline and rolled back, its stuck pod replaced
// without a person (Kubernetes alone leaves it, kubernetes#67250), every
// ordinal back on the old revision and Ready, and Git's failed template
// not applied again; a fix after it goes out, its commit recorded.
func TestStatefulSetRollback(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	s := newSyncTarget(t)
	s.repo.Commit("db v1", map[string]string{"db.yaml": rollingStatefulSet("registry.example/db:v1")})
	kit.StartDaemon(t, s, "--interval", "1s")

	t.Log("1. applied and Healthy at revision 1")
	sts := waitForSet(t, s.ns, "revision 1 Healthy", setPhaseIs(1, "Healthy"))
	stable := sts.Status.UpdateRevision

	t.Log("2. an image that never pulls: Degraded at its deadline, rolled back, the stuck pod replaced")
	s.repo.Commit("db broken", map[string]string{"db.yaml": rollingStatefulSet("registry.example/db:does-not-exist")})
	sts = waitForSet(t, s.ns, "revision 2 Degraded, rolled back", func(sts *appsv1.StatefulSet) bool {
		a := sts.Annotations
		return setPhaseIs(2, "Degraded")(sts) && a["plimsoll.dev/failed-hash"] != "" && strings.Contains(a["plimsoll.dev/message"], "rolled back to template")
	})
	t.Logf("message: %s", sts.Annotations["plimsoll.dev/message"])
	sts = waitForSet(t, s.ns, "every ordinal back on the stable revision and Ready", func(sts *appsv1.StatefulSet) bool {
		st := sts.Status
		return st.ObservedGeneration == sts.Generation && st.UpdateRevision == stable && st.CurrentRevision == stable &&
			st.ReadyReplicas == 3 && st.UpdatedReplicas == 3
	})
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != "registry.example/db:v1" {
		t.Errorf("StatefulSet db runs %s after the rollback, want registry.example/db:v1", img)
	}
	pods, err := suite.client.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels["controller-revision-hash"] != stable || !podReady(&p) {
			t.Errorf("pod %s: revision %s, ready %v; want %s and Ready", p.Name, p.Labels["controller-revision-hash"], podReady(&p), stable)
		}
	}
	events := setEvents(t, s.ns, "db")
	for _, reason := range []string{"RolledBack", "PodReplaced"} {
		if len(eventMessages(events, reason)) == 0 {
			t.Errorf("no %s Event on StatefulSet db; %d Events", reason, len(events))
		}
	}
	waitForSet(t, s.ns, "still on v1 after more polls of the failed commit", func(sts *appsv1.StatefulSet) bool {
		return sts.Status.ObservedGeneration == sts.Generation && sts.Spec.Template.Spec.Containers[0].Image == "registry.example/db:v1" &&
			s.status(t)["plimsoll.dev/sync-status"] == "Synced"
	})

	t.Log("3. a fix goes out: revision 3 Healthy")
	fix := s.repo.Commit("db v2", map[string]string{"db.yaml": rollingStatefulSet("registry.example/db:v2")})
	sts = waitForSet(t, s.ns, "revision 3 Healthy", setPhaseIs(3, "Healthy"))
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != "registry.example/db:v2" || sts.Annotations["plimsoll.dev/failed-hash"] != "" {
		t.Errorf("StatefulSet db runs %s, failed-hash %q; want v2 and no failure", img, sts.Annotations["plimsoll.dev/failed-hash"])
	}
	if got := sts.Annotations["plimsoll.dev/commit"]; got != fix {
		t.Errorf("StatefulSet db commit annotation %q, want the fix's commit %s", got, fix)
	}
}

// setPhaseIs matches a StatefulSet at revision and phase.
func setPhaseIs(revision int, phase string) func(*appsv1.StatefulSet) bool {
	return func(sts *appsv1.StatefulSet) bool {
		return sts.Annotations["plimsoll.dev/revision"] == fmt.Sprint(revision) && sts.Annotations["plimsoll.dev/phase"] == phase
	}
}

// waitForSet waits until StatefulSet db of ns matches cond.
func waitForSet(t *testing.T, ns, describe string, cond func(*appsv1.StatefulSet) bool) *appsv1.StatefulSet {
	t.Helper()
	var got *appsv1.StatefulSet
	waitFor(t, "StatefulSet db: "+describe, func(ctx context.Context) (bool, error) {
		sts, err := suite.client.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = sts
		return cond(sts), nil
	})
	return got
}

// setEvents lists the Events about object name of ns.
func setEvents(t *testing.T, ns, name string) []corev1.Event {
	t.Helper()
	list, err := suite.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	return list.Items
}

// TestStatefulSetAdopted: a StatefulSet created by kubectl, then
// committed to Git as it is, is taken over without a pod restarted, and
// rolled from then on: Healthy at revision 1.
func TestStatefulSetAdopted(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	s := newSyncTarget(t)
	var sts appsv1.StatefulSet
	if err := yaml.Unmarshal([]byte(rollingStatefulSet("registry.example/db:v1")), &sts); err != nil {
		t.Fatal(err)
	}
	if _, err := suite.client.AppsV1().StatefulSets(s.ns).Create(ctx, &sts, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	before := waitForStatefulSetPods(t, s.ns, 3)

	s.repo.Commit("db in Git", map[string]string{"db.yaml": rollingStatefulSet("registry.example/db:v1")})
	if out, code := s.syncOnce(t, "--wait", "--timeout", "2m"); code != 0 || !strings.Contains(out, "StatefulSet/"+s.ns+"/db Healthy") {
		t.Fatalf("sync --once --wait of the adopted StatefulSet: exit %d:\n%s", code, out)
	}
	got := waitForSet(t, s.ns, "revision 1 Healthy", setPhaseIs(1, "Healthy"))
	after := waitForStatefulSetPods(t, s.ns, 3)
	if got.UID != before.owner || !maps.Equal(after.uids, before.uids) {
		t.Errorf("after the takeover: StatefulSet %s (was %s), pods %v (were %v); want the same, none restarted", got.UID, before.owner, after.uids, before.uids)
	}
	if got.Labels["plimsoll.dev/sync"] != s.ns {
		t.Errorf("StatefulSet db labels %v, want plimsoll.dev/sync=%s", got.Labels, s.ns)
	}
}

// TestStatefulSetUndoRestored: `kubectl rollout undo statefulset` puts
// the previous template back by hand; the daemon applies Git's again,
// with an Event on the StatefulSet saying so.
func TestStatefulSetUndoRestored(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("db v1", map[string]string{"db.yaml": rollingStatefulSet("registry.example/db:v1")})
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForSet(t, s.ns, "revision 1 Healthy", setPhaseIs(1, "Healthy"))
	s.repo.Commit("db v2", map[string]string{"db.yaml": rollingStatefulSet("registry.example/db:v2")})
	waitForSet(t, s.ns, "revision 2 Healthy", setPhaseIs(2, "Healthy"))

	if out, err := runKubectl("", "-n", s.ns, "rollout", "undo", "statefulset/db"); err != nil {
		t.Fatalf("kubectl rollout undo: %v\n%s", err, out)
	}
	sts := waitForSet(t, s.ns, "Git's template again, Healthy", func(sts *appsv1.StatefulSet) bool {
		return sts.Spec.Template.Spec.Containers[0].Image == "registry.example/db:v2" && sts.Annotations["plimsoll.dev/phase"] == "Healthy" &&
			sts.Status.UpdatedReplicas == 3 && sts.Status.ReadyReplicas == 3 && sts.Status.ObservedGeneration == sts.Generation
	})
	if msgs := eventMessages(setEvents(t, s.ns, "db"), "TemplateRestored"); len(msgs) == 0 {
		t.Errorf("no TemplateRestored Event on StatefulSet db (generation %d)", sts.Generation)
	} else {
		t.Logf("TemplateRestored: %s", msgs[0])
	}
}

// claimedStatefulSet is StatefulSet db of 3 at image, each pod with a
// claim of storage class class, rolled with a progress deadline of 20s.
func claimedStatefulSet(image, class string) string {
	return rollingStatefulSet(image) + `  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: ` + class + `
      resources: {requests: {storage: 1Gi}}
`
}

// TestStatefulSetKeepsClaims: a StatefulSet whose pods hold claims
// (bound to volumes provisioned statically, as a cluster without a
// provisioner does) keeps each ordinal's claim through a failed revision
// and its rollback, and through a canary by partition: the same claims,
// bound to the same volumes, mounted by the ordinals' new pods.
func TestStatefulSetKeepsClaims(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	s := newSyncTarget(t)
	class := s.ns + "-manual"
	immediate := storagev1.VolumeBindingImmediate
	if _, err := suite.client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &immediate}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = suite.client.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	for i := range 3 {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName(class, i)}, Spec: corev1.PersistentVolumeSpec{
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: class, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + pvName(class, i)}}}}
		if _, err := suite.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = suite.client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		})
	}
	s.repo.Commit("db v1", map[string]string{"db.yaml": claimedStatefulSet("registry.example/db:v1", class)})
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForSet(t, s.ns, "revision 1 Healthy", setPhaseIs(1, "Healthy"))
	before := claims(t, s.ns)
	if len(before) != 3 {
		t.Fatalf("claims %v, want data-db-0..2 bound", before)
	}

	s.repo.Commit("db broken", map[string]string{"db.yaml": claimedStatefulSet("registry.example/db:does-not-exist", class)})
	waitForSet(t, s.ns, "revision 2 Degraded, rolled back", func(sts *appsv1.StatefulSet) bool {
		return setPhaseIs(2, "Degraded")(sts) && strings.Contains(sts.Annotations["plimsoll.dev/message"], "rolled back to template")
	})
	waitForStatefulSetPods(t, s.ns, 3)
	checkClaims(t, s.ns, "after the rollback", before)

	t.Log("a canary by partition: db-2 first, then the others, each on its claim")
	canary := strings.Replace(claimedStatefulSet("registry.example/db:v2", class), "annotations: {",
		`annotations: {plimsoll.dev/strategy: canary, plimsoll.dev/steps: "33%, pause, 100%", `, 1)
	s.repo.Commit("db v2 by canary", map[string]string{"db.yaml": canary})
	sts := waitForSet(t, s.ns, "revision 3 at step 2", stepIs(3, 2, "Paused"))
	checkOrdinals(t, s.ns, sts, sts.Status.CurrentRevision, 2)
	checkClaims(t, s.ns, "at the canary's first step", before)
	promote(t, s, "moved on from step 2/3")
	waitForSet(t, s.ns, "revision 3 Healthy", setPhaseIs(3, "Healthy"))
	waitForStatefulSetPods(t, s.ns, 3)
	checkClaims(t, s.ns, "after the canary", before)
}

// checkClaims checks that the claims of ns are still want, and that each
// pod of StatefulSet db mounts its ordinal's.
func checkClaims(t *testing.T, ns, when string, want map[string]string) {
	t.Helper()
	if got := claims(t, ns); !maps.Equal(got, want) {
		t.Errorf("claims %s %v, want the same %v", when, got, want)
	}
	pods, err := suite.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=db"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		mounted := slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
			return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "data-"+p.Name
		})
		if !mounted {
			t.Errorf("pod %s does not mount its claim data-%s %s", p.Name, p.Name, when)
		}
	}
}

// pvName is the name of volume i of class.
func pvName(class string, i int) string { return fmt.Sprintf("%s-%d", class, i) }

// claims are the bound claims of ns: their UID and volume, by name.
func claims(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := suite.client.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range list.Items {
		if c.Status.Phase == corev1.ClaimBound {
			out[c.Name] = string(c.UID) + " on " + c.Spec.VolumeName
		}
	}
	return out
}
