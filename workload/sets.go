package workload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// The kinds of workload besides Deployments, in Workload.Kind.
const (
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
)

// listSets reads the StatefulSets and DaemonSets of namespace ns that
// selector selects as workloads: their own annotations are their status
// and strategy (rolling or canary). One the reader may
// not list is left out, as a kind it cannot see.
func listSets(ctx context.Context, client kubernetes.Interface, ns, selector string) ([]Workload, error) {
	opts := metav1.ListOptions{LabelSelector: selector}
	var out []Workload
	sts, err := client.AppsV1().StatefulSets(ns).List(ctx, opts)
	switch {
	case err == nil:
		for i := range sts.Items {
			out = append(out, DescribeSet(KindStatefulSet, &sts.Items[i]))
		}
	case !apierrors.IsForbidden(err):
		return nil, fmt.Errorf("list the StatefulSets: %w", err)
	}
	ds, err := client.AppsV1().DaemonSets(ns).List(ctx, opts)
	switch {
	case err == nil:
		for i := range ds.Items {
			out = append(out, DescribeSet(KindDaemonSet, &ds.Items[i]))
		}
	case !apierrors.IsForbidden(err):
		return nil, fmt.Errorf("list the DaemonSets: %w", err)
	}
	return out, nil
}

// DescribeSet makes a Workload of a StatefulSet or a DaemonSet (kind is
// KindStatefulSet or KindDaemonSet) from its annotations. It reads only
// the object given, so a cache's copy will do.
func DescribeSet(kind string, obj metav1.Object) Workload {
	st, _ := strategies.ReadStatus(obj.GetAnnotations())
	strategy := contract.StrategyRolling
	if obj.GetAnnotations()[contract.AnnotationStrategy] == contract.StrategyCanary {
		strategy = contract.StrategyCanary
	}
	return Workload{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Strategy: strategy,
		Primary: obj.GetName(), Phase: string(st.Phase), Revision: st.Revision, Commit: st.Commit, Message: st.Message,
		TemplateHash: st.Hash, FailedHash: st.FailedHash, Sync: obj.GetLabels()[contract.LabelSync]}
}

// key is the workload's key among a sync record's templates and a wait's
// workloads: namespace/name for a Deployment's, kind/namespace/name for
// a StatefulSet or a DaemonSet (see contract.SetTemplateKey).
func (w Workload) key() string {
	if w.Kind != "" {
		return contract.SetTemplateKey(w.Kind, w.Namespace, w.Name)
	}
	return w.Namespace + "/" + w.Name
}

// named keeps the workloads whose name is one of names.
func named(ws []Workload, names []string) []Workload {
	return slices.DeleteFunc(ws, func(w Workload) bool { return !slices.Contains(names, w.Name) })
}

// find reads workload name of namespace ns: its Deployments' (see Get),
// else its StatefulSet's or DaemonSet's (see getSet).
func find(ctx context.Context, client kubernetes.Interface, ns, name string) (Workload, error) {
	w, err := Get(ctx, client, ns, name)
	if errors.Is(err, ErrNotFound) {
		return getSet(ctx, client, ns, name)
	}
	return w, err
}

// getSet reads the StatefulSet or, failing that, the DaemonSet name of
// namespace ns that a sync applied, as a workload; an error wrapping
// ErrNotFound when neither is.
func getSet(ctx context.Context, client kubernetes.Interface, ns, name string) (Workload, error) {
	sts, err := client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil && sts.Labels[contract.LabelSync] != "" {
		return DescribeSet(KindStatefulSet, sts), nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return Workload{}, fmt.Errorf("read StatefulSet %s: %w", name, err)
	}
	ds, err := client.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil && ds.Labels[contract.LabelSync] != "" {
		return DescribeSet(KindDaemonSet, ds), nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return Workload{}, fmt.Errorf("read DaemonSet %s: %w", name, err)
	}
	return Workload{}, fmt.Errorf("%w: no Deployment, StatefulSet or DaemonSet of workload %q in namespace %s", ErrNotFound, name, ns)
}

// annotationsOf reads the annotations of the object of w that takes
// commands: its primary Deployment, or the set itself.
func annotationsOf(ctx context.Context, client kubernetes.Interface, w Workload) (map[string]string, error) {
	var obj metav1.Object
	var err error
	switch w.Kind {
	case KindStatefulSet:
		obj, err = client.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.Primary, metav1.GetOptions{})
	case KindDaemonSet:
		obj, err = client.AppsV1().DaemonSets(w.Namespace).Get(ctx, w.Primary, metav1.GetOptions{})
	default:
		obj, err = client.AppsV1().Deployments(w.Namespace).Get(ctx, w.Primary, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	return obj.GetAnnotations(), nil
}

// patchCommand sets plimsoll.dev/command=cmd on the object of w that
// takes commands.
func patchCommand(ctx context.Context, client kubernetes.Interface, w Workload, cmd string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.AnnotationCommand, cmd)
	var err error
	switch w.Kind {
	case KindStatefulSet:
		_, err = client.AppsV1().StatefulSets(w.Namespace).Patch(ctx, w.Primary, types.MergePatchType, patch, metav1.PatchOptions{})
	case KindDaemonSet:
		_, err = client.AppsV1().DaemonSets(w.Namespace).Patch(ctx, w.Primary, types.MergePatchType, patch, metav1.PatchOptions{})
	default:
		_, err = client.AppsV1().Deployments(w.Namespace).Patch(ctx, w.Primary, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		return fmt.Errorf("set %s=%s on %s %s: %w", contract.AnnotationCommand, cmd, w.kindName(), w.Primary, err)
	}
	return nil
}

// kindName is the kind of the object of w that takes commands.
func (w Workload) kindName() string {
	return cmp.Or(w.Kind, "Deployment")
}
