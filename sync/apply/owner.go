package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/manifest"
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
func (e *OwnerError) Error() string {
	name := e.Key.Name
	if e.Key.Namespace != "" {
		name = e.Key.Namespace + "/" + name
	}
	return fmt.Sprintf("%s %s in %s belongs to sync %q; sync %q does not take it over",
		e.Key.Kind, name, originText(e.Origin), e.Owner, e.Sync)
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
