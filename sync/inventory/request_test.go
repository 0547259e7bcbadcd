package inventory

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
)

// TestRequest: a request sets the annotation on an existing record and
// keeps it through a Save; with no record yet it writes nothing.
func TestRequest(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := NewStore(client, "plimsoll-system", "default")
	at := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)

	if err := store.Request(ctx, at); err != nil {
		t.Fatalf("Request without a record: %v", err)
	}
	if _, err := client.CoreV1().ConfigMaps("plimsoll-system").Get(ctx, "plimsoll-sync-default", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a request without a record created one: %v", err)
	}

	if _, err := store.Save(ctx, Record{Status: Status{State: contract.SyncSynced, Commit: "abc"}, Inventory: Inventory{}}); err != nil {
		t.Fatal(err)
	}
	if err := store.Request(ctx, at); err != nil {
		t.Fatalf("Request: %v", err)
	}
	if _, err := store.Save(ctx, Record{Status: Status{State: contract.SyncSynced, Commit: "def"}, Inventory: Inventory{}}); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps("plimsoll-system").Get(ctx, "plimsoll-sync-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Annotations[contract.AnnotationRequestedAt]; got != "2026-11-23T16:00:00Z" {
		t.Errorf("%s = %q after a Save, want the request's time", contract.AnnotationRequestedAt, got)
	}
	if got := cm.Annotations[contract.AnnotationCommit]; got != "def" {
		t.Errorf("commit %q, want def", got)
	}
}

// TestSpentRewind: an acceptance is read with the record; a Save that
// spends it removes it, but not one a person set meanwhile, and a Save
// that spends none leaves it.
func TestSpentRewind(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := NewStore(client, "plimsoll-system", "default")
	accept := func(commit string) {
		t.Helper()
		patch := []byte(`{"metadata":{"annotations":{"` + contract.AnnotationAcceptRewind + `":"` + commit + `"}}}`)
		if _, err := client.CoreV1().ConfigMaps("plimsoll-system").Patch(ctx, "plimsoll-sync-default", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stored := func() string {
		t.Helper()
		cm, err := client.CoreV1().ConfigMaps("plimsoll-system").Get(ctx, "plimsoll-sync-default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Annotations[contract.AnnotationAcceptRewind]
	}
	save := func(rec Record) {
		t.Helper()
		if _, err := store.Save(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	save(Record{Status: Status{State: contract.SyncHeld, Commit: "aaa"}, Inventory: Inventory{}})
	accept("bbbbbbb")
	rec, err := store.Load(ctx)
	if err != nil || rec.AcceptRewind != "bbbbbbb" {
		t.Fatalf("Load = %q, %v; want the acceptance bbbbbbb", rec.AcceptRewind, err)
	}

	save(Record{Status: Status{State: contract.SyncHeld, Commit: "aaa", Message: "still held"}, Inventory: Inventory{}})
	if got := stored(); got != "bbbbbbb" {
		t.Errorf("after a Save that spends nothing: %q, want bbbbbbb", got)
	}
	accept("ccccccc") // a person accepts another commit while the sync runs
	save(Record{Status: Status{State: contract.SyncSynced, Commit: "bbb"}, Inventory: Inventory{}, SpentRewind: "bbbbbbb"})
	if got := stored(); got != "ccccccc" {
		t.Errorf("after spending bbbbbbb: %q, want the newer ccccccc kept", got)
	}
	save(Record{Status: Status{State: contract.SyncSynced, Commit: "ccc"}, Inventory: Inventory{}, SpentRewind: "ccccccc"})
	if got := stored(); got != "" {
		t.Errorf("after spending ccccccc: %q, want it removed", got)
	}
}

// TestAcceptRewind: only the commit the sync holds can be accepted, by
// its full hash or a prefix of at least 7 digits; the annotation then
// holds the full hash.
func TestAcceptRewind(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	store := NewStore(client, "plimsoll-system", "default")
	const held = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
	save := func(st Status) {
		t.Helper()
		if _, err := store.Save(ctx, Record{Status: st, Inventory: Inventory{}}); err != nil {
			t.Fatal(err)
		}
	}
	save(Status{State: contract.SyncSynced, Commit: "9f8e7d6", FetchedCommit: "9f8e7d6", Message: "applied 9f8e7d6"})
	if _, err := store.AcceptRewind(ctx, "9f8e7d6"); err == nil || err.Error() != `sync default holds no commit (status "Synced"): applied 9f8e7d6` {
		t.Errorf("accept while Synced: %v", err)
	}
	save(Status{State: contract.SyncHeld, Commit: "9f8e7d6", FetchedCommit: held, Message: "commit 1a2b3c4 held: ..."})
	for accept, want := range map[string]string{
		"1a2b3c":  `commit "1a2b3c": give at least 7 hex digits of the held commit`,
		"2b3c4d5": "sync default holds commit " + held + ", not 2b3c4d5: commit 1a2b3c4 held: ...",
	} {
		if _, err := store.AcceptRewind(ctx, accept); err == nil || err.Error() != want {
			t.Errorf("accept %s: error %v, want %q", accept, err, want)
		}
	}
	got, err := store.AcceptRewind(ctx, "1A2B3C4")
	if err != nil || got != held {
		t.Fatalf("accept 1A2B3C4 = %q, %v; want %s", got, err, held)
	}
	rec, err := store.Load(ctx)
	if err != nil || rec.AcceptRewind != held {
		t.Errorf("record's acceptance %q, %v; want %s", rec.AcceptRewind, err, held)
	}
}
