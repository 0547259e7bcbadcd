package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// Claims of the objects new to a sync.
const (
	// claimVersion is the resourceVersion an object new to the cluster is
	// applied with: no object carries it (etcd's revisions count up from 1
	// and never reach it). The API server ignores the resourceVersion of
	// an apply that creates, and checks it on one that updates, so the
	// apply creates the object when it is absent and fails with a conflict
	// when it is there, whoever made it a moment before.
	claimVersion = "9223372036854775807"
	// claimTries bounds the reads and writes of one claim: an object that
	// changes between each read and write is left to the next sync.
	claimTries = 3
)

// OwnerError is a desired object that another sync applied: the live
// object carries contract.LabelSync with that sync's name. A sync never
// takes such an object over; the commit that declares it is refused as a
// whole (see Applier.Plan).
type OwnerError struct {
	// Key and Origin name the object and where in Git it comes from.
	Key    manifest.Key
	Origin manifest.Origin
	// Owner is the sync whose label the live object carries; Sync is the
	// sync that was refused.
	Owner, Sync string
}

// Error reads `Deployment shop/web in apps/web.yaml (document 1) belongs
// to sync "team-a"; sync "team-b" does not take it over`.
// An error without an origin (the rollout controller's, which is handed
// Deployments without their files) leaves out the " in ..." part.
func (e *OwnerError) Error() string {
	name := e.Key.Name
	if e.Key.Namespace != "" {
		name = e.Key.Namespace + "/" + name
	}
	where := ""
	if e.Origin.File != "" {
		where = " in " + originText(e.Origin)
	}
	return fmt.Sprintf("%s %s%s belongs to sync %q; sync %q does not take it over",
		e.Key.Kind, name, where, e.Owner, e.Sync)
}

// originText is "apps/web.yaml (document 1)", or "(document 2, item 3)"
// for an item of a List document.
func originText(o manifest.Origin) string {
	var where []string
	if o.Doc > 0 {
		where = append(where, "document "+strconv.Itoa(o.Doc))
	}
	if o.Item > 0 {
		where = append(where, "item "+strconv.Itoa(o.Item))
	}
	if len(where) == 0 {
		return o.File
	}
	return o.File + " (" + strings.Join(where, ", ") + ")"
}

// checkOwners refuses the items that another sync owns. Only the items
// without a live object among this sync's own (listed by its label) can
// be another's: in a steady state there are none, and the check costs
// nothing. For the others, one list per resource and namespace they are
// in reads the objects labelled by any other sync
// (plimsoll.dev/sync,plimsoll.dev/sync!=<own>), which is what a shared
// namespace holds of the other syncs and nothing else. A Deployment is
// also another sync's when that sync runs a workload of its name under
// other names (its blue-green colors, its canary Deployment: labelled
// plimsoll.dev/workload=<name>). Objects without the label (made with
// kubectl or Helm) are no sync's, and are adopted.
func (a *Applier) checkOwners(ctx context.Context, items []*Item) error {
	var unseen []*Item
	for _, it := range items {
		if it.Mapping != nil && it.Live == nil {
			unseen = append(unseen, it)
		}
	}
	if len(unseen) == 0 {
		return nil
	}
	owners := map[manifest.Key]string{}
	selector := metav1.ListOptions{LabelSelector: contract.LabelSync + "," + contract.LabelSync + "!=" + a.cfg.SyncName}
	err := a.listScopes(ctx, scopesOf(unseen), selector, func(obj *unstructured.Unstructured) {
		owner := obj.GetLabels()[contract.LabelSync]
		key := manifest.Object{Obj: obj}.Key()
		owners[key] = owner
		if w := obj.GetLabels()[contract.LabelWorkload]; w != "" && key.Group == "apps" && key.Kind == "Deployment" {
			workload := key
			workload.Name = w
			if _, named := owners[workload]; !named {
				owners[workload] = owner
			}
		}
	})
	if err != nil {
		return fmt.Errorf("look for objects of other syncs: %w", err)
	}
	var errs []error
	for _, it := range unseen {
		if owner, ok := owners[it.Key()]; ok {
			errs = append(errs, &OwnerError{Key: it.Key(), Origin: it.Object.Origin, Owner: owner, Sync: a.cfg.SyncName})
		}
	}
	return errors.Join(errs...)
}

// claim writes the items new to the sync (none of its own live objects
// when it planned), one at a time, in key order, and stops at the first
// that another sync owns, with its *OwnerError. The list of checkOwners
// is a read: two syncs that declare one object in commits that arrive
// together both find it nobody's. The API server decides between them
// instead, as it orders writes of one object: an object absent from the
// cluster is applied as a create only (see claimVersion), one that exists
// without a sync's label (made with kubectl, Helm) is adopted by an apply
// that carries the resourceVersion it was read at, and the sync that
// loses either reads the label the other set. Taken in one order, the
// objects that two syncs share are contended first on the same one, so
// that the sync that loses it has written none of them; what it claimed
// before (objects no other sync declares) stays its own, and in its
// inventory. The changes returned are those of the claimed items.
func (a *Applier) claim(ctx context.Context, items []*Item) ([]Change, error) {
	items = slices.Clone(items)
	slices.SortFunc(items, func(x, y *Item) int { return compareKeys(x.Key(), y.Key()) })
	var changes []Change
	for _, it := range items {
		if err := a.claimOne(ctx, it); err != nil {
			return changes, err
		}
		changes = append(changes, Change{Key: it.Key(), Action: it.Action, Item: it})
	}
	return changes, nil
}

// claimOne writes item it, new to the sync, unless another sync owns it
// (see claim).
func (a *Applier) claimOne(ctx context.Context, it *Item) error {
	version := claimVersion
	for range claimTries {
		obj := it.Object.Obj
		if version != "" {
			obj = obj.DeepCopy()
			obj.SetResourceVersion(version)
		}
		_, err := a.resource(it).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: a.cfg.FieldManager, Force: true})
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return Rejection(it, "apply", err)
		}
		live, err := resourceOf(a.reads(), it.Mapping, obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			version = claimVersion // deleted since: create it
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s to claim it (%s): %w", it.Key(), it.Object.Origin.File, err)
		}
		switch owner := live.GetLabels()[contract.LabelSync]; owner {
		case a.cfg.SyncName:
			version = "" // this sync's already
		case "":
			version = live.GetResourceVersion() // nobody's: adopt it as it is now
		default:
			return &OwnerError{Key: it.Key(), Origin: it.Object.Origin, Owner: owner, Sync: a.cfg.SyncName}
		}
	}
	return fmt.Errorf("claim %s (%s): it changed at each of %d reads; the next sync tries again", it.Key(), it.Object.Origin.File, claimTries)
}
