package rollout

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
)

// TestTemplateChangedByHandIsRestored: once canary and blue-green "api"
// run v1, the template of the Deployment that serves is changed by hand
// as `kubectl set image` and `kubectl set env` do, keeping the stamp it
// was written with. The controller writes Git's template again (the hand
// image and env var gone, the stamp and the role labels as before, the
// revision unchanged) and is then quiet. With
// plimsoll.dev/kubectl-edits: keep, it leaves the change alone.
func TestTemplateChangedByHandIsRestored(t *testing.T) {
	keep := maps.Clone(canaryAnnotations)
	keep[contract.AnnotationKubectlEdits] = contract.KubectlEditsKept
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		serving     string
		restored    bool
	}{
		{"canary", canaryAnnotations, "api", true},
		{"blue-green", blueGreenAnnotations, "api-blue", true},
		{"canary, kubectl edits kept", keep, "api", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newCluster(t, "api")
			k.handOver("c0ffee1", gitDeployment("v1", tc.annotations))
			k.untilQuiet()
			before := k.deployment(tc.serving)
			editByHand(t, k, tc.serving)

			k.untilQuiet()
			after := k.deployment(tc.serving)
			image, env := after.Spec.Template.Spec.Containers[0].Image, after.Spec.Template.Spec.Containers[0].Env
			if !tc.restored {
				if image != "registry.example/api:hotfix" || len(env) != 1 {
					t.Fatalf("kept edits: image %s, env %v; want the hand's", image, env)
				}
				return
			}
			if image != "registry.example/api:v1" || len(env) != 0 {
				t.Errorf("after the restore: image %s, env %v; want Git's registry.example/api:v1 and no env", image, env)
			}
			if !maps.Equal(after.Spec.Template.Labels, before.Spec.Template.Labels) || !maps.Equal(after.Spec.Template.Annotations, before.Spec.Template.Annotations) {
				t.Errorf("restored template labels %v, annotations %v; want those it was written with, %v and %v",
					after.Spec.Template.Labels, after.Spec.Template.Annotations, before.Spec.Template.Labels, before.Spec.Template.Annotations)
			}
			for _, key := range []string{contract.AnnotationRevision, AnnotationChangeCause, contract.AnnotationPhase} {
				if after.Annotations[key] != before.Annotations[key] {
					t.Errorf("%s is %q after the restore, want %q as before", key, after.Annotations[key], before.Annotations[key])
				}
			}
		})
	}
}

// TestTemplateAdditionByKubectlIsRestored: a resource limit put beside
// Git's container, a key Git does not set, is taken back when kubectl put
// it there (field manager kubectl-set, as `kubectl set resources` does),
// and kept when another tool did: such a field is that tool's, as
// server-side apply has it.
func TestTemplateAdditionByKubectlIsRestored(t *testing.T) {
	for _, tc := range []struct {
		manager string
		kept    bool
	}{
		{"kubectl-set", false},
		{"ops-tool", true},
	} {
		t.Run(tc.manager, func(t *testing.T) {
			k := newCluster(t, "api")
			k.handOver("c0ffee1", gitDeployment("v1", canaryAnnotations))
			k.untilQuiet()
			d := k.deployment("api")
			d.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			d.Generation++
			if _, err := k.client.AppsV1().Deployments("shop").Update(k.ctx, d, metav1.UpdateOptions{FieldManager: tc.manager}); err != nil {
				t.Fatal(err)
			}
			k.untilQuiet()
			limits := k.deployment("api").Spec.Template.Spec.Containers[0].Resources.Limits
			if kept := len(limits) > 0; kept != tc.kept {
				t.Errorf("limits %v after the %s change; want them kept: %v", limits, tc.manager, tc.kept)
			}
		})
	}
}

