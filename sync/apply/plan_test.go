package apply

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// TestReadLivePagesAndTrims: the live objects of a scope are listed a
// page at a time, and each keeps what a sync reads of it: no status, and
// managedFields only where a kubectl command owns fields to take over.
func TestReadLivePagesAndTrims(t *testing.T) {
	withFields := func(name string, managers ...string) map[string]any {
		obj := labelled("v1", "ConfigMap", "shop", name, "prod", false)
		var entries []any
		for _, m := range managers {
			entries = append(entries, map[string]any{"manager": m, "operation": "Update", "apiVersion": "v1",
				"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:data": map[string]any{}}})
		}
		obj.Object["metadata"].(map[string]any)["managedFields"] = entries
		obj.Object["status"] = map[string]any{"note": "large"}
		return obj.Object
	}
	pages := map[string]struct {
		items []map[string]any
		next  string
	}{
		"":       {items: []map[string]any{withFields("plain", "plimsoll"), withFields("edited", "plimsoll", "kubectl-edit")}, next: "page-2"},
		"page-2": {items: []map[string]any{withFields("scaled", "plimsoll", "kube-controller-manager")}},
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ConfigMapList"})
	var asked []metav1.ListOptions
	dyn.PrependReactor("list", "configmaps", func(action k8stesting.Action) (bool, runtime.Object, error) {
		opts := action.(k8stesting.ListActionImpl).ListOptions
		asked = append(asked, opts)
		page := pages[opts.Continue]
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}
		list.SetContinue(page.next)
		for _, item := range page.items {
			list.Items = append(list.Items, unstructured.Unstructured{Object: item})
		}
		return true, list, nil
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	a := New(Config{Dynamic: dyn, Mapper: fixedMapper{mapper}, SyncName: "prod"})

	live, err := a.readLive(context.Background(), []Scope{{Resource: gvr, Namespace: "shop"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 || asked[0].Limit != listPage || asked[0].Continue != "" || asked[1].Continue != "page-2" {
		t.Fatalf("lists asked %+v, want two pages of %d", asked, listPage)
	}
	wantFields := map[string]bool{"plain": false, "edited": true, "scaled": false}
	if len(live) != len(wantFields) {
		t.Fatalf("live holds %d objects, want %d", len(live), len(wantFields))
	}
	for name, kept := range wantFields {
		obj := live[manifest.Key{Kind: "ConfigMap", Namespace: "shop", Name: name}]
		if obj == nil {
			t.Fatalf("%s not read", name)
		}
		if _, ok := obj.Object["status"]; ok {
			t.Errorf("%s keeps its status", name)
		}
		if got := len(obj.GetManagedFields()) > 0; got != kept {
			t.Errorf("%s keeps managedFields: %v, want %v", name, got, kept)
		}
	}
}
