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
