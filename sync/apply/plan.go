// Package apply writes a validated set of objects to the cluster with
// server-side apply, safely: it plans which objects need a write, dry-runs
// every write on the server before making any, applies in stages
// (Namespaces and CRDs first), and prunes what left Git.
//
// An object is written only when Git changed it since the last sync (its
// hash differs from the inventory's) or when the live object drifted from
// it; every other object is left alone, so its resourceVersion stays the
// same and a no-op sync costs one list per kind and namespace (and per 250
// objects of them).
package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/fields"
	"plimsoll.dev/plimsoll/internal/takeover"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// Keys, labels and defaults of the applier.
const (

	// DefaultFieldManager is the server-side apply field manager.
	DefaultFieldManager = "plimsoll"
	// DefaultWorkers is how many requests run at once.
	DefaultWorkers = 8

	// listPage is how many objects a list of live objects asks for at
	// once: a sync of 600 Deployments in one namespace reads them in 6
	// pages, and decodes one page whole at a time. A page of 100
	// Deployments is ~0.6 MB of JSON and ~1.2 MB decoded; at 250 a page
	// was ~4.5 MB of a 58 MB peak heap (300 canaries and 300 blue-green
	// workloads, the sync's commit of all of them).
	listPage = 100

	// hashBytes is the length of an object hash in bytes (80 bits: no
	// collision among the objects of one repository in practice).
	hashBytes = 10

	// kindConfigMap and kindSecret are the kinds a pod template refers to
	// by name, which a prune keeps while a workload needs them.
	kindConfigMap = "ConfigMap"
	kindSecret    = "Secret"
)

// DeploymentsResource is the resource of Deployments: a prune lists them to
// find what refers to a ConfigMap or Secret, and the sync leaves them out of
// what a quiet poll watches (the rollout controller keeps them).
var DeploymentsResource = appsv1.SchemeGroupVersion.WithResource("deployments")

// replicaSetsResource is listed by a prune for the same reason: an old
// ReplicaSet's template may still refer to a ConfigMap or Secret.
var replicaSetsResource = appsv1.SchemeGroupVersion.WithResource("replicasets")

// Action is what a sync does, or would do, to one object.
type Action string

// Actions of a plan and of a change set.
const (
	// ActionCreate: the object does not exist yet.
	ActionCreate Action = "create"
	// ActionUpdate: Git changed the object since the last sync.
	ActionUpdate Action = "update"
	// ActionRestore: the live object drifted from Git.
	ActionRestore Action = "restore"
	// ActionNone: the live object matches Git; nothing is written.
	ActionNone Action = "none"
	// ActionDelete: the object left Git and is pruned.
	ActionDelete Action = "delete"
)

// Config wires an Applier.
type Config struct {
	// Dynamic is the client for every kind: every write goes through it
	// (as the sync's identity, when it impersonates one).
	Dynamic dynamic.Interface
	// Reads, when set, is the client the lists and reads of live objects
	// go through (the daemon's own rights, which may see more than the
	// sync's identity); Dynamic when nil.
	Reads dynamic.Interface
	// Mapper maps kinds to resources; reset after CRDs are applied.
	Mapper meta.ResettableRESTMapper
	// Discovery lists the kinds the cluster serves, for Rebuild.
	Discovery discovery.DiscoveryInterface
	// SyncName is set as the contract.LabelSync value on every applied object.
	SyncName string
	// FieldManager defaults to DefaultFieldManager.
	FieldManager string
	// Workers defaults to DefaultWorkers.
	Workers int
}

// Applier plans, dry-runs, applies and prunes. It is safe for one sync at a
// time.
type Applier struct {
	cfg Config
	// rediscovered is set once this sync has reset the cached discovery
	// for a kind it did not know (see Namespaced).
	rediscovered bool
}

// reads is the client of lists and reads (Config.Reads).
func (a *Applier) reads() dynamic.Interface {
	if a.cfg.Reads != nil {
		return a.cfg.Reads
	}
	return a.cfg.Dynamic
}

