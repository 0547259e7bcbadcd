//go:build bench

package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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
	helmChartGVR     = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
	kustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	helmReleaseGVR   = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
)

// fluxDriver is Flux's source-controller with its kustomize-controller or
// its helm-controller, run out of cluster: a GitRepository polls the
// served repository, and a Kustomization applies what it fetched, or a
// HelmRelease installs the chart it holds.
type fluxDriver struct {
	source, kustomize, helm string // the binaries
	ports                   [4]int // artifact server, source health, kustomize health, helm health
}

// newFluxDriver builds Flux's controllers into the tools cache, once
// (hack/cluster flux), and returns them with four free ports.
func newFluxDriver(t *testing.T, root string) *fluxDriver {
	flux := strings.Fields(runOutput(t, filepath.Join(root, "hack", "cluster"), "flux"))
	if len(flux) != 3 {
		t.Fatalf("hack/cluster flux printed %q, not the paths of three controllers", flux)
	}
	return &fluxDriver{source: flux[0], kustomize: flux[1], helm: flux[2], ports: [4]int(freePorts(t, 4))}
}

// fluxArgs are the flags every Flux controller of the benchmark gets:
// interval jitter is off, as plimsoll has none.
var fluxArgs = []string{"--enable-leader-election=false", "--metrics-addr=0", "--interval-jitter-percentage=0", "--log-level=info"}

// start starts source-controller and kustomize-controller, talking to the
// API server through kubeconfig, and creates in namespace ns a
// GitRepository following branch of the repository at url and a
// Kustomization applying all of it; with targetNamespace set, objects
// without a namespace go there. Both poll (the GitRepository) and correct
// drift (the Kustomization) every pollInterval, as `plimsoll run
// --interval` does both. w learns of each commit the Kustomization
// applied.
func (f *fluxDriver) start(ctx context.Context, t *testing.T, cfg *rest.Config, kubeconfig, work, logPrefix, url, branch, ns, targetNamespace string, w *healthWatch) procGroup {
	procs := f.startControllers(t, kubeconfig, work, logPrefix, ns)
	createGitRepository(ctx, t, cfg, url, branch, ns)
	watchKustomization(ctx, t, cfg, w, ns)
	spec := map[string]any{
		"interval": pollInterval, "timeout": "30m", "path": "./", "prune": true,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": syncName},
	}
	if targetNamespace != "" {
		spec["targetNamespace"] = targetNamespace
	}
	create(ctx, t, cfg, kustomizationGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": syncName, "namespace": ns},
		"spec":     spec,
	}})
	return procs
}

// startHelm starts source-controller and helm-controller, talking to the
// API server through kubeconfig, and creates in namespace ns a
// GitRepository following branch of the repository at url and a
// HelmRelease of the chart at chartPath in it, installed in ns. The
// HelmChart is built again for every commit (reconcileStrategy Revision:
// with the default, a change of a template that keeps the chart's version
// is never deployed), which then versions it <version>+<12 hex digits of
// the commit>. Everything is looked at every pollInterval. w learns of
// each commit whose chart the HelmRelease deployed, commits being those
// the repository may push.
func (f *fluxDriver) startHelm(ctx context.Context, t *testing.T, cfg *rest.Config, kubeconfig, work, logPrefix, url, branch, ns, chartPath string, commits []string, w *healthWatch) procGroup {
	src := f.startSource(t, kubeconfig, work, logPrefix, ns)
	createGitRepository(ctx, t, cfg, url, branch, ns)
	hc := kit.Start(t, kit.Process{Bin: f.helm, Log: logPrefix + "-helm-controller.log", Env: fluxEnv(kubeconfig, ns), Args: append(slices.Clone(fluxArgs),
		"--health-addr=127.0.0.1:"+strconv.Itoa(f.ports[3]))})
	procs := procGroup{src, hc}

	watchHelmRelease(ctx, t, cfg, w, ns, commits)
	create(ctx, t, cfg, helmReleaseGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": syncName, "namespace": ns},
		"spec": map[string]any{
			"interval": pollInterval, "timeout": "30m",
			"chart": map[string]any{"spec": map[string]any{
				"chart": chartPath, "reconcileStrategy": "Revision", "interval": pollInterval,
				"sourceRef": map[string]any{"kind": "GitRepository", "name": syncName},
			}},
		},
	}})
	return procs
}

