package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// fixedMapper maps a fixed set of kinds; a reset changes nothing.
type fixedMapper struct{ *meta.DefaultRESTMapper }

func (fixedMapper) Reset() {}

// pruneCluster is a fake cluster for Prune: the sync "prod" applied
// ConfigMaps app-1 and app-2, Secret creds-2 and Service old in namespace
// shop, all of which left Git; Deployment web (labelled
// plimsoll.dev/workload, Healthy at revision 2) refers to app-2 and
// creds-2, and Deployment legacy (not labelled) to app-1.
func pruneCluster(t *testing.T) (*Applier, *fakedynamic.FakeDynamicClient) {
	t.Helper()
	web := liveDeployment("web", 2, contract.AnnotationPhase, contract.PhaseHealthy)
	legacy := liveDeployment("legacy", 1)
	delete(legacy.Labels, contract.LabelWorkload)
	objs := []runtime.Object{
		labelled("v1", "ConfigMap", "shop", "app-1", "prod", false),
		labelled("v1", "ConfigMap", "shop", "app-2", "prod", false),
		labelled("v1", "Secret", "shop", "creds-2", "prod", false),
		labelled("v1", "Service", "shop", "old", "prod", false),
		toUnstructured(t, web, "Deployment"),
		toUnstructured(t, liveReplicaSet(web, 2, 4), "ReplicaSet"),
		toUnstructured(t, legacy, "Deployment"),
	}
	gvrs := map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}:                 "ConfigMapList",
		{Version: "v1", Resource: "secrets"}:                    "SecretList",
		{Version: "v1", Resource: "services"}:                   "ServiceList",
		{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList",
		{Group: "apps", Version: "v1", Resource: "replicasets"}: "ReplicaSetList",
	}
	dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithKind("Secret"),
		corev1.SchemeGroupVersion.WithKind("Service"), appsv1.SchemeGroupVersion.WithKind("Deployment"),
	} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	return New(Config{Dynamic: dyn, Mapper: fixedMapper{mapper}, SyncName: "prod"}), dyn
}

func toUnstructured(t *testing.T, obj runtime.Object, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("apps/v1")
	u.SetKind(kind)
	return u
}

func entry(apiVersion, kind, name string) inventory.Entry {
	return inventory.Entry{APIVersion: apiVersion, Kind: kind, Namespace: "shop", Name: name, Hash: "h"}
}

// exists reports whether the fake cluster still holds the object.
func exists(t *testing.T, dyn *fakedynamic.FakeDynamicClient, resource, name string) bool {
	t.Helper()
	_, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: resource}).Namespace("shop").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// workloadLists counts the lists of Deployments and ReplicaSets made.
func workloadLists(dyn *fakedynamic.FakeDynamicClient) int {
	n := 0
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "list" && (a.GetResource().Resource == "deployments" || a.GetResource().Resource == "replicasets") {
			n++
		}
	}
	return n
}

// TestPruneWaitsForReferrers prunes what left Git: the ConfigMap and the
// Secret that a workload's Deployment refers to wait (and stay), the
// ConfigMap only an unlabelled Deployment refers to and the Service go.
func TestPruneWaitsForReferrers(t *testing.T) {
	a, dyn := pruneCluster(t)
	res, err := a.Prune(context.Background(), []inventory.Entry{
		entry("v1", "ConfigMap", "app-1"), entry("v1", "ConfigMap", "app-2"),
		entry("v1", "Secret", "creds-2"), entry("v1", "Service", "old"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var deleted, waiting []string
	for _, k := range res.Deleted {
		deleted = append(deleted, k.String())
	}
	for _, w := range res.Waiting {
		waiting = append(waiting, w.String())
	}
	if want := []string{"ConfigMap shop/app-1", "Service shop/old"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	wantWaiting := []string{
		"ConfigMap shop/app-2 (referenced by Deployment web, revision 2 Healthy; template)",
		"Secret shop/creds-2 (referenced by Deployment web, revision 2 Healthy; template)",
	}
	if !slices.Equal(waiting, wantWaiting) {
		t.Errorf("waiting %q, want %q", waiting, wantWaiting)
	}
	for resource, names := range map[string][]string{"configmaps": {"app-2"}, "secrets": {"creds-2"}} {
		for _, name := range names {
			if !exists(t, dyn, resource, name) {
				t.Errorf("%s %s was deleted while it waits", resource, name)
			}
		}
	}
	if exists(t, dyn, "configmaps", "app-1") || exists(t, dyn, "services", "old") {
		t.Error("ConfigMap app-1 or Service old is still there")
	}
	if n := workloadLists(dyn); n != 2 {
		t.Errorf("%d lists of Deployments and ReplicaSets for one namespace, want 2", n)
	}
}

// TestPruneWithoutConfigListsNothing: a prune of no ConfigMap or Secret
// reads no workload.
func TestPruneWithoutConfigListsNothing(t *testing.T) {
	a, dyn := pruneCluster(t)
	if _, err := a.Prune(context.Background(), []inventory.Entry{entry("v1", "Service", "old")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prune(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := workloadLists(dyn); n != 0 {
		t.Errorf("%d lists of Deployments and ReplicaSets, want none", n)
	}
}

// TestPruneUnreadWorkloads: when the workloads cannot be listed, the
// namespace's ConfigMaps and Secrets fail to prune (and stay), the rest is
// pruned.
func TestPruneUnreadWorkloads(t *testing.T) {
	a, dyn := pruneCluster(t)
	dyn.PrependReactor("list", "replicasets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server is currently unable to handle the request")
	})
	res, err := a.Prune(context.Background(), []inventory.Entry{entry("v1", "ConfigMap", "app-1"), entry("v1", "Service", "old")})
	if err == nil {
		t.Fatal("Prune succeeded although the workloads could not be listed")
	}
	if got := fmt.Sprint(res.Failed); got != fmt.Sprint([]inventory.Entry{entry("v1", "ConfigMap", "app-1")}) {
		t.Errorf("failed %s, want ConfigMap app-1", got)
	}
	if want := []manifest.Key{{Kind: "Service", Namespace: "shop", Name: "old"}}; !slices.Equal(res.Deleted, want) {
		t.Errorf("deleted %v, want %v", res.Deleted, want)
	}
	if !exists(t, dyn, "configmaps", "app-1") {
		t.Error("ConfigMap app-1 was deleted without knowing what refers to it")
	}
}
