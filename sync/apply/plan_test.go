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

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// TestPlanReadsLiveAPageAtATime: the live objects of a scope are listed
// a page at a time, and each item is decided from its live object as
// listed, without status and with managedFields only where a kubectl
// command owns fields to take over (the edited one is restored). A plan
// then keeps of each live object its identity alone, and a plan for a
// diff the object but for what the listing trimmed.
func TestPlanReadsLiveAPageAtATime(t *testing.T) {
	withFields := func(name string, managers ...string) map[string]any {
		obj := labelled("v1", "ConfigMap", "shop", name, "prod", false)
		var entries []any
		for _, m := range managers {
			entries = append(entries, map[string]any{"manager": m, "operation": "Update", "apiVersion": "v1",
				"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:data": map[string]any{}}})
		}
		obj.Object["metadata"].(map[string]any)["managedFields"] = entries
		obj.Object["metadata"].(map[string]any)["resourceVersion"] = "7"
		obj.Object["metadata"].(map[string]any)["annotations"] = map[string]any{"note": "large"}
		obj.Object["data"] = map[string]any{"k": "v"}
		obj.Object["status"] = map[string]any{"note": "large"}
		return obj.Object
	}
	pages := map[string]struct {
		items []map[string]any
		next  string
	}{
		"":       {items: []map[string]any{withFields("plain", "plimsoll"), withFields("edited", "plimsoll", "kubectl-edit")}, next: "page-2"},
		"page-2": {items: []map[string]any{withFields("scaled", "plimsoll", "kube-controller-manager"), withFields("gone", "plimsoll")}},
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
			list.Items = append(list.Items, unstructured.Unstructured{Object: runtime.DeepCopyJSON(item)})
		}
		return true, list, nil
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	a := New(Config{Dynamic: dyn, Mapper: fixedMapper{mapper}, SyncName: "prod"})
	desired := func() []manifest.Object {
		var out []manifest.Object
		for _, name := range []string{"plain", "edited", "scaled", "new"} {
			obj := labelled("v1", "ConfigMap", "shop", name, "", false)
			obj.Object["data"] = map[string]any{"k": "v"}
			out = append(out, manifest.Object{Obj: obj, Origin: manifest.Origin{File: name + ".yaml", Doc: 1}})
		}
		return out
	}
	first, err := a.Plan(context.Background(), desired(), inventory.Inventory{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The two pages of the sync's objects, then those of other syncs,
	// for new (see checkOwners).
	if len(asked) != 4 || asked[0].Limit != listPage || asked[0].Continue != "" || asked[1].Continue != "page-2" {
		t.Fatalf("lists asked %+v, want two pages of %d, twice", asked, listPage)
	}
	inv := inventory.Inventory{}
	for _, it := range first.Items {
		inv[it.Key()] = EntryOf(it)
	}

	wantAction := map[string]Action{"plain": ActionNone, "edited": ActionRestore, "scaled": ActionNone, "new": ActionCreate}
	for _, whole := range []bool{false, true} {
		plan, err := a.plan(context.Background(), desired(), inv, nil, whole)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range plan.Items {
			name := it.Key().Name
			if it.Action != wantAction[name] {
				t.Errorf("whole=%v: %s: action %s, want %s", whole, name, it.Action, wantAction[name])
			}
			if name == "new" {
				if it.Live != nil {
					t.Errorf("whole=%v: new has a live object", whole)
				}
				continue
			}
			if it.Live.GetResourceVersion() != "7" || it.Live.GetName() != name || it.Live.GetKind() != "ConfigMap" {
				t.Errorf("whole=%v: %s lost its identity: %v", whole, name, it.Live.Object)
			}
			if labelled := it.Live.GetLabels()[contract.LabelSync] == "prod"; labelled != whole {
				t.Errorf("whole=%v: %s keeps its labels: %v", whole, name, labelled)
			}
			if _, ok := it.Live.Object["status"]; ok {
				t.Errorf("whole=%v: %s keeps its status", whole, name)
			}
			_, data := it.Live.Object["data"]
			fields := len(it.Live.GetManagedFields()) > 0
			if !whole && (data || fields || it.Live.GetAnnotations() != nil) {
				t.Errorf("%s keeps more than its identity: %v", name, it.Live.Object)
			}
			if whole && (!data || fields != (name == "edited")) {
				t.Errorf("whole: %s keeps data %v, managedFields %v", name, data, fields)
			}
		}
	}
}
