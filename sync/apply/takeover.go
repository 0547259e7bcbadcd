package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"plimsoll.dev/plimsoll/contract"
)

// Field managers whose fields a sync takes over.
const (
	// handManagerPrefix begins the field manager of every kubectl command
	// that edits an object: kubectl-edit, kubectl-patch, kubectl-label,
	// kubectl-client-side-apply, kubectl-replace, and kubectl itself for
	// `kubectl apply --server-side`.
	handManagerPrefix = "kubectl"
	// restartManager is kubectl's for `kubectl rollout restart`: a restart
	// is an operation, not drift, and undoing its annotation would roll
	// the pods a second time.
	restartManager = "kubectl-rollout"
)

// byHand reports whether a managed-fields entry records a change made by
// hand with kubectl on the object itself (not on status or scale).
func byHand(e metav1.ManagedFieldsEntry) bool {
	return e.Subresource == "" && strings.HasPrefix(e.Manager, handManagerPrefix) && e.Manager != restartManager
}

// takeOverPatchOf returns the patch that gives the sync the fields kubectl
// owns on the item's live object (see takeOverPatch), or nil when there
// are none to take or Git or the live object asks to keep them
// (contract.AnnotationKubectlEdits). Such fields may be ones Git never set
// (a port added with kubectl edit, a label added with kubectl label), which
// the test for drift cannot see, so an item with a patch is restored.
func (a *Applier) takeOverPatchOf(it *Item) ([]byte, error) {
	if it.Live == nil || keepsKubectlEdits(it.Object.Obj) || keepsKubectlEdits(it.Live) {
		return nil, nil
	}
	return takeOverPatch(it.Live, a.cfg.FieldManager)
}

func keepsKubectlEdits(obj *unstructured.Unstructured) bool {
	return obj.GetAnnotations()[contract.AnnotationKubectlEdits] == contract.KubectlEditsKept
}

// takeOverPatch returns a merge patch that gives manager, as an apply,
// every field that kubectl owns on live, or nil when kubectl owns none it
// can take (see below).
// Once the sync owns them, its next apply removes those Git does not set,
// as it removes any field it applied and Git dropped: a port replaced with
// kubectl edit is removed, not kept beside Git's. Every other manager's
// fields (controllers, Helm, the rollout controller) stay theirs.
//
// The patch carries live's resourceVersion, so that a change made since
// the object was read makes it fail with a conflict instead of dropping
// another manager's new entry. kubectl's entries of another apiVersion than
// the one they join are left as they are: field paths are per version.
func takeOverPatch(live *unstructured.Unstructured, manager string) ([]byte, error) {
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
		case !byHand(e):
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

// takeOver makes the sync the owner of the fields kubectl owns on the live
// objects of items (the patches the plan made), but for those handed
// elsewhere (skip). It runs before
// the dry-run, so that the dry-run removes those of kubectl's fields that
// Git does not set, as the apply will, and refuses what cannot be removed
// (an immutable field) before anything is applied. It writes nothing but
// managed fields: what the objects hold, and what runs, is unchanged.
//
// A conflict (the object changed since the plan read it) leaves kubectl's
// fields where they are: the apply still restores what Git sets, and the
// next sync, seeing kubectl's fields again, takes them over then.
func (a *Applier) takeOver(ctx context.Context, items []*Item, skip func(*Item) bool) error {
	return a.forEach(ctx, items, func(ctx context.Context, it *Item) error {
		if it.takeOver == nil || (skip != nil && skip(it)) {
			return nil
		}
		_, err := a.resource(it).Patch(ctx, it.Object.Obj.GetName(), types.MergePatchType, it.takeOver, metav1.PatchOptions{FieldManager: a.cfg.FieldManager})
		if err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("take over the fields kubectl set on %s: %w", it.Key(), err)
		}
		return nil
	})
}
