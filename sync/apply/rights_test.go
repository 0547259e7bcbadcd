package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/sync/inventory"
)

// TestCheckPrunes: a sync writing as its own identity is refused the
// prunes that identity may not make, naming each object and the
// resource, and asks once per resource and namespace; one writing with
// the daemon's rights asks nothing.
func TestCheckPrunes(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	writes := fakedynamic.NewSimpleDynamicClient(runtime.NewScheme())
	var asked []string
	writes.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
		attrs, _, _ := unstructured.NestedStringMap(review.Object, "spec", "resourceAttributes")
		asked = append(asked, attrs["verb"]+" "+attrs["resource"]+"."+attrs["group"]+" in "+attrs["namespace"])
		_ = unstructured.SetNestedField(review.Object, attrs["resource"] != "configmaps", "status", "allowed")
		return true, review, nil
	})
	entries := []inventory.Entry{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "old"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "older"},
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "gone"},
		{APIVersion: "example.com/v1", Kind: "Gone", Namespace: "shop", Name: "unserved"},
	}
	a := New(Config{Dynamic: writes, Reads: fakedynamic.NewSimpleDynamicClient(runtime.NewScheme()), Mapper: fixedMapper{mapper}})
	err := a.CheckPrunes(context.Background(), entries)
	var refused *PruneRefusal
	if !errors.As(err, &refused) {
		t.Fatalf("CheckPrunes = %v, want the ConfigMaps refused", err)
	}
	for _, want := range []string{"prune ConfigMap shop/old: the sync's identity may not delete configmaps in namespace shop",
		"prune ConfigMap shop/older: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "gone") {
		t.Errorf("refusal %q names the Deployment, whose delete is allowed", err)
	}
	if got := strings.Join(asked, ", "); got != "delete configmaps. in shop, delete deployments.apps in shop" {
		t.Errorf("asked %q, want each resource once", got)
	}

	asked = nil
	own := New(Config{Dynamic: writes, Mapper: fixedMapper{mapper}})
	if err := own.CheckPrunes(context.Background(), entries); err != nil || len(asked) > 0 {
		t.Errorf("the daemon's own sync: %v after asking %q, want nothing asked", err, asked)
	}
}
