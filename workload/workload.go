// Package workload is the client side of the rollout controller and of the
// sync: it reads workloads from the annotations and labels the controller
// writes on their Deployments, reads syncs from their status ConfigMaps,
// sends workloads commands through plimsoll.dev/command, and tells when a
// rollout has ended for a commit. It is what `plimsoll status`, `plimsoll
// trace`, `plimsoll wait`, the commands (promote, abort, retry, pause,
// resume) and the web view run on.
//
// It needs only a Kubernetes client and the plimsoll.dev/ contract; it
// does not import the controller, which may run in another process (the
// daemon) or not at all.
package workload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// Workload is a workload as the annotations of its Deployments describe
// it: what `plimsoll status` lists and the CLI's commands act on.
type Workload struct {
	// Kind is "" for a workload of Deployments, KindStatefulSet or
	// KindDaemonSet for one of those, which carries its own status.
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Strategy is rolling, blue-green or canary, as the Deployments run.
	Strategy string `json:"strategy"`
	// Primary is the Deployment that carries the status and takes
	// commands: <name> for rolling and canary, the active color for
	// blue-green.
	Primary  string `json:"primary"`
	Phase    string `json:"phase"`
	Revision int64  `json:"revision"`
	Commit   string `json:"commit"`
	Message  string `json:"message"`
	// TemplateHash is plimsoll.dev/template-hash: the hash of the Git
	// template of Revision.
	TemplateHash string `json:"templateHash,omitempty"`
	// Sync is the sync that applied the workload (its plimsoll.dev/sync
	// label), "" for none.
	Sync string `json:"sync,omitempty"`
	// FailedHash is plimsoll.dev/failed-hash, "" when none.
	FailedHash string `json:"failedHash,omitempty"`
	// Deployments are the names of the workload's Deployments, sorted.
	Deployments []string `json:"deployments"`
	// Analysis is the workload's last analysis run
	// (plimsoll.dev/analysis-run), nil when none was recorded.
	Analysis *strategies.AnalysisRun `json:"analysis,omitempty"`
}

// ErrNotFound is returned for a workload no Deployment belongs to.
var ErrNotFound = errors.New("workload not found")

// List reads the workloads of namespace ns ("" for every namespace) from
// the Deployments labelled plimsoll.dev/workload, and the StatefulSets
// and DaemonSets a sync applied, sorted by namespace and name.
func List(ctx context.Context, client kubernetes.Interface, ns string) ([]Workload, error) {
	out, err := list(ctx, client, ns, contract.LabelWorkload)
	if err != nil {
		return nil, err
	}
	sets, err := listSets(ctx, client, ns, contract.LabelSync)
	if err != nil {
		return nil, err
	}
	return sorted(append(out, sets...)), nil
}

// sorted sorts workloads by namespace, name and kind.
func sorted(ws []Workload) []Workload {
	slices.SortFunc(ws, func(a, b Workload) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
	return ws
}

// list reads the workloads of the Deployments of namespace ns that
// selector selects, sorted by namespace and name.
func list(ctx context.Context, client kubernetes.Interface, ns, selector string) ([]Workload, error) {
	list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list the workloads' Deployments: %w", err)
	}
	groups := map[[2]string][]*appsv1.Deployment{}
	for i := range list.Items {
		d := &list.Items[i]
		key := [2]string{d.Namespace, d.Labels[contract.LabelWorkload]}
		groups[key] = append(groups[key], d)
	}
	var out []Workload
	for key, deploys := range groups {
		w, ok := Describe(key[0], key[1], deploys)
		if ok {
			out = append(out, w)
		}
	}
	return sorted(out), nil
}

// Get reads workload name of namespace ns; an error wrapping ErrNotFound
// when it has no Deployment.
func Get(ctx context.Context, client kubernetes.Interface, ns, name string) (Workload, error) {
	list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelWorkload + "=" + name})
	if err != nil {
		return Workload{}, fmt.Errorf("list the Deployments of workload %s: %w", name, err)
	}
	w, ok := Describe(ns, name, pointers(list.Items))
	if !ok {
		return Workload{}, fmt.Errorf("%w: no Deployment of workload %q in namespace %s", ErrNotFound, name, ns)
	}
	return w, nil
}

// Describe makes a Workload of the Deployments of workload name in
// namespace ns (those labelled plimsoll.dev/workload=name): the primary is
// the Deployment that serves it (see Serving), else the one with the
// highest revision. ok is false without Deployments. It reads only the
// Deployments given, so a cache's copies will do.
func Describe(ns, name string, deploys []*appsv1.Deployment) (Workload, bool) {
	if len(deploys) == 0 {
		return Workload{}, false
	}
	w := Workload{Namespace: ns, Name: name}
	primary, _ := Serving(name, among(deploys)) // among never fails
	if primary == nil {
		primary = newest(deploys)
	}
	for _, d := range deploys {
		w.Deployments = append(w.Deployments, d.Name)
	}
	slices.Sort(w.Deployments)
	w.Strategy, _ = StrategyOf(name, among(deploys)) // among never fails
	st, _ := strategies.ReadStatus(primary.Annotations)
	w.Primary, w.Phase, w.Revision, w.Commit, w.Message, w.FailedHash, w.TemplateHash =
		primary.Name, string(st.Phase), st.Revision, st.Commit, st.Message, st.FailedHash, st.Hash
	w.Sync = primary.Labels[contract.LabelSync]
	w.Analysis = strategies.DecodeRun(primary.Annotations[contract.AnnotationAnalysisRun])
	return w, true
}
