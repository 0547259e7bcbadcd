package workload

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/strategies"
)

// TraceSet is a StatefulSet or a DaemonSet as a trace shows it: its
// controller's counts, the revisions it goes between, and what holds its
// update back (a canary's partition or OnDelete).
type TraceSet struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Desired   int32  `json:"desired"`
	Ready     int32  `json:"ready"`
	Updated   int32  `json:"updated"`
	Available int32  `json:"available"`
	// UpdateStrategy is RollingUpdate or OnDelete, and Partition a
	// StatefulSet's partition (0 for none).
	UpdateStrategy string `json:"updateStrategy"`
	Partition      int32  `json:"partition,omitempty"`
	// CurrentRevision and UpdateRevision are a StatefulSet's; a
	// DaemonSet's pods show their own.
	CurrentRevision string `json:"currentRevision,omitempty"`
	UpdateRevision  string `json:"updateRevision,omitempty"`
}

// readSetTrace reads the trace of w, a StatefulSet's or a DaemonSet's:
// the object, its pods (each with its revision and node), and for a
// StatefulSet its Service (spec.serviceName).
func readSetTrace(ctx context.Context, client kubernetes.Interface, w Workload) (Trace, error) {
	var obj metav1.Object
	var selector *metav1.LabelSelector
	var service string
	switch w.Kind {
	case KindStatefulSet:
		sts, err := client.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return Trace{}, fmt.Errorf("read StatefulSet %s: %w", w.Name, err)
		}
		obj, selector, service = sts, sts.Spec.Selector, sts.Spec.ServiceName
	default:
		ds, err := client.AppsV1().DaemonSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return Trace{}, fmt.Errorf("read DaemonSet %s: %w", w.Name, err)
		}
		obj, selector = ds, ds.Spec.Selector
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return Trace{}, fmt.Errorf("read the selector of %s %s: %w", w.Kind, w.Name, err)
	}
	pods, err := client.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return Trace{}, fmt.Errorf("list the pods of %s %s: %w", w.Kind, w.Name, err)
	}
	tr := NewSetTrace(w, obj, pointers(pods.Items))
	if service != "" {
		ts, err := traceService(ctx, client, w.Namespace, service)
		if err != nil {
			return Trace{}, err
		}
		tr.Services = append(tr.Services, ts)
	}
	return tr, nil
}

// NewSetTrace is the trace of w, a StatefulSet's or a DaemonSet's, without
// its Service, from the object (a *StatefulSet or a *DaemonSet) and pods,
// of which it keeps those the object owns, sorted by name. It reads only
// what it is given, so a cache's copies will do.
func NewSetTrace(w Workload, obj metav1.Object, pods []*corev1.Pod) Trace {
	tr := Trace{Workload: w, Set: &TraceSet{Kind: w.Kind, Name: obj.GetName()}}
	s := tr.Set
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		st := o.Status
		s.Desired, s.Ready, s.Updated, s.Available = ptrValue(o.Spec.Replicas), st.ReadyReplicas, st.UpdatedReplicas, st.AvailableReplicas
		s.UpdateStrategy, s.CurrentRevision, s.UpdateRevision = string(o.Spec.UpdateStrategy.Type), st.CurrentRevision, st.UpdateRevision
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			s.Partition = ptrValue(ru.Partition)
		}
	case *appsv1.DaemonSet:
		st := o.Status
		s.Desired, s.Ready, s.Updated, s.Available = st.DesiredNumberScheduled, st.NumberReady, st.UpdatedNumberScheduled, st.NumberAvailable
		s.UpdateStrategy = string(o.Spec.UpdateStrategy.Type)
	}
	for _, p := range pods {
		if owner := metav1.GetControllerOf(p); owner == nil || owner.UID != obj.GetUID() {
			continue
		}
		ready, _ := strategies.PodReadiness(p)
		tr.Pods = append(tr.Pods, TracePod{Name: p.Name, Image: firstImage(p.Spec), Ready: ready, Deleting: p.DeletionTimestamp != nil,
			Revision: p.Labels[appsv1.ControllerRevisionHashLabelKey], Node: p.Spec.NodeName})
	}
	slices.SortFunc(tr.Pods, func(a, b TracePod) int { return cmp.Compare(a.Name, b.Name) })
	return tr
}
