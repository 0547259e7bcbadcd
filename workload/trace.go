package workload

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// Trace is what `plimsoll trace` shows of a workload at one moment.
type Trace struct {
	Workload    Workload          `json:"workload"`
	Deployments []TraceDeployment `json:"deployments"`
	// Set is the StatefulSet or the DaemonSet of such a workload, nil for
	// a workload of Deployments.
	Set      *TraceSet      `json:"set,omitempty"`
	Pods     []TracePod     `json:"pods"`
	Services []TraceService `json:"services"`
}

// TraceDeployment is one Deployment of a workload with its ReplicaSets.
type TraceDeployment struct {
	Name      string `json:"name"`
	Role      string `json:"role"`
	Desired   int32  `json:"desired"`
	Ready     int32  `json:"ready"`
	Updated   int32  `json:"updated"`
	Available int32  `json:"available"`
	// ReplicaSets are those with pods or asking for some.
	ReplicaSets []TraceReplicaSet `json:"replicaSets"`
}

// TraceReplicaSet is one ReplicaSet of a Deployment.
type TraceReplicaSet struct {
	Name    string `json:"name"`
	Image   string `json:"image"`
	Desired int32  `json:"desired"`
	Ready   int32  `json:"ready"`
}

// TracePod is one pod of a workload.
type TracePod struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	Ready bool   `json:"ready"`
	// Serving is the canary's plimsoll.dev/serving label.
	Serving  bool `json:"serving"`
	Deleting bool `json:"deleting"`
	// ReplicaSet is the ReplicaSet that owns the pod, "" for none.
	ReplicaSet string `json:"replicaSet,omitempty"`
	// Revision is a StatefulSet's or a DaemonSet's pod's
	// controller-revision-hash, and Node the node it runs on.
	Revision string `json:"revision,omitempty"`
	Node     string `json:"node,omitempty"`
}

// missingService is the selector a trace shows for a Service that does not
// exist.
const missingService = "(no such Service)"

// TraceService is a Service the workload's strategy steers, with the pods
// its EndpointSlices list as ready.
type TraceService struct {
	Name      string   `json:"name"`
	Selector  string   `json:"selector"`
	ReadyPods []string `json:"readyPods"`
}

// ReadTrace reads workload name of namespace ns as `plimsoll trace` shows
// it: its Deployments, their ReplicaSets, its pods, and the Services its
// annotations name, each list sorted by name; or its StatefulSet or
// DaemonSet and their pods (see NewSetTrace). An error wraps ErrNotFound
// when the workload has none of them.
func ReadTrace(ctx context.Context, client kubernetes.Interface, ns, name string) (Trace, error) {
	w, err := find(ctx, client, ns, name)
	if err != nil {
		return Trace{}, err
	}
	if w.Kind != "" {
		return readSetTrace(ctx, client, w)
	}
	selector := metav1.ListOptions{LabelSelector: contract.LabelWorkload + "=" + name}
	deploys, err := client.AppsV1().Deployments(ns).List(ctx, selector)
	if err != nil {
		return Trace{}, fmt.Errorf("list the Deployments of %s: %w", name, err)
	}
	rsets, err := client.AppsV1().ReplicaSets(ns).List(ctx, selector)
	if err != nil {
		return Trace{}, fmt.Errorf("list the ReplicaSets of %s: %w", name, err)
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, selector)
	if err != nil {
		return Trace{}, fmt.Errorf("list the pods of %s: %w", name, err)
	}
	ds := pointers(deploys.Items)
	tr := NewTrace(w, ds, pointers(rsets.Items), pointers(pods.Items))
	for _, svc := range ServiceNames(ds) {
		ts, err := traceService(ctx, client, ns, svc)
		if err != nil {
			return Trace{}, err
		}
		tr.Services = append(tr.Services, ts)
	}
	return tr, nil
}

