package sync

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/internal/prune"
	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
	"plimsoll.dev/plimsoll/sync/source"
)

// checkDeployments asks the rollout controller about every Deployment of
// the commit, before anything is applied; each refusal names its file and
// document.
func (s *Syncer) checkDeployments(ctx context.Context, objs []manifest.Object) error {
	if s.cfg.Deployments == nil {
		return nil
	}
	services := map[string][]string{} // by namespace
	for _, obj := range objs {
		if gvk := obj.Obj.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Service" {
			services[obj.Obj.GetNamespace()] = append(services[obj.Obj.GetNamespace()], obj.Obj.GetName())
		}
	}
	var errs []error
	for _, obj := range objs {
		gvk := obj.Obj.GroupVersionKind()
		if gvk.Group != "apps" || gvk.Kind != "Deployment" {
			continue
		}
		d, err := typedDeployment(obj)
		if err != nil {
			errs = append(errs, &manifest.Error{Origin: obj.Origin, Reason: err.Error()})
			continue
		}
		if err := s.cfg.Deployments.CheckDeployment(ctx, d, services[d.Namespace]); err != nil {
			errs = append(errs, &manifest.Error{Origin: obj.Origin, Reason: fmt.Sprintf("%s: %v", obj.Key(), err)})
		}
	}
	return errors.Join(errs...)
}

