package inventory

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
