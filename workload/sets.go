package workload

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// selector selects as workloads: their own annotations are their status,
// and their strategy is rolling (canary is not theirs yet). One the
// reader may not list is left out, as a kind it cannot see.
func listSets(ctx context.Context, client kubernetes.Interface, ns, selector string) ([]Workload, error) {
	opts := metav1.ListOptions{LabelSelector: selector}
	var out []Workload
	sts, err := client.AppsV1().StatefulSets(ns).List(ctx, opts)
	switch {
	case err == nil:
		for i := range sts.Items {
			out = append(out, describeSet(KindStatefulSet, &sts.Items[i]))
		}
	case !apierrors.IsForbidden(err):
		return nil, fmt.Errorf("list the StatefulSets: %w", err)
	}
	ds, err := client.AppsV1().DaemonSets(ns).List(ctx, opts)
	switch {
	case err == nil:
		for i := range ds.Items {
			out = append(out, describeSet(KindDaemonSet, &ds.Items[i]))
		}
	case !apierrors.IsForbidden(err):
		return nil, fmt.Errorf("list the DaemonSets: %w", err)
	}
	return out, nil
}

// describeSet makes a Workload of a StatefulSet or a DaemonSet.
func describeSet(kind string, obj metav1.Object) Workload {
	st, _ := strategies.ReadStatus(obj.GetAnnotations())
	return Workload{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Strategy: contract.StrategyRolling,
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
