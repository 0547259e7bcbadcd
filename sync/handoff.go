package sync

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/internal/prune"
	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
	"plimsoll.dev/plimsoll/sync/source"
)

// Handoff is what a commit gives the rollout controller, in the one call
// a sync makes of it per commit (DeploymentSink.Check): every Deployment
// of the commit, typed and labelled as the sync's, and the names of the
// commit's Services by namespace (a Service a strategy steers may come
// with the commit).
type Handoff struct {
	Commit, Subject string
	Deployments     []*appsv1.Deployment
	Services        map[string][]string
}

// DeploymentSink is the rollout controller as a sync sees it: it rolls
// the commit's Deployments out instead of the sync applying them. Package
// rollout's Controller implements it; cmd/plimsoll wires the two.
//
// Check is the one call of a commit, made before anything of the commit
// is applied. It reads and writes nothing of the controller's state: no
// intent is recorded and nothing is queued, whatever it answers. An error
// (an unknown strategy, a bad canary steps string, a Service that neither
// exists nor comes with the commit, a write the sync's identity may not
// make) refuses the whole commit, as an invalid manifest does; it joins a
// *DeploymentError for each Deployment refused. The Checked it returns,
// also with an error, is how the sync then tells the controller what
// became of the commit.
type DeploymentSink interface {
	Check(ctx context.Context, h Handoff) (Checked, error)
}

// Checked is one checked commit's Deployments, held by the sync until it
// knows the commit's fate.
//
// Steered copies into an object Git is about to apply the fields the
// controller steers on its live one (the keys it adds to a Service's
// selector, the Deployment an autoscaler of a blue-green workload
// targets), so that the apply neither undoes them nor needs to know what
// they are.
//
// Take hands the Deployments over once the commit's other objects are
// applied: the controller takes what Git asks and writes what the
// rollout needs. leaving names the Deployments that left Git and that the
// sync prunes next (none while pruning is off): for each, unless the
// Deployment that serves the workload is one the prune keeps (annotated
// plimsoll.dev/prune: disabled, or no longer labelled as the sync's), the
// controller retires what it runs for the workload under other names
// (blue-green colors, the canary Deployment, its keys in Service
// selectors) before it returns, and the sync's prune deletes the
// Deployment of Git's name. An error fails the sync. Take of a refused
// commit takes nothing and returns its refusal.
//
// Refuse tells the controller the commit is refused: a workload whose own
// Deployment the check refused, and that runs already, is marked Degraded
// with the refusal and held as it is until Git changes.
type Checked interface {
	Steered(want, live *unstructured.Unstructured)
	Take(ctx context.Context, leaving []types.NamespacedName) error
	Refuse()
}

// DeploymentError is the rollout controller's refusal of one Deployment
// of a commit.
type DeploymentError struct {
	Namespace, Name string
	Err             error
}

func (e *DeploymentError) Error() string {
	return fmt.Sprintf("Deployment %s/%s: %v", e.Namespace, e.Name, e.Err)
}

func (e *DeploymentError) Unwrap() error { return e.Err }

// checkDeployments hands the commit's Deployments and the names of its
// Services to the rollout controller's check, before anything is
// applied; each refusal names its file and document. It returns the
// checked commit (nil without a controller), also with an error.
func (s *Syncer) checkDeployments(ctx context.Context, objs []manifest.Object, commit source.Commit) (Checked, error) {
	if s.cfg.Deployments == nil {
		return nil, nil
	}
	h := Handoff{Commit: commit.Hash, Subject: commit.Subject, Services: map[string][]string{}}
	origins := map[types.NamespacedName]manifest.Object{}
	var errs []error
	for _, obj := range objs {
		gvk := obj.Obj.GroupVersionKind()
		if gvk.Group == "" && gvk.Kind == "Service" {
			h.Services[obj.Obj.GetNamespace()] = append(h.Services[obj.Obj.GetNamespace()], obj.Obj.GetName())
		}
		if gvk.Group != "apps" || gvk.Kind != "Deployment" {
			continue
		}
		d, err := typedDeployment(obj)
		if err != nil {
			errs = append(errs, &manifest.Error{Origin: obj.Origin, Reason: err.Error()})
			continue
		}
		if d.Labels == nil {
			d.Labels = map[string]string{}
		}
		d.Labels[contract.LabelSync] = s.cfg.Name // as the apply labels every object
		h.Deployments = append(h.Deployments, d)
		origins[types.NamespacedName{Namespace: d.Namespace, Name: d.Name}] = obj
	}
	checked, err := s.cfg.Deployments.Check(ctx, h)
	for _, e := range splitErrors(err) {
		var refused *DeploymentError
		if errors.As(e, &refused) {
			if obj, ok := origins[types.NamespacedName{Namespace: refused.Namespace, Name: refused.Name}]; ok {
				e = &manifest.Error{Origin: obj.Origin, Reason: fmt.Sprintf("%s: %v", obj.Key(), refused.Err)}
			}
		}
		errs = append(errs, e)
	}
	return checked, errors.Join(errs...)
}

// handOff gives the rollout controller the commit's Deployments, once per
// commit: not again while the same commit is synced, and again after a
// sync that failed (see Syncer.handedOff); it names those that left Git
// and are about to be pruned (see Checked.Take). The sync decides
// nothing about the controller's objects and asks nothing back. Only the
// Deployments that Git changed since inv (or that are new) count as
// changes of this sync; the others are marked as needing nothing.
func (s *Syncer) handOff(ctx context.Context, h Checked, plan *apply.Plan, inv inventory.Inventory, commit source.Commit) ([]apply.Change, error) {
	if h == nil {
		return nil, nil
	}
	var leaving []types.NamespacedName
	if s.cfg.Prune {
		leaving = deploymentsOf(plan.Prune)
	}
	if s.handedOff != commit.Hash {
		if err := h.Take(ctx, leaving); err != nil {
			return nil, fmt.Errorf("hand the Deployments to the rollout controller: %w", err)
		}
		s.handedOff, s.handedTemplates = commit.Hash, templateHashes(plan.Items)
	}
	var changes []apply.Change
	for _, it := range plan.Items {
		if !isDeployment(it) {
			continue
		}
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

// splitErrors returns the errors err joins, err alone when it joins none,
// nil for nil.
func splitErrors(err error) []error {
	if err == nil {
		return nil
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	return []error{err}
}

// templateHashes returns the template hash of each Deployment of items
// (plimsoll.dev/template-hash, as the rollout controller computes it) by
// namespace/name, and of each StatefulSet and DaemonSet by
// kind/namespace/name (see contract.SetTemplateKey).
func templateHashes(items []*apply.Item) map[string]string {
	hashes := map[string]string{}
	for _, it := range items {
		gvk := it.Object.Obj.GroupVersionKind()
		switch {
		case isDeployment(it):
			if d, err := typedDeployment(it.Object); err == nil { // the check typed each already
				hashes[d.Namespace+"/"+d.Name] = podtemplate.Hash(d.Spec.Template)
			}
		case gvk.Group == "apps" && (gvk.Kind == "StatefulSet" || gvk.Kind == "DaemonSet"):
			if hash, ok := podtemplate.HashOf(it.Object.Obj.Object); ok {
				hashes[contract.SetTemplateKey(gvk.Kind, it.Object.Obj.GetNamespace(), it.Object.Obj.GetName())] = hash
			}
		}
	}
	return hashes
}

// handedOffDiff diffs a Git Deployment that the rollout controller runs
// as the controller would write it (see DeploymentDiffer.DiffDeployment);
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
// with it (see Checked.Take) though the inventory does
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
// not changed it since it was last applied or handed off.
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
