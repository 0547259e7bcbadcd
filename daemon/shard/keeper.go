package shard

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	gosync "sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"plimsoll.dev/plimsoll/contract"
)

// Timings of the Leases, and names.
const (
	// DefaultLeaseDuration is how long a replica that stopped renewing its
	// Lease counts as alive: its syncs move that long after it died.
	DefaultLeaseDuration = 15 * time.Second
	// DefaultRenewDeadline is how long a replica goes on writing without
	// renewing its Lease; past it, it stops writing for every sync, so that
	// it has stopped before another replica may take them.
	DefaultRenewDeadline = 10 * time.Second
	// DefaultRetryPeriod is how often a replica renews its Lease and looks
	// at the assignment.
	DefaultRetryPeriod = 2 * time.Second
	// ReplicaPrefix starts the name of each replica's Lease.
	ReplicaPrefix = "plimsoll-replica-"
	// releaseTimeout bounds the release of every Lease on the way out.
	releaseTimeout = 5 * time.Second
)

// Config wires a Keeper.
type Config struct {
	// Client reads and writes the Leases.
	Client kubernetes.Interface
	// Namespace holds the Leases: each replica's, and each sync's
	// (contract.LeasePrefix + the sync's name).
	Namespace string
	// Identity names this replica in the Leases; unique among the live
	// replicas.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod take their defaults
	// when zero; RenewDeadline must be shorter than LeaseDuration.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Syncs names the syncs to spread; every replica sees the same.
	Syncs func() []string
	// Gained is told of each sync this replica comes to hold.
	Gained func(name string)
	Log    *slog.Logger
	Clock  clock.WithTicker
}

// Keeper holds this replica's share of the syncs. A replica writes for a
// sync only while it holds the sync's Lease: it takes one that no replica
// holds (released, or never held), or that a replica held which stopped
// renewing its own Lease LeaseDuration ago (seen by this replica's watch,
// and confirmed by reading it again: a watch that lags does not kill a
// replica); it releases one that the assignment gives another live
// replica once its work in flight on it is done (see Hold). A replica
// that cannot renew its own Lease for RenewDeadline stops writing for
// every sync until it can.
type Keeper struct {
	cfg    Config
	leases coordinationlisters.LeaseLister

	mu   gosync.Mutex
	held map[string]*gate
	// releasing are the syncs whose Lease is being released; gone those
	// released because they are declared no more, whose Lease is to go.
	releasing, gone map[string]bool
	// seen is when each Lease was last seen to change, by name.
	seen      map[string]seenAt
	lastRenew time.Time
	lapsed    bool
	kick      chan struct{}
}

// gate is the hold on one sync: read-held by each piece of work on it,
// write-held while it is taken away.
type gate struct {
	gosync.RWMutex
	revoked bool
	// taken is the resourceVersion of the Lease as this replica took it
	// over: the watch may show it still, for a while.
	taken string
}

// seenAt is a resourceVersion of a Lease and when it was first seen.
type seenAt struct {
	version string
	at      time.Time
}

// New returns a Keeper.
func New(cfg Config) *Keeper {
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline <= 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod <= 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Keeper{cfg: cfg, held: map[string]*gate{}, releasing: map[string]bool{}, gone: map[string]bool{}, seen: map[string]seenAt{},
		kick: make(chan struct{}, 1)}
}

// ReplicaLease is the name of the Lease replica identity renews.
func ReplicaLease(identity string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(identity) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := ReplicaPrefix + strings.Trim(b.String(), "-.")
	if len(name) > 253 {
		name = name[:253]
	}
	return strings.TrimRight(name, "-.")
}

// Hold reports whether this replica holds sync name now and, when it
// does, keeps it held until release is called: a release of the sync
// waits for it. It never holds a sync while this replica's own Lease is
// not renewed.
func (k *Keeper) Hold(name string) (release func(), ok bool) {
	k.mu.Lock()
	g, lapsed := k.held[name], k.lapsed
	k.mu.Unlock()
	if g == nil || lapsed {
		return nil, false
	}
	g.RLock()
	if g.revoked {
		g.RUnlock()
		return nil, false
	}
	return g.RUnlock, true
}

// Owns reports whether this replica holds sync name now (see Hold).
func (k *Keeper) Owns(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.held[name] != nil && !k.lapsed
}

// Held returns the names of the syncs this replica holds.
func (k *Keeper) Held() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Collect(maps.Keys(k.held))
}

