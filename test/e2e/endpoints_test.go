//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// endpointState is one observed state of a Service's ready endpoints.
type endpointState struct {
	at   time.Time
	pods []string // ready pod names, sorted
}

// endpointWatch follows the EndpointSlices of one Service with an informer,
// whose reflector re-lists and re-watches across watch restarts, and records
// the Service's ready pods after every change to any of its slices, from the
// moment it is created until the test ends.
type endpointWatch struct {
	mu     sync.Mutex
	slices map[string]*discoveryv1.EndpointSlice // by slice name
	states []endpointState
	// pods and rsets are the namespace's pods and ReplicaSets, to tell
	// the Deployment each ready pod belongs to (see record).
	pods, rsets cache.Indexer
}

// watchEndpoints starts following the EndpointSlices of service in ns and
// returns once the initial list has been delivered, so that reads are not
// empty by accident. The watch stops when the test ends.
func watchEndpoints(t *testing.T, ns, service string) *endpointWatch {
	t.Helper()
	w := &endpointWatch{slices: map[string]*discoveryv1.EndpointSlice{}}
	podInformer := coreinformers.NewPodInformer(suite.client, ns, 0, cache.Indexers{})
	rsInformer := appsinformers.NewReplicaSetInformer(suite.client, ns, 0, cache.Indexers{})
	// A pod or ReplicaSet handed over to another Deployment is recorded
	// again as it changes hands, so that each state names the owners of
	// its time (see ownerNote).
	kit.RunInformer(t.Context(), t, podInformer, cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(before, after any) { w.ownerChanged(before, after) },
	}, "pods of "+ns)
	kit.RunInformer(t.Context(), t, rsInformer, cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(before, after any) { w.ownerChanged(before, after) },
	}, "ReplicaSets of "+ns)
	w.pods, w.rsets = podInformer.GetIndexer(), rsInformer.GetIndexer()
	selector := labels.Set{discoveryv1.LabelServiceName: service}.String()
	informer := discoveryinformers.NewFilteredEndpointSliceInformer(suite.client, ns, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = selector })
	kit.RunInformer(t.Context(), t, informer, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj, false) },
		UpdateFunc: func(_, obj any) { w.observe(obj, false) },
		DeleteFunc: func(obj any) { w.observe(obj, true) },
	}, "EndpointSlices of "+service)
	// Record the listed state even when the Service has no slice yet, so
	// that every mark has a state in effect.
	w.mu.Lock()
	w.record()
	w.mu.Unlock()
	return w
}

// observe applies an added, updated or deleted slice (or a deletion
// tombstone) and records the resulting state over all slices.
func (w *endpointWatch) observe(obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if deleted {
		delete(w.slices, s.Name)
	} else {
		w.slices[s.Name] = s
	}
	w.record()
}

// record appends the current ready pods as a new state. w.mu must be held.
func (w *endpointWatch) record() {
	set := map[string]bool{}
	for _, s := range w.slices {
		for _, e := range s.Endpoints {
			ref := e.TargetRef
			if ref == nil || ref.Kind != "Pod" || (e.Conditions.Ready != nil && !*e.Conditions.Ready) {
				continue
			}
			set[ref.Name] = true
		}
	}
	pods := make([]string, 0, len(set))
	for name := range set {
		pods = append(pods, name+w.ownerNote(name))
	}
	slices.Sort(pods)
	w.states = append(w.states, endpointState{at: time.Now(), pods: pods})
}

// ownerChanged records the state again when the controller of a ready
// pod, or of a ReplicaSet, changed from before to after: the state then
// notes the new owner. A ReplicaSet's change is recorded whichever pods
// it runs (a state more, the same pods).
func (w *endpointWatch) ownerChanged(before, after any) {
	b, ok1 := before.(metav1.Object)
	a, ok2 := after.(metav1.Object)
	if !ok1 || !ok2 || controllerName(b) == controllerName(a) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, rs := after.(*appsv1.ReplicaSet); rs || w.states != nil && slices.ContainsFunc(w.states[len(w.states)-1].pods, func(p string) bool {
		name, _, _ := strings.Cut(p, " (")
		return name == a.GetName()
	}) {
		w.record()
	}
}

// controllerName is the name of o's controller, "" for none.
func controllerName(o metav1.Object) string {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return ref.Name
	}
	return ""
}

// ownerNote is what record appends to the name of a ready pod that
// belongs to another Deployment than the one its name says: " (api)" for
// pod api-canary-5f69849ddd-x7k2p, which a canary made and handed over to
// the stable Deployment api, and " (none)" while it, or its ReplicaSet,
// has no owner. A pod's name is its maker's for ever; withPrefix reads
// the note.
func (w *endpointWatch) ownerNote(pod string) string {
	obj, ok, _ := w.pods.GetByKey(w.namespaceOf() + "/" + pod)
	if !ok {
		return ""
	}
	owner := ""
	if ref := metav1.GetControllerOf(obj.(*corev1.Pod)); ref != nil {
		if rs, ok, _ := w.rsets.GetByKey(w.namespaceOf() + "/" + ref.Name); ok {
			owner = "none"
			if d := metav1.GetControllerOf(rs.(metav1.Object)); d != nil {
				owner = d.Name
			}
		}
	} else {
		owner = "none"
	}
	if owner == "" || owner == podDeployment(pod) {
		return ""
	}
	return " (" + owner + ")"
}

