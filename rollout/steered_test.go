package rollout

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestKeepSelectorKeys keeps the controller's keys of a live Service's
// selector in the object a sync applies, and nothing else.
func TestKeepSelectorKeys(t *testing.T) {
	service := func(selector map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "shop"}, "spec": map[string]any{"selector": selector}}}
	}
	want := service(map[string]any{"app": "shop"})
	steered(want, service(map[string]any{"app": "shop", "plimsoll.dev/color": "blue", "team": "x"}), nil)
	got, _, _ := unstructured.NestedStringMap(want.Object, "spec", "selector")
	if exp := map[string]string{"app": "shop", "plimsoll.dev/color": "blue"}; !reflect.DeepEqual(got, exp) {
		t.Errorf("selector to apply %v, want %v", got, exp)
	}
}

// TestKeepScaleTarget keeps the color a live HPA of a blue-green workload
// targets, and nothing else: not for another strategy, not another name,
// not for an HPA that is not live yet.
func TestKeepScaleTarget(t *testing.T) {
	hpa := func(target string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
			"metadata": map[string]any{"name": "web", "namespace": "team"},
			"spec":     map[string]any{"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": target}}}}
	}
	blueGreen := map[types.NamespacedName]bool{{Namespace: "team", Name: "web"}: true}
	for _, tt := range []struct {
		name      string
		live      string // "" for no live HPA
		blueGreen map[types.NamespacedName]bool
		want      string
	}{
		{"the active color kept", "web-green", blueGreen, "web-green"},
		{"the other color kept, mid-swap", "web-blue", blueGreen, "web-blue"},
		{"Git's own name", "web", blueGreen, "web"},
		{"another Deployment", "api-blue", blueGreen, "web"},
		{"not live yet", "", blueGreen, "web"},
		{"the workload left blue-green", "web-green", nil, "web"},
	} {
		want := hpa("web")
		var live *unstructured.Unstructured
		if tt.live != "" {
			live = hpa(tt.live)
		}
		steered(want, live, tt.blueGreen)
		if got, _, _ := unstructured.NestedString(want.Object, "spec", "scaleTargetRef", "name"); got != tt.want {
			t.Errorf("%s: target to apply %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestBlueGreenWorkloads names the Deployments of a commit that run
// blue-green, and no other.
func TestBlueGreenWorkloads(t *testing.T) {
	deploy := func(name, strategy string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"}}
		if strategy != "" {
			d.Annotations = map[string]string{"plimsoll.dev/strategy": strategy}
		}
		return d
	}
	got := blueGreenWorkloads([]*appsv1.Deployment{deploy("web", "blue-green"), deploy("api", "canary"), deploy("db", "")})
	if want := map[types.NamespacedName]bool{{Namespace: "team", Name: "web"}: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("blue-green workloads %v, want %v", got, want)
	}
}

// TestHoldPartition gives a canary StatefulSet's new template a partition
// of its whole count, keeps the live partition while the template is the
// live one, and leaves a rolling StatefulSet's alone.
func TestHoldPartition(t *testing.T) {
	sts := func(strategy, image string, partition int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet",
			"metadata": map[string]any{"name": "db", "namespace": "team", "annotations": map[string]any{"plimsoll.dev/strategy": strategy}},
			"spec": map[string]any{"replicas": int64(4), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "db", "image": image}}}}}}}
		if partition >= 0 {
			_ = unstructured.SetNestedField(u.Object, partition, "spec", "updateStrategy", "rollingUpdate", "partition")
		}
		return u
	}
	for _, tt := range []struct {
		name      string
		want      *unstructured.Unstructured
		live      *unstructured.Unstructured
		partition int64 // -1: none
	}{
		{"a new template: every ordinal held", sts("canary", "db:2", -1), sts("canary", "db:1", 0), 4},
		{"the live template, mid-canary: the live partition", sts("canary", "db:2", -1), sts("canary", "db:2", 2), 2},
		{"the live template at rest", sts("canary", "db:1", -1), sts("canary", "db:1", 0), 0},
		{"a rolling StatefulSet: Git's", sts("rolling", "db:2", -1), sts("rolling", "db:1", 0), -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			steered(tt.want, tt.live, nil)
			got, found, _ := unstructured.NestedInt64(tt.want.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
			if !found {
				got = -1
			}
			if got != tt.partition {
				t.Errorf("partition to apply %d, want %d", got, tt.partition)
			}
		})
	}
}

// TestHoldNodes gives a canary DaemonSet's new template the OnDelete
// update strategy, keeps the live one while the DaemonSet is in its
// steps, and leaves Git's otherwise.
func TestHoldNodes(t *testing.T) {
	ds := func(image, strategy, step string) *unstructured.Unstructured {
		a := map[string]any{"plimsoll.dev/strategy": "canary"}
		if step != "" {
			a["plimsoll.dev/step"] = step
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet",
			"metadata": map[string]any{"name": "agent", "namespace": "team", "annotations": a},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "agent", "image": image}}}}}}}
		if strategy != "" {
			_ = unstructured.SetNestedField(u.Object, strategy, "spec", "updateStrategy", "type")
		}
		return u
	}
	for _, tt := range []struct {
		name, want string
		git, live  *unstructured.Unstructured
	}{
		{"a new template: held at OnDelete", "OnDelete", ds("agent:2", "", ""), ds("agent:1", "RollingUpdate", "")},
		{"in its steps: the live strategy", "OnDelete", ds("agent:2", "", ""), ds("agent:2", "OnDelete", "2")},
		{"given back at the end: the live strategy until the steps are over", "RollingUpdate", ds("agent:2", "", ""), ds("agent:2", "RollingUpdate", "4")},
		{"at rest: Git's", "", ds("agent:2", "", ""), ds("agent:2", "OnDelete", "")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			steered(tt.git, tt.live, nil)
			if got, _, _ := unstructured.NestedString(tt.git.Object, "spec", "updateStrategy", "type"); got != tt.want {
				t.Errorf("update strategy to apply %q, want %q", got, tt.want)
			}
		})
	}
}
