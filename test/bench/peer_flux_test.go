//go:build bench

package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// Flux's objects, as the benchmark names them.
var (
	gitRepositoryGVR = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	kustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
)

// fluxDriver is Flux's source-controller and kustomize-controller, run out
// of cluster: a GitRepository polls the served repository and a
// Kustomization applies what it fetched.
type fluxDriver struct {
	source, kustomize string // the binaries
	ports             [4]int // artifact server, source health, kustomize health, spare
}

// start starts both controllers, talking to the API server through
// kubeconfig, and creates in namespace ns a GitRepository following branch
// of the repository at url and a Kustomization applying all of it; with
// targetNamespace set, objects without a namespace go there. Both poll
// (the GitRepository) and correct drift (the Kustomization) every
// pollInterval, as `plimsoll run --interval` does both; interval jitter is
// off, as plimsoll has none. w learns of each commit the Kustomization
// applied.
func (f *fluxDriver) start(ctx context.Context, t *testing.T, cfg *rest.Config, kubeconfig, work, logPrefix, url, branch, ns, targetNamespace string, w *healthWatch) procGroup {
	env := []string{"KUBECONFIG=" + kubeconfig, "RUNTIME_NAMESPACE=" + ns}
	common := []string{"--enable-leader-election=false", "--metrics-addr=0", "--interval-jitter-percentage=0", "--log-level=info"}
	storage := "127.0.0.1:" + strconv.Itoa(f.ports[0])
	// source-controller wants its storage directory to exist.
	if err := os.MkdirAll(filepath.Join(work, "artifacts"), 0o755); err != nil {
		t.Fatalf("create the artifact storage: %v", err)
	}
	src := kit.Start(t, kit.Process{Bin: f.source, Log: logPrefix + "-source-controller.log", Env: env, Args: append(common,
		"--storage-path="+filepath.Join(work, "artifacts"), "--storage-addr="+storage, "--storage-adv-addr="+storage,
		"--health-addr=127.0.0.1:"+strconv.Itoa(f.ports[1]))})
	kus := kit.Start(t, kit.Process{Bin: f.kustomize, Log: logPrefix + "-kustomize-controller.log", Env: env, Args: append(common,
		"--health-addr=127.0.0.1:"+strconv.Itoa(f.ports[2]))})
	procs := procGroup{src, kus}

	watchKustomization(ctx, t, cfg, w, ns)
	dyn := dynamic.NewForConfigOrDie(cfg)
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": syncName, "namespace": ns},
		"spec": map[string]any{
			"interval": pollInterval, "timeout": "60s", "url": url,
			"ref": map[string]any{"branch": branch},
		},
	}}
	spec := map[string]any{
		"interval": pollInterval, "timeout": "30m", "path": "./", "prune": true,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": syncName},
	}
	if targetNamespace != "" {
		spec["targetNamespace"] = targetNamespace
	}
	kustomization := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": syncName, "namespace": ns},
		"spec":     spec,
	}}
	for gvr, obj := range map[schema.GroupVersionResource]*unstructured.Unstructured{gitRepositoryGVR: repo, kustomizationGVR: kustomization} {
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s/%s: %v", obj.GetKind(), ns, syncName, err)
		}
	}
	return procs
}

// watchKustomization feeds w the commit of every revision the
// Kustomization of namespace ns applied: when its Ready condition is True
// and its lastAppliedRevision ("<branch>@sha1:<commit>") names the commit.
func watchKustomization(ctx context.Context, t *testing.T, cfg *rest.Config, w *healthWatch, ns string) {
	dyn := dynamic.NewForConfigOrDie(cfg)
	inf := dynamicinformer.NewFilteredDynamicInformer(dyn, kustomizationGVR, ns, 0, cache.Indexers{}, nil).Informer()
	observe := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		rev, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		_, commit, ok := strings.Cut(rev, "@sha1:")
		if ok && conditionTrue(u, "Ready") {
			w.markAppliedNow(commit)
		}
	}
	kit.RunInformer(ctx, t, inf, kit.OnAddOrUpdate(observe), "the Kustomizations of "+ns)
}

// conditionTrue tells whether u's status has condition typ with status
// True.
func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// watchNative feeds w the phase of every Deployment of ss as the
// Deployment controller alone tells it, for workloads no rollout
// controller annotates: Healthy once the status speaks of the current
// generation and every replica is updated and available, at the revision
// its image names (imageV1 is 1, imageV2 is 2).
func watchNative(ctx context.Context, t *testing.T, client kubernetes.Interface, w *healthWatch, ss []strategy) {
	for _, s := range ss {
		lw := cache.NewListWatchFromClient(client.AppsV1().RESTClient(), "deployments", s.namespace, fields.Everything())
		inf := cache.NewSharedIndexInformer(lw, &appsv1.Deployment{}, 0, cache.Indexers{})
		kit.RunInformer(ctx, t, inf, kit.OnAddOrUpdate(w.observeNative), "the Deployments of "+s.namespace)
	}
}

func (w *healthWatch) observeNative(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || len(d.Spec.Template.Spec.Containers) == 0 {
		return
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	phase := "Progressing"
	if st.ObservedGeneration >= d.Generation && st.Replicas == want && st.UpdatedReplicas == want && st.AvailableReplicas == want {
		phase = phaseHealthy
	}
	rev := map[string]int{imageV1: 1, imageV2: 2}[d.Spec.Template.Spec.Containers[0].Image]
	w.record(d.Namespace+"/"+d.Name, phase, rev)
}

// dropFluxFinalizers removes the finalizers of Flux's objects in ns, once
// the controllers that would act on them are stopped, so that the
// namespace can be deleted without their garbage collection (of objects
// the namespace's deletion removes anyway).
func dropFluxFinalizers(ctx context.Context, t *testing.T, cfg *rest.Config, ns string) {
	dyn := dynamic.NewForConfigOrDie(cfg)
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	for _, gvr := range []schema.GroupVersionResource{kustomizationGVR, gitRepositoryGVR} {
		list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list the %s of %s: %v", gvr.Resource, ns, err)
		}
		for _, u := range list.Items {
			if _, err := dyn.Resource(gvr).Namespace(ns).Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatalf("drop the finalizers of %s %s/%s: %v", u.GetKind(), ns, u.GetName(), err)
			}
		}
	}
}
