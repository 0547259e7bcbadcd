package takeover

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
		APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestByHandUnder(t *testing.T) {
	const (
		limits  = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:resources":{"f:limits":{".":{},"f:cpu":{}}}}}}}}}`
		label   = `{"f:metadata":{"f:labels":{"f:by-hand":{}}}}`
		minimum = `{"f:spec":{"f:minReadySeconds":{}}}`
		restart = `{"f:spec":{"f:template":{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/restartedAt":{}}}}}}`
	)
	for _, tc := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    bool
	}{
		{"kubectl set resources", []metav1.ManagedFieldsEntry{entry("plimsoll", "", `{"f:spec":{}}`), entry("kubectl-set", "", limits)}, true},
		{"kubectl label on the Deployment", []metav1.ManagedFieldsEntry{entry("kubectl-label", "", label)}, false},
		{"kubectl edit of another spec field", []metav1.ManagedFieldsEntry{entry("kubectl-edit", "", minimum)}, false},
		{"another tool's template field", []metav1.ManagedFieldsEntry{entry("ops-tool", "", limits)}, false},
		{"kubectl rollout restart", []metav1.ManagedFieldsEntry{entry("kubectl-rollout", "", restart)}, false},
		{"kubectl scale", []metav1.ManagedFieldsEntry{entry("kubectl", "scale", `{"f:spec":{"f:replicas":{}}}`)}, false},
		{"no entries", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ByHandUnder(tc.entries, "spec", "template"); got != tc.want {
				t.Errorf("ByHandUnder = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOwnerOf finds who last set a Deployment's replicas: the rollout
// controller's own write, or kubectl scale through the scale subresource.
func TestOwnerOf(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "plimsoll-rollout", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{}}}}}`)}},
		{Manager: "kubectl-scale", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "scale",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
	}
	if got := OwnerOf(entries, "spec", "replicas"); got != "kubectl-scale" {
		t.Errorf("owner of spec.replicas = %q, want kubectl-scale", got)
	}
	if got := OwnerOf(entries, "spec", "paused"); got != "" {
		t.Errorf("owner of spec.paused = %q, want none", got)
	}
	if got := OwnerOf(entries[:1], "spec", "replicas"); got != "" {
		t.Errorf("owner of spec.replicas without kubectl's entry = %q, want none", got)
	}
}

// TestOwnedKeys lists the labels and annotations one manager owns across
// its entries (the object's and the status subresource's), and no other
// manager's.
func TestOwnedKeys(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		entry("plimsoll-rollout", "", `{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:tier":{}},"f:annotations":{"f:team":{}}},"f:spec":{"f:replicas":{}}}`),
		entry("plimsoll-rollout", "status", `{"f:metadata":{"f:annotations":{"f:team":{},"f:plimsoll.dev/phase":{}}}}`),
		entry("kubectl-label", "", `{"f:metadata":{"f:labels":{"f:by-hand":{}}}}`),
		entry("kube-controller-manager", "status", `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`),
		entry("plimsoll-rollout", "", `not json`),
	}
	for _, tc := range []struct {
		manager, field string
		want           []string
	}{
		{"plimsoll-rollout", "labels", []string{"app", "tier"}},
		{"plimsoll-rollout", "annotations", []string{"team", "plimsoll.dev/phase"}},
		{"kubectl-label", "labels", []string{"by-hand"}},
		{"kubectl-label", "annotations", nil},
		{"nobody", "labels", nil},
	} {
		got := OwnedKeys(entries, tc.manager, "metadata", tc.field)
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("OwnedKeys(%s, metadata.%s) = %q, want %q", tc.manager, tc.field, got, want)
		}
	}
}
