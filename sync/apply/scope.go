package apply

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// Namespaced reports, from the cluster's discovery, whether gvk is
// namespaced; an error wrapping manifest.ErrUnknownKind when the cluster
// does not serve it. It makes the Applier a manifest.Scope.
func (a *Applier) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := a.cfg.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return false, fmt.Errorf("%w: the cluster serves no %s in %s", manifest.ErrUnknownKind, gvk.Kind, gvk.GroupVersion())
	}
	if err != nil {
		return false, fmt.Errorf("look up kind %s: %w", gvk, err)
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// ResetDiscovery forgets the cached discovery, so kinds added to the
// cluster since (by CRDs applied by hand, say) are seen.
func (a *Applier) ResetDiscovery() { a.cfg.Mapper.Reset() }
