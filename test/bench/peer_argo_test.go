//go:build bench

package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// Argo Rollouts as the benchmark runs it.
const (
	// argoNamespace is the controller's own namespace (POD_NAMESPACE),
	// where it looks for its optional configuration.
	argoNamespace = "argo-rollouts"
	// argoRevision is the annotation Argo Rollouts numbers a Rollout's
	// pod templates with, 1, 2, ...
	argoRevision = "rollout.argoproj.io/revision"
)

// rolloutGVR is Argo Rollouts' Rollout resource.
var rolloutGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}

// argoDriver is the Argo Rollouts controller, handed Rollouts equivalent
// to plimsoll's workloads by `kubectl apply --server-side`.
type argoDriver struct {
	bin     string // the Argo Rollouts controller (cmd/rollouts-controller)
	kubectl string
	admin   string // the kubeconfig kubectl applies with: a user's, not the controller's
	ports   [2]int // metrics and health
	dir     string // the manifests, one file per workload
	n       int
	applies int
}

func (a *argoDriver) watch(ctx context.Context, t *testing.T, cfg *rest.Config, w *healthWatch, ss []strategy) {
	dyn := dynamic.NewForConfigOrDie(cfg)
	for _, s := range ss {
		inf := dynamicinformer.NewFilteredDynamicInformer(dyn, rolloutGVR, s.namespace, 0, cache.Indexers{}, nil).Informer()
		kit.RunInformer(ctx, t, inf, kit.OnAddOrUpdate(w.observeArgo), "the Rollouts of "+s.namespace)
	}
}

// observeArgo records the status of a Rollout that changed. Argo Rollouts
// calls a Rollout Healthy once its stable ReplicaSet is the current pod
// template's and fully available, which for blue-green is as soon as the
// active Service has swapped, the old ReplicaSet still up for its
// scale-down delay. plimsoll calls a workload Healthy once the old pods
// are gone (the old color scaled down, the canary Deployment at zero),
// so a Rollout is taken as done only when, besides, it counts no pod but
// its replicas of the current template, all available; and only when its
// status speaks of the current generation and template, so that a phase
// left from the revision before does not count.
func (w *healthWatch) observeArgo(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	stable, _, _ := unstructured.NestedString(u.Object, "status", "stableRS")
	current, _, _ := unstructured.NestedString(u.Object, "status", "currentPodHash")
	observed, _, _ := unstructured.NestedString(u.Object, "status", "observedGeneration")
	want, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	var pods [3]int64
	for i, field := range []string{"replicas", "updatedReplicas", "availableReplicas"} {
		pods[i], _, _ = unstructured.NestedInt64(u.Object, "status", field)
	}
	if observed != strconv.FormatInt(u.GetGeneration(), 10) || stable == "" || stable != current || pods != [3]int64{want, want, want} {
		phase = "Progressing"
	}
	rev, _ := strconv.Atoi(u.GetAnnotations()[argoRevision])
	w.record(u.GetNamespace()+"/"+u.GetName(), phase, rev)
}

func (a *argoDriver) begin(t *testing.T, kubeconfig, work, logPath string, n int, ss []strategy) (procGroup, string) {
	a.dir, a.n = filepath.Join(work, "rollouts"), n
	// The client limits are plimsoll's (cmd/plimsoll: 1000 QPS, burst
	// 2000) rather than Argo Rollouts' defaults (40, 80), so that neither
	// waits on its own throttle.
	d := kit.Start(t, kit.Process{Bin: a.bin, Log: logPath, Env: []string{"POD_NAMESPACE=" + argoNamespace}, Args: []string{
		"--kubeconfig", kubeconfig, "--leader-elect=false", "--qps", "1000", "--burst", "2000",
		"--metricsPort", strconv.Itoa(a.ports[0]), "--healthzPort", strconv.Itoa(a.ports[1])}})
	for _, s := range ss {
		a.write(t, s, imageV1)
	}
	return procGroup{d}, a.apply(t, nil, a.dir)
}

// roll applies the Rollouts of s alone, at image: their Services do not
// change, and Argo Rollouts owns the selector of the blue-green ones (it
// adds the pod template hash), which applying them again would fight
// over. plimsoll's commit changes only the Deployments, too.
func (a *argoDriver) roll(t *testing.T, s strategy, image string, w *healthWatch) string {
	a.write(t, s, image)
	return a.apply(t, w, filepath.Join(a.dir, "rollouts", s.name))
}

// apply applies the manifests under dir, as a user would, and records when
// kubectl returned; with w nil the caller records it.
func (a *argoDriver) apply(t *testing.T, w *healthWatch, dir string) string {
	a.applies++
	key := fmt.Sprintf("kubectl apply %d", a.applies)
	runOutput(t, a.kubectl, "--kubeconfig", a.admin, "apply", "--server-side", "--field-manager", "bench",
		"--recursive", "-f", dir, "-o", "name")
	if w != nil {
		w.markApplied(key, time.Now())
	}
	return key
}

// write writes the Rollout and the Service of every workload of s, at
// image, under rollouts/<strategy> and services/<strategy>.
func (a *argoDriver) write(t *testing.T, s strategy, image string) {
	for i := range a.n {
		name := fmt.Sprintf("%s-%04d", s.prefix, i)
		writeFile(t, a.dir, filepath.Join("rollouts", s.name, name+".yaml"), argoRollout(t, s, name, image))
		writeFile(t, a.dir, filepath.Join("services", s.name, name+".yaml"), serviceManifest(name, s.namespace))
	}
}

// argoRollout is the Rollout equivalent to plimsoll's workloadManifest:
// the same pods (and, apart, the same Service); canary steps translated
// from canarySteps (basic canary: Argo Rollouts sets the weight by
// replica counts, with no traffic router, as plimsoll does by labels);
// blue-green with auto-promotion, scaleDownDelay, and no preview Service.
func argoRollout(t *testing.T, s strategy, name, image string) string {
	strat := "    canary:\n      steps:\n" + argoSteps(t, canarySteps)
	if s == blueGreen {
		delay, err := time.ParseDuration(scaleDownDelay)
		if err != nil {
			t.Fatalf("parse the scale-down delay %q: %v", scaleDownDelay, err)
		}
		strat = fmt.Sprintf("    blueGreen:\n      activeService: %s\n      autoPromotionEnabled: true\n      scaleDownDelaySeconds: %d\n",
			name, int(delay.Seconds()))
	}
	return fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata:\n  name: %[1]s\n  namespace: %[2]s\n  labels:\n    app: %[1]s\n",
		name, s.namespace) + workloadSpec(name, image, s.replicas) + "  strategy:\n" + strat
}

// argoSteps translates plimsoll's canary steps ("25%, pause 10s, 100%")
// into Argo Rollouts' (setWeight: 25, pause: {duration: 10s}, ...).
func argoSteps(t *testing.T, steps string) string {
	var b strings.Builder
	for step := range strings.SplitSeq(steps, ",") {
		step = strings.TrimSpace(step)
		switch {
		case strings.HasSuffix(step, "%"):
			fmt.Fprintf(&b, "      - setWeight: %s\n", strings.TrimSuffix(step, "%"))
		case step == "pause":
			b.WriteString("      - pause: {}\n")
		case strings.HasPrefix(step, "pause "):
			fmt.Fprintf(&b, "      - pause: {duration: %s}\n", strings.TrimSpace(strings.TrimPrefix(step, "pause ")))
		default:
			t.Fatalf("translate the canary step %q for Argo Rollouts", step)
		}
	}
	return b.String()
}