// namespaceOf is the namespace of the watched Service's slices, "" before
// any was seen.
func (w *endpointWatch) namespaceOf() string {
	for _, s := range w.slices {
		return s.Namespace
	}
	return ""
}

// podDeployment is the Deployment pod's name says made it:
// "api-canary" for api-canary-5f69849ddd-x7k2p.
func podDeployment(pod string) string {
	parts := strings.Split(pod, "-")
	if len(parts) < 3 {
		return pod
	}
	return strings.Join(parts[:len(parts)-2], "-")
}

// readyNames returns the names of the Service's ready pods as last seen,
// without the notes of ownerNote.
func (w *endpointWatch) readyNames() []string {
	var out []string
	for _, p := range w.ready() {
		name, _, _ := strings.Cut(p, " (")
		out = append(out, name)
	}
	return out
}

// ready returns the names of the Service's ready pods as last seen, sorted.
// An endpoint is ready when conditions.ready is unset or true.
func (w *endpointWatch) ready() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.states[len(w.states)-1].pods)
}

// mark returns a position in the recorded states, for minReadySince and
// history.
func (w *endpointWatch) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.states)
}

// since returns the states from the one in effect at mark onwards. w.mu must
// be held.
func (w *endpointWatch) since(mark int) []endpointState {
	return w.states[min(max(mark-1, 0), len(w.states)-1):]
}

// minReadySince returns the fewest ready endpoints the Service had in any
// state observed since mark, the one in effect at mark included, and the
// ready pod names of the first state with that few.
func (w *endpointWatch) minReadySince(mark int) (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var fewest []string
	for i, s := range w.since(mark) {
		if i == 0 || len(s.pods) < len(fewest) {
			fewest = s.pods
		}
	}
	return len(fewest), slices.Clone(fewest)
}

// fewestSince returns the fewest pods that count picks out of the ready
// pod names of any state since mark, the one in effect at mark included.
func (w *endpointWatch) fewestSince(mark int, count func(pods []string) int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	fewest := -1
	for _, s := range w.since(mark) {
		if n := count(s.pods); fewest < 0 || n < fewest {
			fewest = n
		}
	}
	return fewest
}

// firstSince returns when the first state since mark (the one in effect
// at mark excluded) whose ready pod names satisfy cond took effect; ok is
// false when none did.
func (w *endpointWatch) firstSince(mark int, cond func(pods []string) bool) (at time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.states[min(mark, len(w.states)):] {
		if cond(s.pods) {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// waitReady waits until cond holds for the Service's ready pod names,
// failing the test after the suite's timeout. describe says what was awaited.
func (w *endpointWatch) waitReady(t *testing.T, describe string, cond func(pods []string) bool) {
	t.Helper()
	waitFor(t, describe, func(context.Context) (bool, error) {
		return cond(w.ready()), nil
	})
}

// history returns the states observed since mark, the one in effect at mark
// first, as "15:04:05.000 n=3 [pod-a pod-b pod-c]" lines for t.Log.
func (w *endpointWatch) history(mark int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var lines []string
	for _, s := range w.since(mark) {
		lines = append(lines, fmt.Sprintf("%s n=%d [%s]", s.at.Format("15:04:05.000"), len(s.pods), strings.Join(s.pods, " ")))
	}
	return lines
}

// TestEndpointWatch shows the watcher against the cluster: scaling a
// Deployment of 2 ready pods to 0 is seen as a drop to 0 ready endpoints.
func TestEndpointWatch(t *testing.T) {
	ctx := context.Background()
	ns := kit.NewNamespace(t, suite.client, "")
	appLabels := map[string]string{"app": "ep"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ep"},
		Spec: corev1.ServiceSpec{
			Selector: appLabels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := suite.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service: %v", err)
	}
	w := watchEndpoints(t, ns, "ep")

	d := webDeployment(2, goodImage)
	d.Name = "ep"
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: appLabels}
	d.Spec.Template.Labels = appLabels
	if _, err := suite.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	w.waitReady(t, "2 ready endpoints", func(pods []string) bool { return len(pods) == 2 })

	mark := w.mark()
	_, err := suite.client.AppsV1().Deployments(ns).Patch(ctx, "ep", types.MergePatchType,
		[]byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("scale deployment ep to 0: %v", err)
	}
	w.waitReady(t, "0 ready endpoints", func(pods []string) bool { return len(pods) == 0 })

	history := w.history(mark)
	if n, pods := w.minReadySince(mark); n != 0 {
		t.Errorf("minReadySince = %d %v, want 0; history:\n%s", n, pods, strings.Join(history, "\n"))
	}
	if len(history) < 2 {
		t.Errorf("history since mark = %q, want the state at mark and at least one change", history)
	}
	t.Logf("history since mark:\n%s", strings.Join(history, "\n"))
}
