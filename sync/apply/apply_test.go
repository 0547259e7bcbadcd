package apply

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

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

// TestDryRunHanded: a handed-over Deployment is dry-run as one update of
// the live object the plan found, or one create when it found none (a
// blue-green workload's); the other verb follows only when the first
// finds the object there after all, or gone.
func TestDryRunHanded(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deployment := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": "team"}}}
	}
	for _, tt := range []struct {
		name string
		// live is whether the plan found the object; exists whether it
		// does exist.
		live, exists bool
		want         []string
	}{
		{"a rolling workload's", true, true, []string{"update"}},
		{"a blue-green workload's", false, false, []string{"create"}},
		{"one the sync has not labelled yet", false, true, []string{"create", "update"}},
		{"one deleted since the plan", true, false, []string{"update", "create"}},
	} {
		var objs []runtime.Object
		if tt.exists {
			objs = append(objs, deployment("web"))
		}
		dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{gvr: "DeploymentList"}, objs...)
		var verbs []string
		dyn.PrependReactor("*", "deployments", func(action k8stesting.Action) (bool, runtime.Object, error) {
			verbs = append(verbs, action.GetVerb())
			return false, nil, nil
		})
		it := &Item{Object: manifest.Object{Obj: deployment("web")},
			Mapping: &meta.RESTMapping{Resource: gvr, Scope: meta.RESTScopeNamespace}}
		if tt.live {
			it.Live = deployment("web")
		}
		a := New(Config{Dynamic: dyn})
		if err := a.dryRunHanded(context.Background(), it); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if !slices.Equal(verbs, tt.want) {
			t.Errorf("%s: requests %v, want %v", tt.name, verbs, tt.want)
		}
	}
}
