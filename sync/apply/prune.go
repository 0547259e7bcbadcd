package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/prune"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// PruneResult is what Prune did.
type PruneResult struct {
	// Deleted are the objects deleted.
	Deleted []manifest.Key
	// Kept are the objects left in place: annotated
	// plimsoll.dev/prune: disabled, or no longer labelled by this sync
	// (someone else took them over).
	Kept []manifest.Key
	// Failed are the entries whose deletion failed; they stay in the
	// inventory so the next sync tries again.
	Failed []inventory.Entry
	// Waiting are the ConfigMaps and Secrets left in place because live
	// Deployments still refer to them (see Prune). They stay in the
	// inventory, so that a later sync prunes them once nothing does.
	Waiting []Waiting
}

// pruneOutcome is what became of an object a prune was asked to delete.
type pruneOutcome int

const (
	// pruneDeleted: deleted, or gone already.
	pruneDeleted pruneOutcome = iota
	// pruneKept: no longer this sync's to delete (see prunable).
	pruneKept
	// pruneWaiting: a live Deployment still refers to it.
	pruneWaiting
)

// Prune deletes the objects of entries that are still in the cluster and
// still carry this sync's label, the other kinds first and Namespaces and
// CRDs last (their deletion takes their contents with them). An object gone
// already, or whose kind is no longer served, counts as deleted.
//
// A ConfigMap or Secret that a live workload's Deployment still refers to
// waits instead (see referrers): a rollout in flight, or the rollback that
// may end it, needs it. Finding the referrers costs one list of
// Deployments and one of ReplicaSets per namespace that holds such an
// entry, and nothing when there is none. When they cannot be listed, the
// namespace's ConfigMaps and Secrets fail to prune, as a failed delete
// does.
func (a *Applier) Prune(ctx context.Context, entries []inventory.Entry) (PruneResult, error) {
	var res PruneResult
	var last []inventory.Entry
	var errs []error
	refs, unread := a.workloadReferences(ctx, entries)
	del := func(e inventory.Entry) {
		outcome, err := a.pruneOne(ctx, e, refs[e.Key()], unread[e.Namespace])
		switch {
		case err != nil:
			res.Failed = append(res.Failed, e)
			errs = append(errs, err)
		case outcome == pruneDeleted:
			res.Deleted = append(res.Deleted, e.Key())
		case outcome == pruneWaiting:
			res.Waiting = append(res.Waiting, Waiting{Key: e.Key(), Referrers: refs[e.Key()]})
		default:
			res.Kept = append(res.Kept, e.Key())
		}
	}
	for _, e := range entries {
		ref := e.Key()
		if (ref.Group == "" && ref.Kind == "Namespace") ||
			(ref.Group == "apiextensions.k8s.io" && ref.Kind == "CustomResourceDefinition") {
			last = append(last, e)
			continue
		}
		del(e)
	}
	for _, e := range last {
		del(e)
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("prune %d of %d objects failed: %w", len(errs), len(entries), errors.Join(errs...))
	}
	return res, nil
}

// pruneOne deletes the object of e unless it is gone already, no longer
// this sync's, or referred to by the Deployments of refs. unread is why
// the Deployments of e's namespace could not be read, nil when they
// could: a ConfigMap or Secret is then not deleted.
func (a *Applier) pruneOne(ctx context.Context, e inventory.Entry, refs []Referrer, unread error) (pruneOutcome, error) {
	client, live, err := a.liveEntry(ctx, e)
	switch {
	case err != nil:
		return 0, fmt.Errorf("prune %s: %w", e.Key(), err)
	case live == nil:
		return pruneDeleted, nil
	case !prune.Allowed(live, a.cfg.SyncName):
		return pruneKept, nil
	case unread != nil && referencedKind(e.Key()):
		return 0, fmt.Errorf("prune %s: find the Deployments that refer to it: %w", e.Key(), unread)
	case len(refs) > 0:
		return pruneWaiting, nil
	}
	policy := metav1.DeletePropagationBackground
	if err := client.Delete(ctx, e.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("prune %s: %w", e.Key(), err)
	}
	return pruneDeleted, nil
}