// New returns an Applier.
func New(cfg Config) *Applier {
	if cfg.FieldManager == "" {
		cfg.FieldManager = DefaultFieldManager
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	return &Applier{cfg: cfg}
}

// Item is one desired object and what the plan does with it.
type Item struct {
	Object manifest.Object
	// Hash is the digest of the desired object (see Hash).
	Hash string
	// Live is the object in the cluster, nil if it does not exist.
	Live *unstructured.Unstructured
	// Mapping is nil while the kind is not served yet (its CRD is in the
	// same commit); such an item is mapped again after the CRDs are applied.
	Mapping *meta.RESTMapping
	Action  Action
	// TemplateRestored reports a restore (ActionRestore) of an object
	// whose pod template (spec.template) drifted from Git's: a
	// StatefulSet's after `kubectl rollout undo`, say.
	TemplateRestored bool

	// recreate is set by the dry-run when a forced object must be deleted
	// and created again to change an immutable field.
	recreate bool
	// takeOver is the patch that gives the sync the fields kubectl owns
	// on Live (see takeOverPatchOf), nil when there are none to take.
	takeOver []byte
	// liveState is the stateDigest of Live as the plan read it, for an
	// item to be written ("" for the others): an apply that leaves that
	// as it was wrote nothing.
	liveState string
}

// Key names the item's object.
func (it *Item) Key() manifest.Key { return it.Object.Key() }

// Plan is what one sync will do.
type Plan struct {
	// Items holds every desired object, in the order they were given.
	Items []*Item
	// Prune holds the inventory entries that left Git.
	Prune []inventory.Entry
}

// Scopes returns the resources and namespaces of the plan's objects,
// sorted, and whether they hold every object: a kind that is not served
// yet is in none (see Item.Mapping).
func (p *Plan) Scopes() ([]Scope, bool) {
	complete := !slices.ContainsFunc(p.Items, func(it *Item) bool { return it.Mapping == nil })
	return scopesOf(p.Items), complete
}

// Writes returns the items that need a write, in plan order.
func (p *Plan) Writes() []*Item {
	var out []*Item
	for _, it := range p.Items {
		if it.Action != ActionNone {
			out = append(out, it)
		}
	}
	return out
}

// Plan labels every desired object with the sync's name, hashes it, reads
// the live objects, and decides what each needs. desired must be validated
// (names and namespaces set). An object that another sync applied (it
// carries plimsoll.dev/sync with another name) is never taken over: the
// plan fails, joining an *OwnerError for each such object, before anything
// is dry-run or written (see checkOwners).
//
// Each item keeps of its live object what the apply reads of it (see
// slim): a sync of 600 workloads lists about 1,200 Deployments (colors,
// canaries) beside their Services, and held whole until the apply ended
// they were about 40% of the daemon's live heap as the rollouts began.
func (a *Applier) Plan(ctx context.Context, desired []manifest.Object, inv inventory.Inventory, steered Steered) (*Plan, error) {
	return a.plan(ctx, desired, inv, steered, false)
}

// PlanDiff is Plan with each item's live object kept whole, for Diff.
func (a *Applier) PlanDiff(ctx context.Context, desired []manifest.Object, inv inventory.Inventory, steered Steered) (*Plan, error) {
	return a.plan(ctx, desired, inv, steered, true)
}

// Steered copies into an object about to be applied, want, the fields
// that another writer steers on its live object, live (the rollout
// controller's keys of a Service's selector, the target of an
// autoscaler): applied as Git writes them, they would be undone at every
// sync. The item's hash stays Git's. nil keeps nothing.
type Steered func(want, live *unstructured.Unstructured)

// plan is Plan, keeping each item's live object whole when whole is set.
// An item is decided as its live object is listed, a page at a time, so
// that no more than one page is held whole.
func (a *Applier) plan(ctx context.Context, desired []manifest.Object, inv inventory.Inventory, steered Steered, whole bool) (*Plan, error) {
	plan := &Plan{}
	byKey := make(map[manifest.Key]*Item, len(desired))
	for _, obj := range desired {
		labels := obj.Obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[contract.LabelSync] = a.cfg.SyncName
		obj.Obj.SetLabels(labels)
		hash, err := Hash(obj.Obj.Object)
		if err != nil {
			return nil, fmt.Errorf("plan %s: %w", obj.Origin, err)
		}
		it := &Item{Object: obj, Hash: hash}
		mapping, err := a.cfg.Mapper.RESTMapping(obj.Obj.GroupVersionKind().GroupKind(), obj.Obj.GroupVersionKind().Version)
		switch {
		case meta.IsNoMatchError(err):
			// Validation let it through, so its CRD is in this commit.
		case err != nil:
			return nil, fmt.Errorf("map %s (%s): %w", it.Key(), obj.Origin, err)
		default:
			it.Mapping = mapping
		}
		plan.Items = append(plan.Items, it)
		byKey[it.Key()] = it
	}

	var errs []error
	selector := metav1.ListOptions{LabelSelector: contract.LabelSync + "=" + a.cfg.SyncName}
	err := a.listScopes(ctx, scopesOf(plan.Items), selector, func(obj *unstructured.Unstructured) {
		it := byKey[manifest.Object{Obj: obj}.Key()]
		if it == nil {
			return // not in Git (a prune reads it again), or run for a workload under another name
		}
		live := *obj // a copy, so that the rest of its page is not held with it
		it.Live = &live
		if steered != nil {
			steered(it.Object.Obj, it.Live)
		}
		if err := a.decide(it, inv); err != nil {
			errs = append(errs, err)
		}
		if it.Action != ActionNone {
			it.liveState = stateDigest(it.Live.Object)
		}
		if !whole {
			it.Live = slim(it.Live)
		}
	})
	if err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := a.checkOwners(ctx, plan.Items); err != nil {
		return nil, err
	}
	for _, it := range plan.Items {
		if it.Live == nil {
			it.Action = ActionCreate
		}
	}

	for ref, e := range inv {
		if _, wanted := byKey[ref]; !wanted {
			plan.Prune = append(plan.Prune, e)
		}
	}
	slices.SortFunc(plan.Prune, func(x, y inventory.Entry) int {
		return compareKeys(x.Key(), y.Key())
	})
	return plan, nil
}

// decide works out what item it, whose live object is it.Live, needs:
// an update when Git changed it since the inventory's hash, a restore
// when it drifted from Git or kubectl owns fields of it (see
// takeOverPatchOf), else nothing. The fields another writer steers are
// kept as they are live first (see Steered).
func (a *Applier) decide(it *Item, inv inventory.Inventory) error {
	var err error
	if it.takeOver, err = a.takeOverPatchOf(it); err != nil {
		return fmt.Errorf("plan %s (%s): %w", it.Key(), it.Object.Origin, err)
	}
	prev, known := inv[it.Key()]
	switch {
	case !known || prev.Hash != it.Hash:
		it.Action = ActionUpdate
	case !InSync(it.Live.Object, it.Object.Obj.Object), it.takeOver != nil:
		it.Action = ActionRestore
		want, ok, _ := unstructured.NestedFieldNoCopy(it.Object.Obj.Object, "spec", "template")
		live, _, _ := unstructured.NestedFieldNoCopy(it.Live.Object, "spec", "template")
		it.TemplateRestored = ok && !fields.Hold(live, want)
	default:
		it.Action = ActionNone
	}
	return nil
}

// slim returns what the steps after a plan read of live, an item's live
// object: its kind and identity (name, namespace, uid, resourceVersion).
// Its labels, spec, data and annotations were read by the plan's
// decision, and go.
func slim(live *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(live.GetAPIVersion())
	out.SetKind(live.GetKind())
	out.SetName(live.GetName())
	out.SetNamespace(live.GetNamespace())
	out.SetUID(live.GetUID())
	out.SetResourceVersion(live.GetResourceVersion())
	return out
}

// scopesOf returns the resources and namespaces of the mapped items,
// sorted.
func scopesOf(items []*Item) []Scope {
	seen := map[Scope]bool{}
	var scopes []Scope
	for _, it := range items {
		if it.Mapping == nil {
			continue
		}
		s := Scope{Resource: it.Mapping.Resource}
		if it.Mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			s.Namespace = it.Object.Obj.GetNamespace()
		}
		if !seen[s] {
			seen[s] = true
			scopes = append(scopes, s)
		}
	}
	slices.SortFunc(scopes, func(x, y Scope) int {
		return strings.Compare(x.Resource.String()+"/"+x.Namespace, y.Resource.String()+"/"+y.Namespace)
	})
	return scopes
}

