package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/takeover"
)

// takeOverPatchOf returns the patch that gives the sync the fields kubectl
// owns on the item's live object (see takeover.Patch), or nil when there
// are none to take or Git or the live object asks to keep them
// (contract.AnnotationKubectlEdits). Such fields may be ones Git never set
// (a port added with kubectl edit, a label added with kubectl label), which
// the test for drift cannot see, so an item with a patch is restored.
func (a *Applier) takeOverPatchOf(it *Item) ([]byte, error) {
	if it.Live == nil || keepsKubectlEdits(it.Object.Obj) || keepsKubectlEdits(it.Live) {
		return nil, nil
	}
	return takeover.Patch(it.Live, a.cfg.FieldManager)
}

func keepsKubectlEdits(obj *unstructured.Unstructured) bool {
	return obj.GetAnnotations()[contract.AnnotationKubectlEdits] == contract.KubectlEditsKept
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