// NewTrace is the trace of workload w without its Services, from the
// Deployments, ReplicaSets and pods labelled with its name, each list
// sorted by name; the caller adds the Services (see ServiceNames and
// NewTraceService). It reads only what it is given, so a cache's copies
// will do.
func NewTrace(w Workload, deploys []*appsv1.Deployment, rsets []*appsv1.ReplicaSet, pods []*corev1.Pod) Trace {
	tr := Trace{Workload: w}
	for _, d := range deploys {
		td := TraceDeployment{Name: d.Name, Role: d.Annotations[contract.AnnotationRole], Desired: ptrValue(d.Spec.Replicas),
			Ready: d.Status.ReadyReplicas, Updated: d.Status.UpdatedReplicas, Available: d.Status.AvailableReplicas}
		for _, rs := range rsets {
			owner := metav1.GetControllerOf(rs)
			if owner == nil || owner.UID != d.UID || (ptrValue(rs.Spec.Replicas) == 0 && rs.Status.Replicas == 0) {
				continue
			}
			td.ReplicaSets = append(td.ReplicaSets, TraceReplicaSet{Name: rs.Name, Image: firstImage(rs.Spec.Template.Spec),
				Desired: ptrValue(rs.Spec.Replicas), Ready: rs.Status.ReadyReplicas})
		}
		slices.SortFunc(td.ReplicaSets, func(a, b TraceReplicaSet) int { return cmp.Compare(a.Name, b.Name) })
		tr.Deployments = append(tr.Deployments, td)
	}
	slices.SortFunc(tr.Deployments, func(a, b TraceDeployment) int { return cmp.Compare(a.Name, b.Name) })
	for _, p := range pods {
		ready, _ := strategies.PodReadiness(p)
		tp := TracePod{Name: p.Name, Image: firstImage(p.Spec), Ready: ready,
			Serving: p.Labels[contract.LabelServing] == "true", Deleting: p.DeletionTimestamp != nil}
		if owner := metav1.GetControllerOf(p); owner != nil && owner.Kind == "ReplicaSet" {
			tp.ReplicaSet = owner.Name
		}
		tr.Pods = append(tr.Pods, tp)
	}
	slices.SortFunc(tr.Pods, func(a, b TracePod) int { return cmp.Compare(a.Name, b.Name) })
	return tr
}

// ServiceNames are the Services the annotations of a workload's
// Deployments name (active, preview, canary), sorted, each once.
func ServiceNames(deploys []*appsv1.Deployment) []string {
	services := map[string]bool{}
	for _, d := range deploys {
		for _, key := range []string{contract.AnnotationActiveService, contract.AnnotationPreviewService, contract.AnnotationService} {
			if svc := d.Annotations[key]; svc != "" {
				services[svc] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(services))
}

// NewTraceService is Service name as a trace shows it: its selector and
// the pods its EndpointSlices hold as ready; a nil svc shows as missing.
func NewTraceService(name string, svc *corev1.Service, endpointSlices []*discoveryv1.EndpointSlice) TraceService {
	ts := TraceService{Name: name}
	if svc == nil {
		ts.Selector = missingService
		return ts
	}
	ts.Selector = labels.Set(svc.Spec.Selector).String()
	ts.ReadyPods = strategies.ReadyPods(endpointSlices)
	return ts
}

// Done reports whether the rollout has ended: Healthy or Degraded.
func (t Trace) Done() bool {
	return t.Workload.Phase == contract.PhaseHealthy || t.Workload.Phase == contract.PhaseDegraded
}

// traceService reads Service name's selector and ready endpoints; a
// missing Service shows as such.
func traceService(ctx context.Context, client kubernetes.Interface, ns, name string) (TraceService, error) {
	svc, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return NewTraceService(name, nil, nil), nil
	}
	if err != nil {
		return TraceService{Name: name}, fmt.Errorf("read Service %s: %w", name, err)
	}
	list, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{discoveryv1.LabelServiceName: name}.String(),
	})
	if err != nil {
		return TraceService{Name: name}, fmt.Errorf("read the endpoints of Service %s: %w", name, err)
	}
	return NewTraceService(name, svc, pointers(list.Items)), nil
}

// pointers is a pointer to each item of a list, in order.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// ptrValue is *p, or 0 when p is nil.
func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// firstImage is the image of the first container of spec.
func firstImage(spec corev1.PodSpec) string {
	if len(spec.Containers) == 0 {
		return ""
	}
	return spec.Containers[0].Image
}