// Run renews this replica's Lease and keeps its share of the syncs until
// ctx ends; then it releases every sync it holds, and its own Lease.
func (k *Keeper) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(k.cfg.Client, 0, informers.WithNamespace(k.cfg.Namespace))
	informer := factory.Coordination().V1().Leases()
	_, _ = informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.observe(obj) },
		UpdateFunc: func(_, obj any) { k.observe(obj) },
		DeleteFunc: func(any) { k.poke() },
	})
	k.leases = informer.Lister()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		return fmt.Errorf("read the Leases of namespace %s: %w", k.cfg.Namespace, ctx.Err())
	}
	defer k.leave()
	if err := k.renew(ctx); err != nil {
		k.cfg.Log.Warn("renew this replica's Lease", "err", err)
	}
	ticker := k.cfg.Clock.NewTicker(k.cfg.RetryPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if err := k.renew(ctx); err != nil && ctx.Err() == nil {
				k.cfg.Log.Warn("renew this replica's Lease", "err", err)
			}
		case <-k.kick:
		}
		k.balance(ctx)
	}
}

// observe notes when a Lease changed, and looks at the assignment again.
func (k *Keeper) observe(obj any) {
	if l, ok := obj.(*coordinationv1.Lease); ok {
		k.mu.Lock()
		if s, ok := k.seen[l.Name]; !ok || s.version != l.ResourceVersion {
			k.seen[l.Name] = seenAt{version: l.ResourceVersion, at: k.cfg.Clock.Now()}
		}
		k.mu.Unlock()
	}
	k.poke()
}

// poke asks Run to look at the assignment now.
func (k *Keeper) poke() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// renew renews this replica's Lease, creating it the first time. A
// replica that has not renewed it for RenewDeadline stops writing for
// every sync (see lapse), and takes them again once it renews.
func (k *Keeper) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(k.cfg.Clock.Now())
	leases := k.cfg.Client.CoordinationV1().Leases(k.cfg.Namespace)
	name := ReplicaLease(k.cfg.Identity)
	patch := fmt.Sprintf(`{"spec":{"holderIdentity":%q,"renewTime":%q}}`, k.cfg.Identity, now.UTC().Format(metav1.RFC3339Micro))
	_, err := leases.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: k.cfg.Namespace, Labels: map[string]string{contract.LabelReplica: "true"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(k.cfg.Identity), LeaseDurationSeconds: ptr.To(int32(k.cfg.LeaseDuration / time.Second)),
				AcquireTime: &now, RenewTime: &now},
		}, metav1.CreateOptions{})
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err == nil {
		k.lastRenew = k.cfg.Clock.Now()
		if k.lapsed {
			k.cfg.Log.Info("this replica's Lease is renewed again; taking its syncs back", "identity", k.cfg.Identity)
		}
		k.lapsed = false
		return nil
	}
	if !k.lapsed && !k.lastRenew.IsZero() && k.cfg.Clock.Since(k.lastRenew) > k.cfg.RenewDeadline {
		k.lapseLocked()
	}
	return fmt.Errorf("renew Lease %s/%s: %w", k.cfg.Namespace, name, err)
}

// lapseLocked stops writing for every sync: this replica may be taken for
// dead by the others soon. k.mu is held.
func (k *Keeper) lapseLocked() {
	k.cfg.Log.Error("this replica's Lease was not renewed in time; writing nothing until it is", "identity", k.cfg.Identity,
		"renewDeadline", k.cfg.RenewDeadline)
	k.lapsed = true
	for name, g := range k.held {
		delete(k.held, name)
		go revoke(g)
	}
}

// revoke takes g away once the work in flight on it is done.
func revoke(g *gate) {
	g.Lock()
	g.revoked = true
	g.Unlock()
}

// leave releases every sync this replica holds, each once its work in
// flight is done, and deletes this replica's Lease: the others take the
// syncs at once rather than after LeaseDuration.
func (k *Keeper) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	k.mu.Lock()
	held := k.held
	k.held = map[string]*gate{}
	k.lapsed = true
	k.mu.Unlock()
	for name, g := range held {
		revoke(g)
		if err := k.clearHolder(ctx, name); err != nil {
			k.cfg.Log.Info("release the sync's Lease", "sync", name, "err", err)
		}
	}
	err := k.cfg.Client.CoordinationV1().Leases(k.cfg.Namespace).Delete(ctx, ReplicaLease(k.cfg.Identity), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		k.cfg.Log.Info("delete this replica's Lease", "err", err)
	}
}
