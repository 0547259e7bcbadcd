package apply

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// labelled is an object of the given kind, labelled for sync "prod" unless
// sync is "", with extra labels and, with owned, a controller owner.
func labelled(apiVersion, kind, ns, name, sync string, owned bool, extra ...string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace(ns)
	obj.SetName(name)
	labels := map[string]string{}
	if sync != "" {
		labels[contract.LabelSync] = sync
	}
	for i := 0; i+1 < len(extra); i += 2 {
		labels[extra[i]] = extra[i+1]
	}
	obj.SetLabels(labels)
	if owned {
		yes := true
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: "u", Controller: &yes}})
	}
	return obj
}

// TestRebuild lists a cluster holding the objects a sync applied and the
// ones it must not take for its own: the rebuilt inventory holds exactly
// the former, whatever their kind; with namespaces, only theirs.
func TestRebuild(t *testing.T) {
	objs := []runtime.Object{
		labelled("v1", "ConfigMap", "shop", "app", "prod", false),
		labelled("v1", "ConfigMap", "plimsoll", "plimsoll-sync-prod", "prod", false), // the record itself
		labelled("v1", "ConfigMap", "shop", "theirs", "staging", false),              // another sync's
		labelled("v1", "ConfigMap", "shop", "unlabelled", "", false),
		labelled("v1", "Service", "shop", "web", "prod", false),
		labelled("discovery.k8s.io/v1", "EndpointSlice", "shop", "web-x7k2p", "prod", true), // copies the Service's labels
		labelled("apps/v1", "Deployment", "shop", "web", "prod", false, contract.LabelWorkload, "web"),
		labelled("apps/v1", "Deployment", "shop", "web-blue", "prod", false, contract.LabelWorkload, "web"), // the rollout controller's
		labelled("v1", "ConfigMap", "other", "elsewhere", "prod", false),
		labelled("v1", "Namespace", "", "shop", "prod", false),
		labelled("v1", "Endpoints", "shop", "web", "prod", false), // the endpoints controller copies the Service's labels
	}
	scheme := runtime.NewScheme()
	gvrs := map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}:                                "ConfigMapList",
		{Version: "v1", Resource: "services"}:                                  "ServiceList",
		{Version: "v1", Resource: "namespaces"}:                                "NamespaceList",
		{Version: "v1", Resource: "events"}:                                    "EventList",
		{Group: "apps", Version: "v1", Resource: "deployments"}:                "DeploymentList",
		{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}: "EndpointSliceList",
	}
	dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(scheme, gvrs, objs...)
	list := metav1.Verbs{"get", "list"}
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: list},
			{Name: "services", Kind: "Service", Namespaced: true, Verbs: list},
			{Name: "services/status", Kind: "Service", Namespaced: true, Verbs: list},
			{Name: "namespaces", Kind: "Namespace", Verbs: list},
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: list},
			{Name: "endpoints", Kind: "Endpoints", Namespaced: true, Verbs: list},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: list}}},
		{GroupVersion: "discovery.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "endpointslices", Kind: "EndpointSlice", Namespaced: true, Verbs: list}}},
	}}}
	a := New(Config{Dynamic: dyn, Discovery: disc, SyncName: "prod"})
	record := manifest.Key{Kind: "ConfigMap", Namespace: "plimsoll", Name: "plimsoll-sync-prod"}

	tests := []struct {
		name       string
		namespaces []string
		want       []string
	}{
		{"every namespace", nil, []string{"ConfigMap other/elsewhere", "ConfigMap shop/app", "Service shop/web", "apps/Deployment shop/web", "Namespace shop"}},
		{"namespace shop only", []string{"shop"}, []string{"ConfigMap shop/app", "Service shop/web", "apps/Deployment shop/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Rebuild(context.Background(), tt.namespaces, record)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for key, e := range got.Inventory {
				keys = append(keys, key.String())
				if e.Hash != "" || e.APIVersion == "" {
					t.Errorf("%s: hash %q, apiVersion %q; want no hash and the served version", key, e.Hash, e.APIVersion)
				}
			}
			slices.Sort(keys)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(keys, want) {
				t.Errorf("rebuilt inventory\n %v\nwant\n %v", keys, want)
			}
			if len(got.Unlisted) > 0 {
				t.Errorf("unlisted %v, want none", got.Unlisted)
			}
		})
	}
}
