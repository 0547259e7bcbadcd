package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/inventory"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// Rebuilt is an inventory rebuilt from the cluster (see Applier.Rebuild).
type Rebuilt struct {
	Inventory inventory.Inventory
	// Unlisted names the resources that could not be listed (forbidden,
	// say): objects of theirs that left Git are not pruned.
	Unlisted []string
}

// Rebuild lists, in every kind the cluster serves, the objects labelled
// with this sync's name, and returns them as an inventory: what a sync
// record that is lost or damaged held. With namespaces set, only those are
// listed, and no cluster-scoped kind. Left out are skip (the record
// itself), the kinds of skippedResource, objects a controller made from this sync's (a controller owner
// reference: EndpointSlices copy their Service's labels) and the
// Deployments the rollout controller runs a workload under (labelled
// plimsoll.dev/workload with another name than their own). The entries
// have no hash, so the next sync writes each desired object once. A
// resource that cannot be listed is named in Unlisted; discovery failing
// altogether is an error.
func (a *Applier) Rebuild(ctx context.Context, namespaces []string, skip manifest.Key) (Rebuilt, error) {
	if a.cfg.Discovery == nil {
		return Rebuilt{}, errors.New("rebuild the inventory: no discovery client")
	}
	lists, err := discovery.ServerPreferredResources(a.cfg.Discovery)
	if err != nil && len(lists) == 0 {
		return Rebuilt{}, fmt.Errorf("rebuild the inventory: discover the cluster's kinds: %w", err)
	}
	out := Rebuilt{Inventory: inventory.Inventory{}}
	if err != nil {
		// Some API groups failed discovery: their kinds cannot be listed.
		out.Unlisted = append(out.Unlisted, fmt.Sprintf("some API groups (%v)", err))
	}
	selector := metav1.ListOptions{LabelSelector: contract.LabelSync + "=" + a.cfg.SyncName}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || skippedResource(gv.Group, r.Name) {
				continue
			}
			gvr := gv.WithResource(r.Name)
			scopes := []dynamic.ResourceInterface{a.reads().Resource(gvr)}
			switch {
			case r.Namespaced && len(namespaces) > 0:
				scopes = scopes[:0]
				for _, ns := range namespaces {
					scopes = append(scopes, a.reads().Resource(gvr).Namespace(ns))
				}
			case !r.Namespaced && len(namespaces) > 0:
				continue // the sync writes no cluster-scoped object
			}
			for _, client := range scopes {
				items, err := client.List(ctx, selector)
				if err != nil {
					if !apierrors.IsNotFound(err) {
						out.Unlisted = append(out.Unlisted, gvr.GroupResource().String())
					}
					continue
				}
				for i := range items.Items {
					obj := &items.Items[i]
					if madeFromOurs(obj) {
						continue
					}
					e := inventory.Entry{APIVersion: list.GroupVersion, Kind: r.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
					if e.Key() != skip {
						out.Inventory[e.Key()] = e
					}
				}
			}
		}
	}
	return out, nil
}

// skippedResource reports kinds left out of a rebuild: Events and the
// Leases nodes renew (many, never applied), and v1 Endpoints, which the
// endpoints controller makes for each Service with the Service's labels and
// no owner reference. An Endpoints object applied from Git is left out too:
// not pruned if it leaves Git while the record is lost, which is the safe
// way to err.
func skippedResource(group, resource string) bool {
	return resource == "events" || (group == "coordination.k8s.io" && resource == "leases") ||
		(group == "" && resource == "endpoints")
}

// madeFromOurs reports whether obj carries the sync's label because it was
// made from an object the sync applied, not applied itself: it has a
// controller owner, or it is a Deployment the rollout controller derived
// from the workload named in its plimsoll.dev/workload label.
func madeFromOurs(obj *unstructured.Unstructured) bool {
	if metav1.GetControllerOfNoCopy(obj) != nil {
		return true
	}
	w, ok := obj.GetLabels()[contract.LabelWorkload]
	return ok && w != obj.GetName()
}
