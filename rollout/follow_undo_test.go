package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// TestFollowedUndoIsRestored rolls rolling "api" from v1 to v2, then
// plays `kubectl rollout undo` while the daemon is down: the Deployment
// takes back v1's template and, copied from v1's ReplicaSet, revision 1's
// annotations. The daemon that starts again has no intent from Git yet,
// so it follows the workload from what it records; it must read that
// record from v2's ReplicaSet, which still says revision 2, and write
// v2's template back, not take revision 1 for the workload's state.
func TestFollowedUndoIsRestored(t *testing.T) {
	k := newCluster(t, "api")
	k.toV2(nil)
	k.untilQuiet()
	api := k.deployment("api")
	v2 := api.Spec.Template.Annotations[contract.AnnotationTemplateHash]
	if api.Annotations[contract.AnnotationRevision] != "2" || api.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy {
		t.Fatalf("before the undo: revision %s %s, want 2 Healthy", api.Annotations[contract.AnnotationRevision], api.Annotations[contract.AnnotationPhase])
	}

	v1 := k.replicaSetRunning(api, "registry.example/api:v1")
	undone := api.DeepCopy()
	undone.Spec.Template = *v1.Spec.Template.DeepCopy()
	delete(undone.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	for key, v := range v1.Annotations {
		undone.Annotations[key] = v
	}
	if _, err := k.client.AppsV1().Deployments("shop").Update(k.ctx, undone, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	k.restart()
	k.untilQuiet()

	api = k.deployment("api")
	if got := api.Spec.Template.Annotations[contract.AnnotationTemplateHash]; got != v2 || podtemplate.LiveHash(api.Spec.Template) != v2 {
		t.Errorf("after the restart, api runs template %s, want v2's %s written back over the undo", got, v2)
	}
	if got := api.Spec.Template.Spec.Containers[0].Image; got != "registry.example/api:v2" {
		t.Errorf("after the restart, api runs %s, want registry.example/api:v2", got)
	}
	if _, ok := api.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
		t.Errorf("the template written back carries %s from its ReplicaSet", appsv1.DefaultDeploymentUniqueLabelKey)
	}
	if rev, phase := api.Annotations[contract.AnnotationRevision], api.Annotations[contract.AnnotationPhase]; rev != "2" || phase != contract.PhaseHealthy {
		t.Errorf("after the restart: revision %s %s, want revision 2 Healthy again", rev, phase)
	}
	if n := restoredEvents(t, k); n != 1 {
		t.Errorf("%d %s Events, want 1: the undo written over", n, ReasonTemplateRestored)
	}
}

// replicaSetRunning returns the ReplicaSet that Deployment d controls
// whose template runs image.
func (k *cluster) replicaSetRunning(d *appsv1.Deployment, image string) *appsv1.ReplicaSet {
	k.t.Helper()
	list, err := k.client.AppsV1().ReplicaSets("shop").List(k.ctx, metav1.ListOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	for i := range list.Items {
		rs := &list.Items[i]
		if metav1.IsControlledBy(rs, d) && rs.Spec.Template.Spec.Containers[0].Image == image {
			return rs
		}
	}
	k.t.Fatalf("%s controls no ReplicaSet running %s", d.Name, image)
	return nil
}

// restart replaces the controller with a new one on the same fake API
// server, as a daemon that starts again: no intent from Git, nothing
// remembered, the caches read anew.
func (k *cluster) restart() {
	k.t.Helper()
	c := New(Config{Client: k.client, SyncName: "default", Clock: k.clock, Log: k.c.log})
	for _, f := range c.factories {
		f.Start(k.ctx.Done())
	}
	if !cache.WaitForCacheSync(k.ctx.Done(), c.synced...) {
		k.t.Fatal("caches did not sync")
	}
	close(c.started)
	k.c = c
}
