package apply

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// TestProject cuts live down to what want sets: defaults the API server
// filled into a container drop out, a list of another length stays whole.
func TestProject(t *testing.T) {
	live := map[string]any{
		"spec": map[string]any{
			"replicas": int64(4),
			"containers": []any{
				map[string]any{"name": "web", "image": "web:v1", "imagePullPolicy": "IfNotPresent"},
			},
			"ports": []any{int64(80), int64(81)},
		},
		"status": map[string]any{"replicas": int64(4)},
	}
	want := map[string]any{
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": "web:v2"}},
			"ports":      []any{int64(80)},
		},
	}
	got := project(live, want)
	expect := map[string]any{
		"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": "web:v1"}},
			"ports":      []any{int64(80), int64(81)},
		},
	}
	if !reflect.DeepEqual(got, expect) {
		t.Errorf("project = %v, want %v", got, expect)
	}
}

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
