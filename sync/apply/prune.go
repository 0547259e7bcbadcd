package apply

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"plimsoll.dev/plimsoll/contract"
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
}

// Prune deletes the objects of entries that are still in the cluster and
// still carry this sync's label, the other kinds first and Namespaces and
// CRDs last (their deletion takes their contents with them). An object gone
// already, or whose kind is no longer served, counts as deleted.
func (a *Applier) Prune(ctx context.Context, entries []inventory.Entry) (PruneResult, error) {
	var res PruneResult
	var last []inventory.Entry
	var errs []error
	del := func(e inventory.Entry) {
		outcome, err := a.pruneOne(ctx, e)
		switch {
		case err != nil:
			res.Failed = append(res.Failed, e)
			errs = append(errs, err)
		case outcome == ActionDelete:
			res.Deleted = append(res.Deleted, e.Key())
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

// pruneOne returns ActionDelete when the object is gone, ActionNone when it
// was kept.
func (a *Applier) pruneOne(ctx context.Context, e inventory.Entry) (Action, error) {
	client, live, err := a.liveEntry(ctx, e)
	switch {
	case err != nil:
		return "", fmt.Errorf("prune %s: %w", e.Key(), err)
	case live == nil:
		return ActionDelete, nil
	case !prunable(live, a.cfg.SyncName):
		return ActionNone, nil
	}
	policy := metav1.DeletePropagationBackground
	if err := client.Delete(ctx, e.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("prune %s: %w", e.Key(), err)
	}
	return ActionDelete, nil
}

// prunable reports whether a prune may delete live: it still carries the
// sync's label and no plimsoll.dev/prune: disabled.
func prunable(live *unstructured.Unstructured, syncName string) bool {
	return live.GetLabels()[contract.LabelSync] == syncName && live.GetAnnotations()[contract.AnnotationPrune] != contract.PruneDisabled
}

// liveEntry reads the live object of an inventory entry and returns the
// client of its resource; a nil object when it is gone or its kind is no
// longer served.
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
	var client dynamic.ResourceInterface = a.cfg.Dynamic.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		client = a.cfg.Dynamic.Resource(mapping.Resource).Namespace(e.Namespace)
	}
	live, err := client.Get(ctx, e.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return client, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("read it: %w", err)
	}
	return client, live, nil
}
