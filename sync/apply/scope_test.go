package apply

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// countingMapper maps the kinds it serves and counts its resets; a reset
// makes added served too, as a fresh discovery would.
type countingMapper struct {
	meta.RESTMapper
	served, added map[schema.GroupKind]bool
	resets        int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if !m.served[gk] {
		return nil, &meta.NoKindMatchError{GroupKind: gk}
	}
	return &meta.RESTMapping{Scope: meta.RESTScopeNamespace}, nil
}

func (m *countingMapper) Reset() {
	m.resets++
	for gk := range m.added {
		m.served[gk] = true
	}
}

// TestNamespacedDiscoversOncePerSync: known kinds cost no fresh discovery,
// however many syncs look them up; a kind the cache does not know makes one
// fresh discovery per sync, which finds a kind added since.
func TestNamespacedDiscoversOncePerSync(t *testing.T) {
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	gadget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	m := &countingMapper{served: map[schema.GroupKind]bool{configMap.GroupKind(): true},
		added: map[schema.GroupKind]bool{widget.GroupKind(): true}}
	a := New(Config{Mapper: m})
	for range 3 {
		a.StartSync()
		for range 10 {
			if _, err := a.Namespaced(configMap); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m.resets != 0 {
		t.Errorf("%d fresh discoveries for a known kind over 3 syncs, want 0", m.resets)
	}
	a.StartSync()
	if _, err := a.Namespaced(widget); err != nil {
		t.Errorf("a kind added since the cache was filled: %v", err)
	}
	for range 2 {
		if _, err := a.Namespaced(gadget); !errors.Is(err, manifest.ErrUnknownKind) {
			t.Errorf("an unknown kind: err %v, want ErrUnknownKind", err)
		}
	}
	if m.resets != 1 {
		t.Errorf("%d fresh discoveries in one sync, want 1", m.resets)
	}
}
