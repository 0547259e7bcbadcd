package shard

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	gosync "sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"plimsoll.dev/plimsoll/contract"
)

// waitUntil polls cond until it holds, failing the test after a while.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// holders reads the holder of each sync's Lease.
func holders(t *testing.T, client *fake.Clientset, syncs []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range syncs {
		l, err := client.CoordinationV1().Leases("plimsoll").Get(context.Background(), contract.LeasePrefix+s, metav1.GetOptions{})
		if err == nil {
			out[s] = holderOf(l)
		}
	}
	return out
}

// TestKeepersShareTheSyncs: one replica takes every sync; a second one
// that joins gets its share only as the first releases each, and never a
// sync the first still works on; a sync held by a replica whose Lease
// stopped is taken once LeaseDuration has passed, not before.
func TestKeepersShareTheSyncs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	syncs := names("team", 10)
	var mu gosync.Mutex
	declared := slices.Clone(syncs)
	keeper := func(id string) *Keeper {
		return New(Config{Client: client, Namespace: "plimsoll", Identity: id, Clock: clk, Log: slog.New(slog.DiscardHandler),
			Syncs: func() []string {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(declared)
			}})
	}
	a := keeper("a")
	go func() { _ = a.Run(ctx) }()
	waitUntil(t, "a to hold every sync", func() bool { return len(a.Held()) == len(syncs) })

	// a works on the sync the assignment will give b: b cannot have it
	// until a is done.
	want := Assign(syncs, []string{"a", "b"})
	var busy string
	for _, s := range syncs {
		if want[s] == "b" {
			busy = s
			break
		}
	}
	done, ok := a.Hold(busy)
	if !ok {
		t.Fatalf("a does not hold %s", busy)
	}
	b := keeper("b")
	bctx, stopB := context.WithCancel(ctx)
	go func() { _ = b.Run(bctx) }()
	waitUntil(t, "b to take its other syncs", func() bool {
		return len(b.Held()) == len(loadsOf(want, "b"))-1
	})
	if slices.Contains(b.Held(), busy) || holders(t, client, syncs)[busy] != "a" {
		t.Fatalf("b took %s while a still works on it", busy)
	}
	done()
	waitUntil(t, "b to take "+busy, func() bool { return slices.Contains(b.Held(), busy) })
	if !maps.Equal(holders(t, client, syncs), want) {
		t.Errorf("holders %v, want the assignment %v", holders(t, client, syncs), want)
	}
	for _, s := range a.Held() {
		if slices.Contains(b.Held(), s) {
			t.Errorf("a and b both hold %s", s)
		}
	}

	// b leaves: a takes everything back at once.
	stopB()
	waitUntil(t, "a to hold every sync again", func() bool { return len(a.Held()) == len(syncs) })

	// A replica that died holding a sync: its Lease stops; the sync is
	// taken once a has seen it stand still for LeaseDuration.
	now := metav1.NewMicroTime(clk.Now())
	for _, l := range []*coordinationv1.Lease{
		{ObjectMeta: metav1.ObjectMeta{Name: ReplicaLease("dead"), Namespace: "plimsoll", Labels: map[string]string{contract.LabelReplica: "true"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("dead"), RenewTime: &now}},
	} {
		if _, err := client.CoordinationV1().Leases("plimsoll").Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	declared = append(declared, "orphan")
	mu.Unlock()
	orphan := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: contract.LeasePrefix + "orphan", Namespace: "plimsoll"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("dead"), RenewTime: &now}}
	if _, err := client.CoordinationV1().Leases("plimsoll").Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a to see both Leases", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, replica := a.seen[ReplicaLease("dead")]
		_, lease := a.seen[contract.LeasePrefix+"orphan"]
		return replica && lease
	})
	clk.Step(DefaultLeaseDuration - DefaultRetryPeriod)
	a.balance(ctx)
	if slices.Contains(a.Held(), "orphan") {
		t.Fatal("a took the sync of a replica before its Lease ran out")
	}
	clk.Step(2 * DefaultRetryPeriod)
	waitUntil(t, "a to take the orphan", func() bool { return slices.Contains(a.Held(), "orphan") })
}

// loadsOf names the syncs the assignment gives member.
func loadsOf(assignment map[string]string, member string) []string {
	var out []string
	for s, m := range assignment {
		if m == member {
			out = append(out, s)
		}
	}
	return out
}
