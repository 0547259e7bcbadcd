package apply

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// managed is a managed-fields entry of apiVersion v1 owning fields (FieldsV1
// JSON).
func managed(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: op, Subresource: subresource, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields),
	}
}

const (
	opApply  = metav1.ManagedFieldsOperationApply
	opUpdate = metav1.ManagedFieldsOperationUpdate
)

func liveWith(entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service"}}
	u.SetResourceVersion("42")
	u.SetManagedFields(entries)
	return u
}

// patchEntries decodes what takeover.Patch asks for: the resourceVersion
// it is conditional on and the new managed fields.
func patchEntries(t *testing.T, patch []byte) (string, []metav1.ManagedFieldsEntry) {
	t.Helper()
	var p struct {
		Metadata struct {
			ResourceVersion string                      `json:"resourceVersion"`
			ManagedFields   []metav1.ManagedFieldsEntry `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		t.Fatalf("decode patch %s: %v", patch, err)
	}
	return p.Metadata.ResourceVersion, p.Metadata.ManagedFields
}

func managers(entries []metav1.ManagedFieldsEntry) string {
	var out []string
	for _, e := range entries {
		s := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s+"="+e.FieldsV1.GetRawString())
	}
	return strings.Join(out, " ")
}

func TestTakeOverPatch(t *testing.T) {
	const (
		port80   = `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`
		port8080 = `{"f:spec":{"f:ports":{"k:{\"port\":8080,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`
		label    = `{"f:metadata":{"f:labels":{"f:by-hand":{}}}}`
		status   = `{"f:status":{"f:loadBalancer":{}}}`
		restart  = `{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/restartedAt":{}}}}`
	)
	tests := []struct {
		name string
		live *unstructured.Unstructured
		want string // managers after the patch; "" for no patch
	}{
		{
			name: "kubectl's entries join the sync's apply entry; others stay",
			live: liveWith(
				managed("plimsoll", opApply, "", port80),
				managed("kubectl-patch", opUpdate, "", port8080),
				managed("kube-controller-manager", opUpdate, "status", status),
				managed("kubectl-label", opUpdate, "", label),
				managed("ops-tool", opUpdate, "", `{"f:metadata":{"f:labels":{"f:team":{}}}}`),
			),
			want: `kube-controller-manager/Update/status={"f:status":{"f:loadBalancer":{}}} ` +
				`ops-tool/Update={"f:metadata":{"f:labels":{"f:team":{}}}} ` +
				`plimsoll/Apply={"f:metadata":{"f:labels":{"f:by-hand":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}},"k:{\"port\":8080,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`,
		},
		{
			name: "created by kubectl: its entry becomes the sync's",
			live: liveWith(managed("kubectl-client-side-apply", opUpdate, "", port8080)),
			want: `plimsoll/Apply={"f:spec":{"f:ports":{"k:{\"port\":8080,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`,
		},
		{
			name: "kubectl apply --server-side (manager kubectl, Apply)",
			live: liveWith(managed("plimsoll", opApply, "", port80), managed("kubectl", opApply, "", label)),
			want: `plimsoll/Apply={"f:metadata":{"f:labels":{"f:by-hand":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`,
		},
		{
			name: "a restart, a scale and a status write are not edits",
			live: liveWith(
				managed("plimsoll", opApply, "", port80),
				managed("kubectl-rollout", opUpdate, "", restart),
				managed("kubectl", opUpdate, "scale", `{"f:spec":{"f:replicas":{}}}`),
			),
		},
		{
			name: "kubectl's fields of another apiVersion stay kubectl's",
			live: liveWith(
				managed("plimsoll", opApply, "", port80),
				func() metav1.ManagedFieldsEntry {
					e := managed("kubectl-edit", opUpdate, "", label)
					e.APIVersion = "v2"
					return e
				}(),
			),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			git := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service"}}
			patch, err := New(Config{FieldManager: "plimsoll"}).takeOverPatchOf(&Item{Object: manifest.Object{Obj: git}, Live: tc.live})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if patch != nil {
					t.Fatalf("patch %s, want none", patch)
				}
				return
			}
			rv, entries := patchEntries(t, patch)
			if rv != "42" {
				t.Errorf("patch is conditional on resourceVersion %q, want 42", rv)
			}
			if got := managers(entries); got != tc.want {
				t.Errorf("managed fields after the patch:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestKubectlEditsKept checks that plimsoll.dev/kubectl-edits: keep, in Git
// or on the live object, leaves kubectl's fields alone: no patch takes them.
func TestKubectlEditsKept(t *testing.T) {
	keep := map[string]string{contract.AnnotationKubectlEdits: contract.KubectlEditsKept}
	edited := func() *unstructured.Unstructured {
		return liveWith(managed("plimsoll", opApply, "", `{"f:data":{}}`), managed("kubectl-label", opUpdate, "", `{"f:metadata":{}}`))
	}
	for _, tc := range []struct {
		name      string
		git, live map[string]string
		want      bool
	}{
		{name: "no annotation", want: true},
		{name: "kept in Git", git: keep},
		{name: "kept on the live object", live: keep},
		{name: "another value", git: map[string]string{contract.AnnotationKubectlEdits: "undo"}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			git := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
			git.SetAnnotations(tc.git)
			live := edited()
			live.SetAnnotations(tc.live)
			patch, err := New(Config{}).takeOverPatchOf(&Item{Object: manifest.Object{Obj: git}, Live: live})
			if err != nil {
				t.Fatal(err)
			}
			if got := patch != nil; got != tc.want {
				t.Errorf("patch %s; want one: %v", patch, tc.want)
			}
		})
	}
}
