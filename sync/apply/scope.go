package apply

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// Namespaced reports, from the cluster's discovery, whether gvk is
// namespaced; an error wrapping manifest.ErrUnknownKind when the cluster
// does not serve it. It makes the Applier a manifest.Scope. Discovery is
// cached between syncs: a kind the cache does not know makes it look
// again, once per sync (see StartSync), so a kind added to the cluster
// since (a CRD applied by hand) is seen without every poll paying for a
// full discovery.
func (a *Applier) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := a.cfg.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) && !a.rediscovered {
		a.rediscovered = true
		a.cfg.Mapper.Reset()
		mapping, err = a.cfg.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if meta.IsNoMatchError(err) {
		return false, fmt.Errorf("%w: the cluster serves no %s in %s", manifest.ErrUnknownKind, gvk.Kind, gvk.GroupVersion())
	}
	if err != nil {
		return false, fmt.Errorf("look up kind %s: %w", gvk, err)
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// StartSync readies the Applier for a sync: the cached discovery may be
// looked at again once (see Namespaced).
func (a *Applier) StartSync() { a.rediscovered = false }

// ResetDiscovery forgets the cached discovery, so kinds added to the
// cluster since (by CRDs applied by hand, say), or removed, are seen.
func (a *Applier) ResetDiscovery() { a.cfg.Mapper.Reset() }