// handOff gives the rollout controller every Deployment of the commit,
// typed, and names those that left Git and are about to be pruned, once
// per commit: not again while the same commit is synced, and again after
// a sync that failed (see Syncer.handedOff). The controller takes what
// changed and writes what its rollout asks for, and retires what a
// workload leaving Git runs under other names (see
// DeploymentSink.SyncDeployments); the sync decides nothing about the
// controller's objects and asks nothing back. Only the Deployments that
// Git changed since inv (or that are new) count as changes of this sync;
// the others are marked as needing nothing.
func (s *Syncer) handOff(ctx context.Context, plan *apply.Plan, inv inventory.Inventory, commit source.Commit) ([]apply.Change, error) {
	if s.cfg.Deployments == nil {
		return nil, nil
	}
	var items []*apply.Item
	var deploys []*appsv1.Deployment
	var errs []error
	for _, it := range plan.Items {
		if !isDeployment(it) {
			continue
		}
		d, err := typedDeployment(it.Object)
		if err != nil {
			errs = append(errs, &manifest.Error{Origin: it.Object.Origin, Reason: err.Error()})
			continue
		}
		items, deploys = append(items, it), append(deploys, d)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var leaving []types.NamespacedName
	if s.cfg.Prune {
		leaving = deploymentsOf(plan.Prune)
	}
	if s.handedOff != commit.Hash {
		if err := s.cfg.Deployments.SyncDeployments(ctx, commit.Hash, commit.Subject, deploys, leaving); err != nil {
			return nil, fmt.Errorf("hand the Deployments to the rollout controller: %w", err)
		}
		s.handedOff, s.handedTemplates = commit.Hash, templateHashes(deploys)
	}
	var changes []apply.Change
	for _, it := range items {
		if unchangedInGit(it, inv) {
			it.Action = apply.ActionNone // the controller keeps it as Git says
			continue
		}
		if it.Action == apply.ActionNone || it.Action == apply.ActionRestore {
			it.Action = apply.ActionUpdate
		}
		changes = append(changes, apply.Change{Key: it.Key(), Action: it.Action, Item: it})
	}
	return changes, nil
}

// templateHashes returns the template hash of each of deploys
// (plimsoll.dev/template-hash, as the rollout controller computes it) by
// namespace/name.
func templateHashes(deploys []*appsv1.Deployment) map[string]string {
	hashes := make(map[string]string, len(deploys))
	for _, d := range deploys {
		hashes[d.Namespace+"/"+d.Name] = podtemplate.Hash(d.Spec.Template)
	}
	return hashes
}

// handedOffDiff diffs a Git Deployment that the rollout controller runs
// as the controller would write it (see DeploymentSink.DiffDeployment);
// nil for any other object, which the sync's dry-run diffs.
func (s *Syncer) handedOffDiff(ctx context.Context, it *apply.Item, commit source.Commit) (*apply.ObjectDiff, error) {
	if s.cfg.Diffs == nil || !isDeployment(it) {
		return nil, nil
	}
	d, err := typedDeployment(it.Object)
	if err != nil {
		return nil, err
	}
	live, after, err := s.cfg.Diffs.DiffDeployment(ctx, d, commit.Hash, commit.Subject)
	if err != nil {
		return nil, apply.Rejection(it, "dry-run", err)
	}
	if live == nil {
		return nil, nil
	}
	before, err := untyped(live, it.Object.Obj.GetAPIVersion())
	if err != nil {
		return nil, err
	}
	written, err := untyped(after, it.Object.Obj.GetAPIVersion())
	if err != nil {
		return nil, err
	}
	diff, err := apply.DiffObjects(it.Key(), before, written)
	if err != nil {
		return nil, err
	}
	return &apply.ObjectDiff{Key: it.Key(), Diff: diff}, nil
}

// removedDiff diffs to nothing the Deployment that serves the workload
// whose Git Deployment e the prune removes: its namesake or, for
// blue-green, the active color, which the rollout controller retires
// with it (see DeploymentSink.SyncDeployments) though the inventory does
// not name it. nil for any other entry; an empty diff for a workload the
// prune keeps.
func (s *Syncer) removedDiff(ctx context.Context, e inventory.Entry) (*apply.ObjectDiff, error) {
	if s.cfg.Diffs == nil || !isDeploymentEntry(e) {
		return nil, nil
	}
	serving, err := s.cfg.Diffs.ServingDeployment(ctx, e.Namespace, e.Name)
	switch {
	case err != nil:
		return nil, fmt.Errorf("read workload %s/%s: %w", e.Namespace, e.Name, err)
	case serving == nil:
		return nil, nil
	case !prune.Allowed(serving, s.cfg.Name):
		return &apply.ObjectDiff{Key: e.Key()}, nil
	}
	before, err := untyped(serving, e.APIVersion)
	if err != nil {
		return nil, err
	}
	diff, err := apply.DiffObjects(e.Key(), before, nil)
	if err != nil {
		return nil, err
	}
	return &apply.ObjectDiff{Key: e.Key(), Diff: diff}, nil
}

// untyped is Deployment d from the sink as the diff compares objects,
// with apiVersion (the typed clients leave it and the kind out).
func untyped(d *appsv1.Deployment, apiVersion string) (*unstructured.Unstructured, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		return nil, fmt.Errorf("read Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	u["apiVersion"], u["kind"] = apiVersion, "Deployment"
	return &unstructured.Unstructured{Object: u}, nil
}

// typedDeployment reads a Git Deployment as the sink takes it.
func typedDeployment(obj manifest.Object) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Obj.Object, d); err != nil {
		return nil, fmt.Errorf("read Deployment %s: %w", obj.Key(), err)
	}
	return d, nil
}

// unchangedInGit reports whether inv holds it with the same hash: Git has
// not changed it since it was last applied or handed over.
func unchangedInGit(it *apply.Item, inv inventory.Inventory) bool {
	prev, known := inv[it.Key()]
	return known && prev.Hash == it.Hash
}

func isDeployment(it *apply.Item) bool {
	gvk := it.Object.Obj.GroupVersionKind()
	return gvk.Group == "apps" && gvk.Kind == "Deployment"
}

// deploymentsOf names the Deployments of inventory entries.
func deploymentsOf(entries []inventory.Entry) []types.NamespacedName {
	var names []types.NamespacedName
	for _, e := range entries {
		if isDeploymentEntry(e) {
			names = append(names, types.NamespacedName{Namespace: e.Namespace, Name: e.Name})
		}
	}
	return names
}

// isDeploymentEntry reports whether inventory entry e is a Deployment.
func isDeploymentEntry(e inventory.Entry) bool {
	ref := e.Key()
	return ref.Group == "apps" && ref.Kind == "Deployment"
}
