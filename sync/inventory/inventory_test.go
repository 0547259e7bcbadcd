package inventory

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/manifest"
)

func TestInventoryRoundTrip(t *testing.T) {
	inv := Inventory{}
	for _, e := range []Entry{
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web", Hash: "aa"},
		{APIVersion: "v1", Kind: "Namespace", Name: "team-a", Hash: "bb"},
	} {
		inv[e.Key()] = e
	}
	text := inv.String()
	want := "aa apps/v1 Deployment default web\nbb v1 Namespace - team-a\n"
	if text != want {
		t.Fatalf("Inventory.String() = %q, want %q", text, want)
	}
	back, err := ParseInventory(text)
	if err != nil {
		t.Fatalf("ParseInventory: %v", err)
	}
	if len(back) != 2 || back[manifest.Key{Group: "apps", Kind: "Deployment", Namespace: "default", Name: "web"}].Hash != "aa" ||
		back[manifest.Key{Kind: "Namespace", Name: "team-a"}].Hash != "bb" {
		t.Errorf("ParseInventory(%q) = %v", text, back)
	}
	if _, err := ParseInventory("aa v1 ConfigMap\n"); err == nil || !strings.Contains(err.Error(), "line 1: want 5 fields") {
		t.Errorf("ParseInventory of a short line: error %v, want it to name line 1 and the fields", err)
	}
}

// TestSaveSkipsUnchangedRecord checks the write-once rule: saving the record
// that is already stored makes no write. The fake clientset only counts the
// calls here; the e2e suite shows the same against a real API server.
func TestSaveSkipsUnchangedRecord(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := NewStore(client, "plimsoll", "default")
	rec := Record{Status: Status{State: contract.SyncSynced, Commit: "abc", FetchedCommit: "abc", Message: "applied"}, Inventory: Inventory{}}

	wrote, err := store.Save(ctx, rec)
	if err != nil || !wrote {
		t.Fatalf("first Save = %v, %v; want a write", wrote, err)
	}
	client.ClearActions()
	wrote, err = store.Save(ctx, rec)
	if err != nil || wrote {
		t.Fatalf("second Save of the same record = %v, %v; want no write", wrote, err)
	}
	for _, a := range client.Actions() {
		if _, ok := a.(k8stesting.UpdateAction); ok {
			t.Errorf("unchanged record was written: %v", a)
		}
	}

	rec.Status.Message = "applied again"
	if wrote, err := store.Save(ctx, rec); err != nil || !wrote {
		t.Fatalf("Save of a changed record = %v, %v; want a write", wrote, err)
	}
	got, err := store.Load(ctx)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got.Status != rec.Status {
		t.Errorf("Load().Status = %+v, want %+v", got.Status, rec.Status)
	}
	cm, err := client.CoreV1().ConfigMaps("plimsoll").Get(ctx, "plimsoll-sync-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Annotations[contract.AnnotationSyncStatus] != contract.SyncSynced || cm.Labels[contract.LabelSync] != "default" {
		t.Errorf("ConfigMap annotations %v labels %v", cm.Annotations, cm.Labels)
	}
}

// TestSaveTemplates keeps the commit's template hashes in the record:
// saved as sorted lines and loaded back, a StatefulSet's by its kind too;
// a record saved without them
// keeps the stored ones; an empty set removes them.
func TestSaveTemplates(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := NewStore(client, "plimsoll", "default")
	rec := Record{Status: Status{State: contract.SyncSynced, Commit: "abc"}, Inventory: Inventory{},
		Templates: map[string]string{"shop/web": "4ca1c2c2eb", "default/api": "759b78795a", "StatefulSet/shop/db": "8e9cc1791e"}}
	if _, err := store.Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	data := func() string {
		cm, err := client.CoreV1().ConfigMaps("plimsoll").Get(ctx, "plimsoll-sync-default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data[DataTemplates]
	}
	if got, want := data(), "StatefulSet shop/db 8e9cc1791e\ndefault api 759b78795a\nshop web 4ca1c2c2eb\n"; got != want {
		t.Errorf("data %s = %q, want %q", DataTemplates, got, want)
	}
	got, err := store.Load(ctx)
	if err != nil || !maps.Equal(got.Templates, rec.Templates) {
		t.Errorf("Load().Templates = %v, %v; want %v", got.Templates, err, rec.Templates)
	}

	rec.Templates, rec.Status.Message = nil, "a status of its own"
	if _, err := store.Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := data(); got == "" {
		t.Error("a record saved without templates dropped the stored ones")
	}
	rec.Templates = map[string]string{}
	if _, err := store.Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := data(); got != "" {
		t.Errorf("a commit without Deployments keeps templates %q", got)
	}
	if got := ParseTemplates("shop web\nshop api 4ca1c2c2eb extra\ndefault web 1234567890\n"); len(got) != 1 || got["default/web"] != "1234567890" {
		t.Errorf("ParseTemplates keeps %v, want only default/web", got)
	}
}

// TestLoadDamagedRecord: a record whose inventory does not parse is read
// with its status and the reason in Lost, and saving it with no inventory
// keeps the stored one; a missing record is Missing.
func TestLoadDamagedRecord(t *testing.T) {
	ctx := context.Background()
	damaged := "abc v1 ConfigMap app config\nnot an entry\n"
	client := fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "plimsoll-sync-default", Namespace: "plimsoll",
			Annotations: map[string]string{contract.AnnotationSyncStatus: contract.SyncSynced, contract.AnnotationCommit: "abc"}},
		Data: map[string]string{DataInventory: damaged},
	})
	store := NewStore(client, "plimsoll", "default")
	rec, err := store.Load(ctx)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if rec.Status.State != contract.SyncSynced || rec.Status.Commit != "abc" || rec.Inventory != nil {
		t.Errorf("Load() = %+v; want the status read and no inventory", rec)
	}
	if !strings.Contains(rec.Lost, "plimsoll/plimsoll-sync-default") || !strings.Contains(rec.Lost, "line 2") {
		t.Errorf("Lost = %q; want the record and the line named", rec.Lost)
	}
	rec.Status.State, rec.Status.Message = contract.SyncFailed, "cannot rebuild"
	if _, err := store.Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps("plimsoll").Get(ctx, "plimsoll-sync-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data[DataInventory] != damaged || cm.Annotations[contract.AnnotationSyncStatus] != contract.SyncFailed {
		t.Errorf("after Save: inventory %q, status %q; want the inventory kept and the status written", cm.Data[DataInventory], cm.Annotations[contract.AnnotationSyncStatus])
	}

	missing, err := NewStore(client, "plimsoll", "other").Load(ctx)
	if err != nil || missing.Lost != Missing {
		t.Errorf("Load of a missing record = %+v, %v; want Lost %q", missing, err, Missing)
	}
}