// TestTemplateRestoreDoesNotFight: a mutating webhook (a reactor of the
// fake API server) rewrites every image a Deployment update sends to a
// mirror registry, a field Git sets, in every patch of a Deployment. The canary's template changed by hand
// is written once with Git's template, which the webhook rewrites again;
// the controller does not write it again and again, and reports the
// restore once.
func TestTemplateRestoreDoesNotFight(t *testing.T) {
	k := newCluster(t, "api")
	k.handOver("c0ffee1", gitDeployment("v1", canaryAnnotations))
	k.untilQuiet()
	k.client.PrependReactor("patch", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetSubresource() != "" {
			return false, nil, nil
		}
		gvr := appsv1.SchemeGroupVersion.WithResource("deployments")
		obj, err := k.client.Tracker().Get(gvr, p.GetNamespace(), p.GetName())
		if err != nil {
			return true, nil, err
		}
		old, err := json.Marshal(obj)
		if err != nil {
			return true, nil, err
		}
		patched, err := strategicpatch.StrategicMergePatch(old, p.GetPatch(), appsv1.Deployment{})
		if err != nil {
			return true, nil, err
		}
		d := &appsv1.Deployment{}
		if err := json.Unmarshal(patched, d); err != nil {
			return true, nil, err
		}
		for i, c := range d.Spec.Template.Spec.Containers {
			d.Spec.Template.Spec.Containers[i].Image = strings.Replace(c.Image, "registry.example/", "mirror.example/", 1)
		}
		return true, d, k.client.Tracker().Update(gvr, d, p.GetNamespace())
	})
	editByHand(t, k, "api")
	rounds := k.untilQuiet()
	writes := 0
	for _, r := range rounds {
		for _, line := range r {
			if strings.HasPrefix(line, "update deployments/api ") {
				writes++
			}
		}
	}
	if writes != 1 {
		t.Errorf("api written %d times after the hand edit, want once (Git's template):\n%s", writes, show(rounds))
	}
	c := k.deployment("api").Spec.Template.Spec.Containers[0]
	if c.Image != "mirror.example/api:v1" || len(c.Env) != 0 {
		t.Errorf("after the restore: image %s, env %v; want Git's as the webhook rewrites it, mirror.example/api:v1, and no env", c.Image, c.Env)
	}
	if n := restoredEvents(t, k); n != 1 {
		t.Errorf("%d %s events, want 1", n, ReasonTemplateRestored)
	}
}

// restoredEvents counts the TemplateRestored events in namespace shop.
func restoredEvents(t *testing.T, k *cluster) int {
	t.Helper()
	events, err := k.client.CoreV1().Events("shop").List(k.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if e.Reason == ReasonTemplateRestored {
			n += max(int(e.Count), 1)
		}
	}
	return n
}

// editByHand changes Deployment name's template as `kubectl set image`
// and `kubectl set env` do: the image and one env var, the stamp left as
// it is, the generation bumped as the API server does (the fake does not).
func editByHand(t *testing.T, k *cluster, name string) {
	t.Helper()
	d := k.deployment(name)
	c := &d.Spec.Template.Spec.Containers[0]
	c.Image = "registry.example/api:hotfix"
	c.Env = append(c.Env, corev1.EnvVar{Name: "DEBUG", Value: "1"})
	d.Generation++
	if _, err := k.client.AppsV1().Deployments("shop").Update(k.ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-set"}); err != nil {
		t.Fatal(err)
	}
}

// TestTemplateWriteOfACreation: the write that creates a Deployment (no
// live object) is no restore, and is recorded without reading one.
func TestTemplateWriteOfACreation(t *testing.T) {
	want := gitDeployment("v1", nil)
	if newTemplateChecks().wrote(nil, want, want, 1) {
		t.Error("a creation counted as a restore")
	}
}

// TestRewound finds the ReplicaSet that records a later revision than its
// Deployment, as after `kubectl rollout undo` copied an earlier
// ReplicaSet's annotations onto it; a ReplicaSet of another Deployment,
// or one that records no more than the Deployment, is none.
func TestRewound(t *testing.T) {
	yes := true
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "web-uid",
		Annotations: map[string]string{contract.AnnotationRevision: "1"}}}
	rs := func(name string, uid types.UID, revision string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations:     map[string]string{contract.AnnotationRevision: revision},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", UID: uid, Controller: &yes}}}}
	}
	if got := rewound(d, []*appsv1.ReplicaSet{rs("web-a", "web-uid", "1"), rs("web-b", "web-uid", "2")}); got == nil || got.Name != "web-b" {
		t.Errorf("rewound = %v, want web-b, which records revision 2", got)
	}
	if got := rewound(d, []*appsv1.ReplicaSet{rs("web-a", "web-uid", "1"), rs("other-b", "other-uid", "2")}); got != nil {
		t.Errorf("rewound = %s, want none: the later revision is another Deployment's", got.Name)
	}
}