// listScopes lists the objects of each scope that opts selects, a page
// at a time (listPage), and gives each to add, trimmed (see trimLive). A
// namespace that does not exist yet (this sync creates it) holds nothing.
func (a *Applier) listScopes(ctx context.Context, scopes []Scope, opts metav1.ListOptions, add func(*unstructured.Unstructured)) error {
	opts.Limit = listPage
	for _, s := range scopes {
		var client dynamic.ResourceInterface = a.reads().Resource(s.Resource)
		if s.Namespace != "" {
			client = a.reads().Resource(s.Resource).Namespace(s.Namespace)
		}
		for opts.Continue = ""; ; {
			list, err := client.List(ctx, opts)
			if isNamespaceGone(err) {
				break // the namespace is created by this sync
			}
			if err != nil {
				return fmt.Errorf("list %s in %q: %w", s.Resource.Resource, s.Namespace, err)
			}
			for i := range list.Items {
				trimLive(&list.Items[i])
				add(&list.Items[i])
			}
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	return nil
}

// trimLive drops from a listed object what no step of a sync reads of
// it: its status (never drift, see ignoredTopLevel; a hook or a CRD is
// read again for its status) and, unless a kubectl command owns some of
// its fields, its managedFields (read only to take those over, see
// takeOverPatchOf). Both can be as large as the rest of the object, and a
// sync holds every object it lists until it ends.
func trimLive(obj *unstructured.Unstructured) {
	delete(obj.Object, "status")
	md, _ := obj.Object["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		manager, _ := m["manager"].(string)
		subresource, _ := m["subresource"].(string)
		if takeover.ByHand(metav1.ManagedFieldsEntry{Manager: manager, Subresource: subresource}) {
			return
		}
	}
	delete(md, "managedFields")
}

// EntryOf is the inventory entry of an applied item.
func EntryOf(it *Item) inventory.Entry {
	obj := it.Object.Obj
	return inventory.Entry{
		APIVersion: obj.GetAPIVersion(),
		Kind:       obj.GetKind(),
		Namespace:  obj.GetNamespace(),
		Name:       obj.GetName(),
		Hash:       it.Hash,
	}
}

func compareKeys(x, y manifest.Key) int {
	for _, c := range [][2]string{{x.Group, y.Group}, {x.Kind, y.Kind}, {x.Namespace, y.Namespace}, {x.Name, y.Name}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	return 0
}
