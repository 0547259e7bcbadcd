package apply

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// watched is a watched object as slim keeps it.
func watched(t *testing.T, rv string, generation int64, labels, annotations map[string]string) any {
	t.Helper()
	obj, err := slim(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "web", Namespace: "shop", ResourceVersion: rv, Generation: generation,
		Labels: labels, Annotations: annotations,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return obj
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := NewWatches(nil)
			ws.For("shop")
			ws.updated(tc.old, tc.obj)
			if got := ws.counter("shop").Load() == 1; got != tc.wantChange {
				t.Errorf("counted a change: %v, want %v", got, tc.wantChange)
			}
		})
	}
}

// TestSlimKeepsOnlyWhatIsJudged checks that a watched object keeps its
// identity, resourceVersion, generation and sync label, and a hash in
// place of its labels and annotations.
func TestSlimKeepsOnlyWhatIsJudged(t *testing.T) {
	big := map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(make([]byte, 4096))}
	obj := watched(t, "10", 2, map[string]string{"app": "web", "plimsoll.dev/sync": "shop"}, big).(*metav1.PartialObjectMetadata)
	if obj.Name != "web" || obj.Namespace != "shop" || obj.ResourceVersion != "10" || obj.Generation != 2 {
		t.Errorf("slim lost the identity: %+v", obj.ObjectMeta)
	}
	if len(obj.Labels) != 1 || obj.Labels["plimsoll.dev/sync"] != "shop" || len(obj.Annotations) != 1 || len(obj.Annotations[metaHashKey]) != 8 {
		t.Errorf("slim kept labels %v and annotations %d bytes, want only the sync label and an 8-byte hash", obj.Labels, len(obj.Annotations[metaHashKey]))
	}
}
