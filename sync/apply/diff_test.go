package apply

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// TestKeepSelectorKeys keeps the rollout controller's keys of a live
// Service's selector in the applied object, and nothing else.
func TestKeepSelectorKeys(t *testing.T) {
	service := func(selector map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "shop"}, "spec": map[string]any{"selector": selector}}}
	}
	it := &Item{
		Object: manifest.Object{Obj: service(map[string]any{"app": "shop"})},
		Live:   service(map[string]any{"app": "shop", "plimsoll.dev/color": "blue", "team": "x"}),
	}
	keepSelectorKeys(it)
	got, _, _ := unstructured.NestedStringMap(it.Object.Obj.Object, "spec", "selector")
	if want := map[string]string{"app": "shop", "plimsoll.dev/color": "blue"}; !reflect.DeepEqual(got, want) {
		t.Errorf("selector to apply %v, want %v", got, want)
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
	blueGreen := map[[2]string]bool{{"team", "web"}: true}
	for _, tt := range []struct {
		name      string
		live      string // "" for no live HPA
		blueGreen map[[2]string]bool
		want      string
	}{
		{"the active color kept", "web-green", blueGreen, "web-green"},
		{"the other color kept, mid-swap", "web-blue", blueGreen, "web-blue"},
		{"Git's own name", "web", blueGreen, "web"},
		{"another Deployment", "api-blue", blueGreen, "web"},
		{"not live yet", "", blueGreen, "web"},
		{"the workload left blue-green", "web-green", nil, "web"},
	} {
		it := &Item{Object: manifest.Object{Obj: hpa("web")}}
		if tt.live != "" {
			it.Live = hpa(tt.live)
		}
		keepScaleTarget(it, tt.blueGreen)
		if got, _, _ := unstructured.NestedString(it.Object.Obj.Object, "spec", "scaleTargetRef", "name"); got != tt.want {
			t.Errorf("%s: target to apply %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestBlueGreenWorkloads names the Deployments of a commit that run
// blue-green, and no other object.
func TestBlueGreenWorkloads(t *testing.T) {
	obj := func(kind, name, strategy string) manifest.Object {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": "team"}}}
		if strategy != "" {
			u.SetAnnotations(map[string]string{"plimsoll.dev/strategy": strategy})
		}
		return manifest.Object{Obj: u}
	}
	got := blueGreenWorkloads([]manifest.Object{obj("Deployment", "web", "blue-green"), obj("Deployment", "api", "canary"),
		obj("Deployment", "db", ""), obj("StatefulSet", "cache", "blue-green")})
	if want := map[[2]string]bool{{"team", "web"}: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("blue-green workloads %v, want %v", got, want)
	}
}
