package workload

import (
	"context"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
)

// statusConfigMap is a ConfigMap in ns named name, labelled for sync,
// recording status when it is set, with an inventory of two objects.
func statusConfigMap(ns, name, sync, status string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{contract.LabelSync: sync}, Annotations: map[string]string{}},
		Data: map[string]string{"inventory": "h1 v1 ConfigMap web settings\nh2 apps/v1 Deployment web api\n"}}
	if status != "" {
		cm.Annotations[contract.AnnotationSyncStatus] = status
	}
	return cm
}

// TestFindSyncs checks which ConfigMaps are syncs' records: those named
// after their plimsoll.dev/sync label, with a status; not the ConfigMaps
// a sync applied, which carry the label too.
func TestFindSyncs(t *testing.T) {
	client := fake.NewClientset(
		statusConfigMap("web", "plimsoll-sync-platform", "platform", contract.SyncSynced),
		statusConfigMap("web", "plimsoll-sync-team", "team", contract.SyncFailed),
		statusConfigMap("web", "settings", "platform", ""),             // applied by sync platform
		statusConfigMap("web", "plimsoll-sync-other", "platform", "x"), // not named after its label
		statusConfigMap("api", "plimsoll-sync-platform", "platform", contract.SyncHeld),
	)
	tests := []struct {
		name, ns, sync string
		want           []string
	}{
		{"every sync of a namespace, sorted", "web", "", []string{"web/platform Synced", "web/team Failed"}},
		{"every namespace", metav1.NamespaceAll, "", []string{"api/platform Held", "web/platform Synced", "web/team Failed"}},
		{"one sync by name", metav1.NamespaceAll, "team", []string{"web/team Failed"}},
		{"none", "db", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindSyncs(context.Background(), client, tt.ns, tt.sync)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Namespace+"/"+s.Name+" "+s.Status)
			}
			if len(names) != len(tt.want) {
				t.Fatalf("found %v, want %v", names, tt.want)
			}
			for i := range names {
				if names[i] != tt.want[i] {
					t.Errorf("found %v, want %v", names, tt.want)
				}
			}
		})
	}
}

// TestSyncOf reads a record's status, its blocked writer and the size of
// its inventory, and says why an inventory that does not parse cannot be
// read, as `plimsoll status` shows it.
func TestSyncOf(t *testing.T) {
	cm := statusConfigMap("web", "plimsoll-sync-platform", "platform", contract.SyncSynced)
	cm.Annotations[contract.AnnotationCommit] = "3f2a9c1e"
	cm.Annotations[contract.AnnotationBlockedWriter] = "host_2 since 12:00: the sync is held by host_1"
	s, ok := SyncOf(cm)
	if !ok || s.Commit != "3f2a9c1e" || s.Objects != 2 || s.RecordDamage != "" || s.BlockedWriter == "" {
		t.Errorf("SyncOf = %+v (ok %v), want commit 3f2a9c1e, 2 objects, a blocked writer and no damage", s, ok)
	}
	cm.Data["inventory"] = "h1 v1 ConfigMap\n"
	s, _ = SyncOf(cm)
	if want := "the inventory of web/plimsoll-sync-platform does not parse: line 1: want 5 fields"; !strings.HasPrefix(s.RecordDamage, want) {
		t.Errorf("RecordDamage = %q, want it to start with %q", s.RecordDamage, want)
	}
}

// TestFindOwners names, for each sync, the holder of its Lease beside
// its record; none for a sync whose Lease nobody holds, or that has none.
func TestFindOwners(t *testing.T) {
	holder := func(ns, name, id string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &id}}
	}
	client := fake.NewClientset(
		holder("plimsoll", "plimsoll-team-a", "plimsoll-7d9c5-x2z4q_1"),
		holder("plimsoll", "plimsoll-team-b", ""),
		holder("other", "plimsoll-team-c", "elsewhere_1"),
	)
	syncs := []Sync{{Namespace: "plimsoll", Name: "team-a"}, {Namespace: "plimsoll", Name: "team-b"},
		{Namespace: "plimsoll", Name: "team-c"}, {Namespace: "other", Name: "team-c"}}
	FindOwners(context.Background(), client, metav1.NamespaceAll, syncs)
	want := []string{"plimsoll-7d9c5-x2z4q_1", "", "", "elsewhere_1"}
	for i, s := range syncs {
		if s.Owner != want[i] {
			t.Errorf("owner of %s/%s = %q, want %q", s.Namespace, s.Name, s.Owner, want[i])
		}
	}
}
