//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// canaryStatefulSet is StatefulSet db of 4 at image, rolled by canary
// on its partition in steps 25%, pause, 50%, pause, 100%, each step
// reached within 40s; with Service db in front of it.
func canaryStatefulSet(image string) map[string]string {
	return map[string]string{
		"db.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  annotations:
    plimsoll.dev/strategy: canary
    plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"
    plimsoll.dev/progress-deadline: 40s
spec:
  serviceName: db
  replicas: 4
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: ` + image + `}]
`,
		"service.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: db}\nspec:\n  selector: {app: db}\n  ports: [{port: 5432}]\n",
	}
}

// TestStatefulSetCanary rolls a StatefulSet of 4 by canary on its
// partition: at each step exactly the highest ordinals run the new
// revision (25%: db-3; 50%: db-2 and db-3), a pause waits for promote,
// and the Service's ready endpoints never fall below 3 (one pod down at
// a time). An abort puts the template back and replaces the updated
// ordinal, and `plimsoll trace --until-done` ends non-zero on it; an image that never becomes Ready fails its first step at
// the deadline, rolled back, its pod replaced without a person.
func TestStatefulSetCanary(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("db v1", canaryStatefulSet("registry.example/db:v1"))
	kit.StartDaemon(t, s, "--interval", "1s")
	v1 := waitForSet(t, s.ns, "revision 1 Healthy, gone out whole", setPhaseIs(1, "Healthy")).Status.UpdateRevision
	waitForStatefulSetPods(t, s.ns, 4)
	endpoints := watchEndpoints(t, s.ns, "db")
	mark := endpoints.mark()

	t.Log("1. v2 at step 2: ordinal 3 alone updated, waiting for promote")
	s.repo.Commit("db v2", canaryStatefulSet("registry.example/db:v2"))
	sts := waitForSet(t, s.ns, "step 2 Paused", stepIs(2, 2, "Paused"))
	checkOrdinals(t, s.ns, sts, v1, 3)
	if msg := sts.Annotations["plimsoll.dev/message"]; !strings.Contains(msg, "canary step 2/5: 25% (1/4 pods updated); waiting for promote") {
		t.Errorf("message %q, want it at 25%% waiting for promote", msg)
	}

	t.Log("2. promote: step 4, ordinals 2 and 3 updated")
	promote(t, s, "moved on from step 2/5")
	sts = waitForSet(t, s.ns, "step 4 Paused", stepIs(2, 4, "Paused"))
	checkOrdinals(t, s.ns, sts, v1, 2)

	t.Log("3. promote: every ordinal, Healthy")
	promote(t, s, "moved on from step 4/5")
	sts = waitForSet(t, s.ns, "revision 2 Healthy, every pod updated", func(sts *appsv1.StatefulSet) bool {
		return setPhaseIs(2, "Healthy")(sts) && sts.Status.CurrentRevision == sts.Status.UpdateRevision && sts.Status.ReadyReplicas == 4
	})
	v2 := sts.Status.UpdateRevision
	checkOrdinals(t, s.ns, sts, v2, 0)
	if p := partitionOf(sts); p != 0 || sts.Annotations["plimsoll.dev/step"] != "" {
		t.Errorf("after the promotion: partition %d, step %q; want 0 and none", p, sts.Annotations["plimsoll.dev/step"])
	}
	if fewest, pods := endpoints.minReadySince(mark); fewest < 3 {
		t.Errorf("ready endpoints fell to %d during the canary (%v), want at least 3", fewest, pods)
	}

	t.Log("4. v3 aborted at step 2: the template back, ordinal 3 replaced")
	s.repo.Commit("db v3", canaryStatefulSet("registry.example/db:v3"))
	waitForSet(t, s.ns, "revision 3 at step 2", stepIs(3, 2, "Paused"))
	if out, code := runPlimsoll(t, append([]string{"abort", "db"}, s.cliFlags()...)...); code != 0 || !strings.Contains(out, "aborted revision 3") {
		t.Fatalf("plimsoll abort db: exit %d:\n%s", code, out)
	}
	sts = waitForSet(t, s.ns, "Degraded, every ordinal back on v2 and Ready", rolledBackTo(3, v2))
	checkOrdinals(t, s.ns, sts, v2, 0)
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != "registry.example/db:v2" {
		t.Errorf("StatefulSet db runs %s after the abort, want v2", img)
	}
	out, code := runPlimsoll(t, append([]string{"trace", "db", "--until-done"}, s.cliFlags()...)...)
	if code == 0 || !strings.Contains(out, "db canary revision 3 Degraded | StatefulSet db 4/4, 4 updated | Service db 4 ready") ||
		!strings.Contains(out, "rollout of db ended Degraded") {
		t.Errorf("plimsoll trace db --until-done: exit %d, want non-zero with the StatefulSet's line:\n%s", code, out)
	}

	t.Log("5. an image that never becomes Ready: step 1 fails at its deadline, rolled back, db-3 replaced")
	s.repo.Commit("db broken", canaryStatefulSet("registry.example/db:does-not-exist"))
	sts = waitForSet(t, s.ns, "revision 4 failed, rolled back, every ordinal on v2", rolledBackTo(4, v2))
	if msg := sts.Annotations["plimsoll.dev/message"]; !strings.Contains(msg, "step 1/5 not reached within its deadline of 40s") {
		t.Errorf("message %q, want the first step's deadline", msg)
	}
	events := setEvents(t, s.ns, "db")
	for _, reason := range []string{"RolledBack", "PodReplaced", "Command"} {
		if len(eventMessages(events, reason)) == 0 {
			t.Errorf("no %s Event on StatefulSet db; %d Events", reason, len(events))
		}
	}
	if fewest, pods := endpoints.minReadySince(mark); fewest < 3 {
		t.Errorf("ready endpoints fell to %d (%v), want at least 3", fewest, pods)
	}
}

// stepIs matches a StatefulSet at revision, canary step and phase, its
// controller caught up.
func stepIs(revision, step int, phase string) func(*appsv1.StatefulSet) bool {
	return func(sts *appsv1.StatefulSet) bool {
		return setPhaseIs(revision, phase)(sts) && sts.Annotations["plimsoll.dev/step"] == fmt.Sprint(step) &&
			sts.Status.ObservedGeneration == sts.Generation
	}
}

// rolledBackTo matches a StatefulSet whose revision failed and which runs
// stable revision again on every ordinal, Ready, partition 0.
func rolledBackTo(revision int, stable string) func(*appsv1.StatefulSet) bool {
	return func(sts *appsv1.StatefulSet) bool {
		st := sts.Status
		return setPhaseIs(revision, "Degraded")(sts) && sts.Annotations["plimsoll.dev/failed-hash"] != "" &&
			st.ObservedGeneration == sts.Generation && st.UpdateRevision == stable && st.CurrentRevision == stable &&
			st.ReadyReplicas == 4 && st.UpdatedReplicas == 4 && partitionOf(sts) == 0
	}
}

// partitionOf is the partition of sts's rolling update.
func partitionOf(sts *appsv1.StatefulSet) int32 {
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

// checkOrdinals checks that the pods of StatefulSet db below ordinal from
// run revision old and those from it up its update revision, each Ready,
// and that its partition is from.
func checkOrdinals(t *testing.T, ns string, sts *appsv1.StatefulSet, old string, from int) {
	t.Helper()
	if p := partitionOf(sts); p != int32(from) {
		t.Errorf("partition %d, want %d", p, from)
	}
	var got []string
	waitFor(t, fmt.Sprintf("ordinals 0-%d on %s, the rest on %s, all Ready", from-1, old, sts.Status.UpdateRevision), func(ctx context.Context) (bool, error) {
		pods, err := suite.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil {
			return false, nil
		}
		got = got[:0]
		ok := len(pods.Items) == int(*sts.Spec.Replicas)
		for _, p := range pods.Items {
			want := sts.Status.UpdateRevision
			if ord := p.Name[strings.LastIndex(p.Name, "-")+1:]; ord < fmt.Sprint(from) {
				want = old
			}
			rev := p.Labels["controller-revision-hash"]
			got = append(got, fmt.Sprintf("%s=%s", p.Name, rev))
			ok = ok && rev == want && podReady(&p) && p.DeletionTimestamp == nil
		}
		slices.Sort(got)
		return ok, nil
	})
	t.Logf("pods: %v", got)
}

// promote runs `plimsoll promote db` and checks that it says said.
func promote(t *testing.T, s *syncTarget, said string) {
	t.Helper()
	out, code := runPlimsoll(t, append([]string{"promote", "db"}, s.cliFlags()...)...)
	if code != 0 || !strings.Contains(out, said) {
		t.Fatalf("plimsoll promote db: exit %d, want %q:\n%s", code, said, out)
	}
}
