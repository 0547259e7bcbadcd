package apply

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// steering is the steering field manager of the tests' Watches.
const steering = "plimsoll-rollout"

// watched is a watched object as slim keeps it, written by the managers
// of entries.
func watched(t *testing.T, rv string, generation int64, labels, annotations map[string]string, entries ...metav1.ManagedFieldsEntry) any {
	t.Helper()
	obj, err := NewWatches(nil, steering).slim(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "web", Namespace: "shop", ResourceVersion: rv, Generation: generation,
		Labels: labels, Annotations: annotations, ManagedFields: entries,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// fieldsEntry is a managed-fields entry of manager on subresource, last moved
// at second sec, owning the fields of fields.
func fieldsEntry(manager, subresource string, sec int, fields string) metav1.ManagedFieldsEntry {
	at := metav1.NewTime(time.Date(2026, 11, 27, 9, 0, sec, 0, time.UTC))
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: &at, Subresource: subresource, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

// TestWatchCountsChanges checks which updates count as a change: a new
// spec, labels or annotations, or any new resourceVersion of a kind
// without a generation; not a relist that found the same object, nor a
// status written by a controller.
func TestWatchCountsChanges(t *testing.T) {
	labels := map[string]string{"app": "web", "plimsoll.dev/sync": "shop"}
	for _, tc := range []struct {
		name       string
		old, obj   any
		wantChange bool
	}{
		{"relist, same object", watched(t, "10", 2, labels, nil), watched(t, "10", 2, labels, nil), false},
		{"status written", watched(t, "10", 2, labels, nil), watched(t, "11", 2, labels, nil), false},
		{"spec changed", watched(t, "10", 2, labels, nil), watched(t, "11", 3, labels, nil), true},
		{"label added", watched(t, "10", 2, labels, nil), watched(t, "11", 2, map[string]string{"app": "web", "plimsoll.dev/sync": "shop", "x": "y"}, nil), true},
		{"annotation changed", watched(t, "10", 2, labels, map[string]string{"a": "1"}), watched(t, "11", 2, labels, map[string]string{"a": "2"}), true},
		{"label moved to an annotation", watched(t, "10", 2, map[string]string{"a": "1", "plimsoll.dev/sync": "shop"}, nil), watched(t, "11", 2, map[string]string{"plimsoll.dev/sync": "shop"}, map[string]string{"a": "1"}), true},
		{"another sync's object", watched(t, "10", 2, map[string]string{"plimsoll.dev/sync": "blog"}, nil), watched(t, "11", 3, map[string]string{"plimsoll.dev/sync": "blog"}, nil), false},
		{"taken from another sync", watched(t, "10", 2, map[string]string{"plimsoll.dev/sync": "blog"}, nil), watched(t, "11", 2, labels, nil), true},
		{"given to another sync", watched(t, "10", 2, labels, nil), watched(t, "11", 2, map[string]string{"plimsoll.dev/sync": "blog"}, nil), true},
		{"no generation, new resourceVersion", watched(t, "10", 0, labels, nil), watched(t, "11", 0, labels, nil), true},
		{"not metadata", "tombstone", watched(t, "11", 2, labels, nil), true},
		{"a Service's selector swapped by the steering manager",
			watched(t, "10", 0, labels, nil, fieldsEntry("plimsoll", "", 1, `{"f:spec":{"f:ports":{}}}`), fieldsEntry(steering, "", 2, `{"f:spec":{"f:selector":{}}}`)),
			watched(t, "11", 0, labels, nil, fieldsEntry("plimsoll", "", 1, `{"f:spec":{"f:ports":{}}}`), fieldsEntry(steering, "", 5, `{"f:spec":{"f:selector":{}}}`)), false},
		{"the selector taken by the steering manager from the sync",
			watched(t, "10", 0, labels, nil, fieldsEntry("plimsoll", "", 1, `{"f:spec":{"f:ports":{},"f:selector":{}}}`)),
			watched(t, "11", 0, labels, nil, fieldsEntry("plimsoll", "", 1, `{"f:spec":{"f:ports":{}}}`), fieldsEntry(steering, "", 5, `{"f:spec":{"f:selector":{}}}`)), true},
		{"a port changed with kubectl edit",
			watched(t, "10", 0, labels, nil, fieldsEntry("plimsoll", "", 1, `{"f:spec":{"f:ports":{}}}`), fieldsEntry(steering, "", 2, `{"f:spec":{"f:selector":{}}}`)),
			watched(t, "11", 0, labels, nil, fieldsEntry("plimsoll", "", 1, `{"f:spec":{"f:ports":{}}}`), fieldsEntry(steering, "", 2, `{"f:spec":{"f:selector":{}}}`), fieldsEntry("kubectl-edit", "", 6, `{"f:spec":{"f:ports":{}}}`)), true},
		{"another manager writes again in the same second",
			watched(t, "10", 0, labels, nil, fieldsEntry("kubectl-edit", "", 6, `{"f:spec":{"f:ports":{}}}`)),
			watched(t, "11", 0, labels, nil, fieldsEntry("kubectl-edit", "", 6, `{"f:spec":{"f:ports":{}}}`)), true},
		{"the steering manager's status write",
			watched(t, "10", 0, labels, nil, fieldsEntry(steering, "status", 2, `{"f:status":{}}`)),
			watched(t, "11", 0, labels, nil, fieldsEntry(steering, "status", 7, `{"f:status":{}}`)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := NewWatches(nil, steering)
			ws.For("shop")
			ws.updated(tc.old, tc.obj)
			if got := ws.counter("shop").Load() == 1; got != tc.wantChange {
				t.Errorf("counted a change: %v, want %v", got, tc.wantChange)
			}
		})
	}
}

// TestSlimKeepsOnlyWhatIsJudged checks that a watched object keeps its
// identity, resourceVersion, generation and sync label, and 8-byte hashes
// in place of its labels, annotations and managed fields.
func TestSlimKeepsOnlyWhatIsJudged(t *testing.T) {
	big := map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(make([]byte, 4096))}
	obj := watched(t, "10", 2, map[string]string{"app": "web", "plimsoll.dev/sync": "shop"}, big,
		fieldsEntry("plimsoll", "", 1, `{"f:spec":{"f:ports":{}}}`)).(*metav1.PartialObjectMetadata)
	if obj.Name != "web" || obj.Namespace != "shop" || obj.ResourceVersion != "10" || obj.Generation != 2 {
		t.Errorf("slim lost the identity: %+v", obj.ObjectMeta)
	}
	if len(obj.Labels) != 1 || obj.Labels["plimsoll.dev/sync"] != "shop" {
		t.Errorf("slim kept labels %v, want only the sync label", obj.Labels)
	}
	if len(obj.ManagedFields) != 0 {
		t.Errorf("slim kept %d managed-fields entries", len(obj.ManagedFields))
	}
	for _, key := range []string{metaHashKey, writersHashKey, steeringHashKey} {
		if len(obj.Annotations[key]) != 8 {
			t.Errorf("annotation %s of %d bytes, want an 8-byte hash", key, len(obj.Annotations[key]))
		}
	}
	if len(obj.Annotations) != 3 {
		t.Errorf("slim kept annotations %v, want the three hashes", obj.Annotations)
	}
}
