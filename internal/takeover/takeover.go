// Package takeover moves the fields that kubectl owns on an object to
// another field manager's apply entry, so that the manager's next
// server-side apply removes those it does not set. Both the sync (any
// synced object) and the rollout controller (a Deployment's template)
// use it to undo changes made by hand, additions included.
package takeover

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Field managers whose fields are taken over.
const (
	// handManagerPrefix begins the field manager of every kubectl command
	// that edits an object: kubectl-edit, kubectl-patch, kubectl-label,
	// kubectl-set, kubectl-client-side-apply, kubectl-replace, and kubectl
	// itself for `kubectl apply --server-side`.
	handManagerPrefix = "kubectl"
	// restartManager is kubectl's for `kubectl rollout restart` (and
	// pause, resume): an operation, not drift; undoing a restart's
	// annotation would roll the pods a second time.
	restartManager = "kubectl-rollout"
)

// ByHand reports whether a managed-fields entry records a change made by
// hand with kubectl on the object itself (not on status or scale).
func ByHand(e metav1.ManagedFieldsEntry) bool {
	return e.Subresource == "" && strings.HasPrefix(e.Manager, handManagerPrefix) && e.Manager != restartManager
}

// ByHandUnder reports whether a kubectl entry of entries (see ByHand)
// owns a field under the path of field names given: ByHandUnder(entries,
// "spec", "template") tells a Deployment whose pod template was changed
// with kubectl. An entry that does not decode counts as owning nothing.
func ByHandUnder(entries []metav1.ManagedFieldsEntry, path ...string) bool {
	return Decode(entries).ByHandUnder(path...)
}

// Patch returns a merge patch that gives manager, as an apply, every field
// that kubectl owns on live, or nil when kubectl owns none it can take.
// Once manager owns them, its next apply removes those it does not set, as
// it removes any field it applied and then dropped: a port replaced with
// kubectl edit is removed, not kept beside the applied one. Every other
// manager's fields (controllers, Helm, an operator) stay theirs.
//
// The patch carries live's resourceVersion, so that a change made since
// the object was read makes it fail with a conflict instead of dropping
// another manager's new entry. kubectl's entries of another apiVersion than
// the one they join are left as they are: field paths are per version.
func Patch(live metav1.Object, manager string) ([]byte, error) {
	entries := live.GetManagedFields()
	target := -1
	for i, e := range entries {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			target = i
		}
	}
	var kept []metav1.ManagedFieldsEntry
	var owned *fieldpath.Set
	var joined metav1.ManagedFieldsEntry
	taken := false
	for i, e := range entries {
		switch {
		case i == target:
			continue
		case !ByHand(e):
			kept = append(kept, e)
			continue
		}
		if owned == nil {
			joined = e
			if target >= 0 {
				joined = entries[target]
			}
			joined.Manager, joined.Operation = manager, metav1.ManagedFieldsOperationApply
			set, err := fieldSet(joined.FieldsV1)
			if err != nil {
				return nil, err
			}
			owned = set
		}
		if e.APIVersion != joined.APIVersion {
			kept = append(kept, e)
			continue
		}
		set, err := fieldSet(e.FieldsV1)
		if err != nil {
			return nil, err
		}
		owned, taken = owned.Union(set), true
	}
	if !taken {
		return nil, nil
	}
	raw, err := owned.ToJSON()
	if err != nil {
		return nil, fmt.Errorf("encode the fields taken over: %w", err)
	}
	joined.FieldsType, joined.FieldsV1 = "FieldsV1", metav1.NewFieldsV1(string(raw))
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": live.GetResourceVersion(),
		"managedFields":   append(kept, joined),
	}}
	return json.Marshal(patch)
}

// fieldSet decodes a managed-fields entry's field set; nil is the empty set.
func fieldSet(f *metav1.FieldsV1) (*fieldpath.Set, error) {
	set := &fieldpath.Set{}
	if f.GetRawString() == "" {
		return set, nil
	}
	if err := set.FromJSON(f.GetRawReader()); err != nil {
		return nil, fmt.Errorf("decode managed fields: %w", err)
	}
	return set, nil
}

// OwnerOf returns the field manager of the first of entries that owns the
// field at path (field names: OwnerOf(entries, "spec", "replicas")), ""
// when none does or none decodes. Entries of subresources count: `kubectl
// scale` writes spec.replicas through the scale subresource.
func OwnerOf(entries []metav1.ManagedFieldsEntry, path ...string) string {
	return Decode(entries).OwnerOf(path...)
}

// OwnedKeys returns the keys of the map at path (field names:
// OwnedKeys(entries, m, "metadata", "labels")) that an entry of manager
// owns, on the object or through a subresource, applied or updated; nil
// when none does or none decodes. The API server gives an updater the
// fields its update changed, and a creator every field it sent, so a key
// that another manager set since (`kubectl label --overwrite`) is that
// manager's, and one set to the value it had is still its setter's.
func OwnedKeys(entries []metav1.ManagedFieldsEntry, manager string, path ...string) []string {
	return Decode(entries).OwnedKeys(manager, path...)
}

// Fields are an object's managed fields with each entry's field set
// decoded once, to ask several questions of: the rollout controller asks
// five of every Deployment its cache takes, and decoding is most of the
// cost. An entry that does not decode owns nothing.
type Fields []entryFields

// entryFields is one managed-fields entry, decoded.
type entryFields struct {
	manager string
	byHand  bool
	set     *fieldpath.Set
}

// Decode decodes entries once (see Fields).
func Decode(entries []metav1.ManagedFieldsEntry) Fields {
	out := make(Fields, 0, len(entries))
	for _, e := range entries {
		set, err := fieldSet(e.FieldsV1)
		if err != nil {
			set = &fieldpath.Set{}
		}
		out = append(out, entryFields{manager: e.Manager, byHand: ByHand(e), set: set})
	}
	return out
}

// ByHandUnder is the package's ByHandUnder of the entries f decoded.
func (f Fields) ByHandUnder(path ...string) bool {
	for _, e := range f {
		if e.byHand && !under(e.set, path).Empty() {
			return true
		}
	}
	return false
}

// OwnerOf is the package's OwnerOf of the entries f decoded.
func (f Fields) OwnerOf(path ...string) string {
	elements := make([]any, len(path))
	for i, name := range path {
		elements[i] = name
	}
	p, err := fieldpath.MakePath(elements...)
	if err != nil {
		return ""
	}
	for _, e := range f {
		if e.set.Has(p) {
			return e.manager
		}
	}
	return ""
}

// OwnedKeys is the package's OwnedKeys of the entries f decoded.
func (f Fields) OwnedKeys(manager string, path ...string) []string {
	var keys []string
	for _, e := range f {
		if e.manager != manager {
			continue
		}
		under(e.set, path).Iterate(func(p fieldpath.Path) {
			if len(p) > 0 && p[0].FieldName != nil && !slices.Contains(keys, *p[0].FieldName) {
				keys = append(keys, *p[0].FieldName)
			}
		})
	}
	return keys
}

// under returns the fields of set under the path of field names given,
// relative to it.
func under(set *fieldpath.Set, path []string) *fieldpath.Set {
	for _, name := range path {
		set = set.WithPrefix(fieldpath.PathElement{FieldName: &name})
	}
	return set
}
