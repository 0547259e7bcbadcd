package apply

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// TestHandedRejection: an immutable field of a Deployment handed to the
// rollout controller is refused with the way to change it, never with the
// advice to force a recreation; any other refusal reads as Rejection's.
func TestHandedRejection(t *testing.T) {
	it := &Item{Object: manifest.Object{Origin: manifest.Origin{File: "web.yaml", Doc: 1},
		Obj: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "team"}}}}}
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	immutable := apierrors.NewInvalid(gk, "web", field.ErrorList{field.Invalid(field.NewPath("spec", "selector"), "x", "field is immutable")})
	got := handedRejection(it, immutable).Error()
	for _, want := range []string{"web.yaml", "spec.selector", "field is immutable", "not deleted and created again", "under another name"} {
		if !strings.Contains(got, want) {
			t.Errorf("refusal %q does not say %q", got, want)
		}
	}
	if strings.Contains(got, "to delete and recreate it") {
		t.Errorf("refusal %q advises a forced recreation", got)
	}
	replicas := apierrors.NewInvalid(gk, "web", field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), -1, "must be greater than or equal to 0")})
	if got, want := handedRejection(it, replicas).Error(), Rejection(it, "dry-run", replicas).Error(); got != want {
		t.Errorf("refusal %q, want Rejection's %q", got, want)
	}
}