// workloadReferences returns the Deployments that refer to each ConfigMap
// and Secret of entries (see referrers), from one list of Deployments and
// one of ReplicaSets labelled plimsoll.dev/workload per namespace that
// holds one. A Deployment of entries that this prune deletes refers to
// nothing. unread holds, by namespace, why its workloads could not be
// listed.
func (a *Applier) workloadReferences(ctx context.Context, entries []inventory.Entry) (refs map[manifest.Key][]Referrer, unread map[string]error) {
	candidates := map[string]map[manifest.Key]bool{}
	leaving := map[manifest.Key]bool{}
	for _, e := range entries {
		k := e.Key()
		switch {
		case referencedKind(k):
			if candidates[k.Namespace] == nil {
				candidates[k.Namespace] = map[manifest.Key]bool{}
			}
			candidates[k.Namespace][k] = true
		case k.Group == "apps" && k.Kind == "Deployment":
			leaving[k] = true
		}
	}
	refs, unread = map[manifest.Key][]Referrer{}, map[string]error{}
	for ns, keys := range candidates {
		deployments, replicaSets, err := a.listWorkloads(ctx, ns)
		if err != nil {
			unread[ns] = err
			continue
		}
		// A Deployment of the prune set that the prune keeps (not this
		// sync's any more) goes on referring.
		gone := map[manifest.Key]bool{}
		for _, d := range deployments {
			k := manifest.Key{Group: "apps", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}
			gone[k] = leaving[k] && prune.Allowed(d, a.cfg.SyncName)
		}
		maps.Copy(refs, referrers(keys, deployments, replicaSets, gone))
	}
	return refs, unread
}

// listWorkloads lists the Deployments and ReplicaSets of namespace ns
// labelled plimsoll.dev/workload: every Deployment a workload runs as
// (blue-green colors and canary Deployments too), and their ReplicaSets,
// which carry the label of their template.
func (a *Applier) listWorkloads(ctx context.Context, ns string) ([]*appsv1.Deployment, []*appsv1.ReplicaSet, error) {
	opts := metav1.ListOptions{LabelSelector: contract.LabelWorkload}
	list, err := a.reads().Resource(DeploymentsResource).Namespace(ns).List(ctx, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("list Deployments in %q: %w", ns, err)
	}
	deployments, err := typed[appsv1.Deployment](list)
	if err != nil {
		return nil, nil, err
	}
	list, err = a.reads().Resource(replicaSetsResource).Namespace(ns).List(ctx, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("list ReplicaSets in %q: %w", ns, err)
	}
	replicaSets, err := typed[appsv1.ReplicaSet](list)
	if err != nil {
		return nil, nil, err
	}
	return deployments, replicaSets, nil
}

// typed converts the items of list to their API type T.
func typed[T any](list *unstructured.UnstructuredList) ([]*T, error) {
	out := make([]*T, 0, len(list.Items))
	for i := range list.Items {
		obj := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, obj); err != nil {
			return nil, fmt.Errorf("read %s %s/%s: %w", list.Items[i].GetKind(), list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// liveEntry reads the live object of an inventory entry and returns the
// client that writes its resource; a nil object when it is gone or its
// kind is no longer served.
func (a *Applier) liveEntry(ctx context.Context, e inventory.Entry) (dynamic.ResourceInterface, *unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(e.APIVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("parse apiVersion %q: %w", e.APIVersion, err)
	}
	mapping, err := a.cfg.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: e.Kind}, gv.Version)
	if meta.IsNoMatchError(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	client, reader := resourceOf(a.cfg.Dynamic, mapping, e.Namespace), resourceOf(a.reads(), mapping, e.Namespace)
	live, err := reader.Get(ctx, e.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return client, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("read it: %w", err)
	}
	return client, live, nil
}

// resourceOf is client's interface to the resource of mapping, in
// namespace ns when the resource is namespaced.
func resourceOf(client dynamic.Interface, mapping *meta.RESTMapping, ns string) dynamic.ResourceInterface {
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return client.Resource(mapping.Resource).Namespace(ns)
	}
	return client.Resource(mapping.Resource)
}