// startControllers starts source-controller and kustomize-controller,
// talking to the API server through kubeconfig, with their runtime
// namespace ns, their artifacts under work, and extra flags for
// kustomize-controller.
func (f *fluxDriver) startControllers(t *testing.T, kubeconfig, work, logPrefix, ns string, kustomizeFlags ...string) procGroup {
	src := f.startSource(t, kubeconfig, work, logPrefix, ns)
	kus := kit.Start(t, kit.Process{Bin: f.kustomize, Log: logPrefix + "-kustomize-controller.log", Env: fluxEnv(kubeconfig, ns), Args: append(append(slices.Clone(fluxArgs),
		"--health-addr=127.0.0.1:"+strconv.Itoa(f.ports[2])), kustomizeFlags...)})
	return procGroup{src, kus}
}

// startSource starts source-controller, talking to the API server through
// kubeconfig, with its runtime namespace ns and its artifacts under work.
func (f *fluxDriver) startSource(t *testing.T, kubeconfig, work, logPrefix, ns string) *kit.Daemon {
	storage := "127.0.0.1:" + strconv.Itoa(f.ports[0])
	// source-controller wants its storage directory to exist.
	if err := os.MkdirAll(filepath.Join(work, "artifacts"), 0o755); err != nil {
		t.Fatalf("create the artifact storage: %v", err)
	}
	src := kit.Start(t, kit.Process{Bin: f.source, Log: logPrefix + "-source-controller.log", Env: fluxEnv(kubeconfig, ns), Args: append(slices.Clone(fluxArgs),
		"--storage-path="+filepath.Join(work, "artifacts"), "--storage-addr="+storage, "--storage-adv-addr="+storage,
		"--health-addr=127.0.0.1:"+strconv.Itoa(f.ports[1]))})
	return src
}

// createGitRepository creates in namespace ns the GitRepository syncName,
// following branch of the repository at url every pollInterval.
func createGitRepository(ctx context.Context, t *testing.T, cfg *rest.Config, url, branch, ns string) {
	create(ctx, t, cfg, gitRepositoryGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": syncName, "namespace": ns},
		"spec": map[string]any{
			"interval": pollInterval, "timeout": "60s", "url": url,
			"ref": map[string]any{"branch": branch},
		},
	}})
}

// fluxEnv is the environment of a Flux controller: the API server through
// kubeconfig, and ns as the namespace it runs in.
func fluxEnv(kubeconfig, ns string) []string {
	return []string{"KUBECONFIG=" + kubeconfig, "RUNTIME_NAMESPACE=" + ns}
}

// create creates obj, a resource of gvr, in its namespace.
func create(ctx context.Context, t *testing.T, cfg *rest.Config, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	dyn := dynamic.NewForConfigOrDie(cfg)
	if _, err := dyn.Resource(gvr).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
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

// watchHelmRelease feeds w each of commits whose chart the HelmRelease of
// namespace ns deployed: when its Ready condition is True and the latest
// release of its history is deployed from chart version
// <version>+<the commit's first 12 hex digits>.
func watchHelmRelease(ctx context.Context, t *testing.T, cfg *rest.Config, w *healthWatch, ns string, commits []string) {
	dyn := dynamic.NewForConfigOrDie(cfg)
	inf := dynamicinformer.NewFilteredDynamicInformer(dyn, helmReleaseGVR, ns, 0, cache.Indexers{}, nil).Informer()
	observe := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || !conditionTrue(u, "Ready") {
			return
		}
		history, _, _ := unstructured.NestedSlice(u.Object, "status", "history")
		if len(history) == 0 {
			return
		}
		latest, _ := history[0].(map[string]any)
		version, _ := latest["chartVersion"].(string)
		_, built, ok := strings.Cut(version, "+")
		if !ok || latest["status"] != "deployed" {
			return
		}
		for _, c := range commits {
			if strings.HasPrefix(c, built) {
				w.markAppliedNow(c)
			}
		}
	}
	kit.RunInformer(ctx, t, inf, kit.OnAddOrUpdate(observe), "the HelmReleases of "+ns)
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
	for _, gvr := range []schema.GroupVersionResource{kustomizationGVR, helmReleaseGVR, helmChartGVR, gitRepositoryGVR} {
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
