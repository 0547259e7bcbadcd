package shard

import (
	"context"
	"maps"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"

	"plimsoll.dev/plimsoll/contract"
)

// balance takes the syncs the assignment gives this replica that it can
// take, and releases those it gives another.
func (k *Keeper) balance(ctx context.Context) {
	k.mu.Lock()
	lapsed := k.lapsed
	k.mu.Unlock()
	if lapsed || ctx.Err() != nil {
		return
	}
	syncs := k.cfg.Syncs()
	want := Assign(syncs, k.liveReplicas())
	wanted := map[string]bool{}
	for _, name := range syncs {
		wanted[name] = true
		lease, _ := k.leases.Leases(k.cfg.Namespace).Get(contract.LeasePrefix + name)
		holder := holderOf(lease)
		k.mu.Lock()
		g, releasing := k.held[name], k.releasing[name]
		k.mu.Unlock()
		switch {
		case releasing:
		case want[name] == k.cfg.Identity && g == nil:
			if lease == nil || holder == "" || holder == k.cfg.Identity || k.dead(ctx, lease) {
				k.take(ctx, name, lease)
			}
		case want[name] != k.cfg.Identity && (g != nil || holder == k.cfg.Identity):
			k.release(name, "the assignment gives it to "+want[name], false)
		case g != nil && holder != k.cfg.Identity && lease != nil && lease.ResourceVersion != g.taken:
			k.cfg.Log.Error("another replica took a sync this one held", "sync", name, "holder", holder)
			k.drop(name)
		}
	}
	for _, name := range k.Held() {
		if !wanted[name] {
			k.release(name, "it is declared no more", true)
		}
	}
	k.forgetGone(ctx, wanted)
}

// liveReplicas names the replicas whose Leases are renewed: this one, and
// each whose Lease this replica saw change within LeaseDuration.
func (k *Keeper) liveReplicas() []string {
	live := []string{k.cfg.Identity}
	replicas, _ := labels.NewRequirement(contract.LabelReplica, selection.Exists, nil)
	leases, _ := k.leases.Leases(k.cfg.Namespace).List(labels.NewSelector().Add(*replicas))
	for _, l := range leases {
		holder := holderOf(l)
		if holder == "" || holder == k.cfg.Identity || k.staleSeen(l) {
			continue
		}
		live = append(live, holder)
	}
	return live
}

// staleSeen reports whether l has not been seen to change for
// LeaseDuration.
func (k *Keeper) staleSeen(l *coordinationv1.Lease) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.seen[l.Name]
	return ok && s.version == l.ResourceVersion && k.cfg.Clock.Since(s.at) > k.cfg.LeaseDuration
}

// dead reports whether the holder of a sync's Lease is gone: the Lease of
// the replica that holds it (or, for a holder that has none, a daemon of
// one sync, the sync's Lease itself) was not renewed for LeaseDuration as
// this replica saw, and still is not when read again.
func (k *Keeper) dead(ctx context.Context, syncLease *coordinationv1.Lease) bool {
	watched := syncLease
	if l, err := k.leases.Leases(k.cfg.Namespace).Get(ReplicaLease(holderOf(syncLease))); err == nil {
		watched = l
	}
	if !k.staleSeen(watched) {
		return false
	}
	fresh, err := k.cfg.Client.CoordinationV1().Leases(k.cfg.Namespace).Get(ctx, watched.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	return err == nil && fresh.ResourceVersion == watched.ResourceVersion
}

// take takes the Lease of sync name for this replica: creates it, or
// updates the one read (so that of two replicas taking it at once, one
// fails). Held, the sync is Gained.
func (k *Keeper) take(ctx context.Context, name string, lease *coordinationv1.Lease) {
	leases := k.cfg.Client.CoordinationV1().Leases(k.cfg.Namespace)
	now := metav1.NewMicroTime(k.cfg.Clock.Now())
	var err error
	taken := ""
	if lease == nil {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: contract.LeasePrefix + name, Namespace: k.cfg.Namespace},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(k.cfg.Identity), LeaseDurationSeconds: ptr.To(int32(k.cfg.LeaseDuration / time.Second)),
				AcquireTime: &now, RenewTime: &now},
		}, metav1.CreateOptions{})
	} else {
		update := lease.DeepCopy()
		taken = lease.ResourceVersion
		update.Spec.HolderIdentity, update.Spec.AcquireTime, update.Spec.RenewTime = ptr.To(k.cfg.Identity), &now, &now
		update.Spec.LeaseDurationSeconds = ptr.To(int32(k.cfg.LeaseDuration / time.Second))
		if holderOf(lease) != k.cfg.Identity {
			update.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
		}
		_, err = leases.Update(ctx, update, metav1.UpdateOptions{})
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			k.cfg.Log.Info("take the sync's Lease", "sync", name, "err", err)
		}
		return
	}
	k.mu.Lock()
	k.held[name] = &gate{taken: taken}
	k.mu.Unlock()
	k.cfg.Log.Info("holding the sync", "sync", name, "identity", k.cfg.Identity, "from", holderOf(lease))
	if k.cfg.Gained != nil {
		k.cfg.Gained(name)
	}
}

// drop stops writing for sync name at once, without releasing its Lease.
func (k *Keeper) drop(name string) {
	k.mu.Lock()
	g := k.held[name]
	delete(k.held, name)
	k.mu.Unlock()
	if g != nil {
		go revoke(g)
	}
}

// release gives sync name up: once the work in flight on it is done, its
// Lease is left without a holder for the replica the assignment gives it
// to, or, for a sync that is gone, deleted (see forgetGone).
func (k *Keeper) release(name, why string, gone bool) {
	k.mu.Lock()
	g := k.held[name]
	delete(k.held, name)
	k.releasing[name] = true
	k.mu.Unlock()
	go func() {
		if g != nil {
			revoke(g)
		}
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		err := k.clearHolder(ctx, name)
		if err != nil {
			k.cfg.Log.Info("release the sync's Lease", "sync", name, "err", err)
		} else {
			k.cfg.Log.Info("released the sync", "sync", name, "identity", k.cfg.Identity, "why", why)
		}
		k.mu.Lock()
		delete(k.releasing, name)
		if err == nil && gone {
			k.gone[name] = true
		}
		k.mu.Unlock()
		k.poke()
	}()
}

// forgetGone deletes the Leases this replica released of syncs declared
// no more: a sync that is gone leaves no Lease behind. A Lease someone
// holds, or that changed since it was read, is left.
func (k *Keeper) forgetGone(ctx context.Context, wanted map[string]bool) {
	k.mu.Lock()
	gone := slices.Collect(maps.Keys(k.gone))
	k.mu.Unlock()
	for _, name := range gone {
		if wanted[name] {
			k.mu.Lock()
			delete(k.gone, name)
			k.mu.Unlock()
			continue
		}
		lease, err := k.leases.Leases(k.cfg.Namespace).Get(contract.LeasePrefix + name)
		if err == nil && holderOf(lease) != "" {
			continue // released, but the watch has not seen it yet
		}
		if err == nil {
			err = k.cfg.Client.CoordinationV1().Leases(k.cfg.Namespace).Delete(ctx, lease.Name,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &lease.ResourceVersion}})
		}
		if err == nil || apierrors.IsNotFound(err) {
			k.mu.Lock()
			delete(k.gone, name)
			k.mu.Unlock()
		}
	}
}

// clearHolder empties the holder of sync name's Lease, if this replica
// holds it.
func (k *Keeper) clearHolder(ctx context.Context, name string) error {
	leases := k.cfg.Client.CoordinationV1().Leases(k.cfg.Namespace)
	for {
		lease, err := leases.Get(ctx, contract.LeasePrefix+name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if holderOf(lease) != k.cfg.Identity {
			return nil
		}
		lease.Spec.HolderIdentity = ptr.To("")
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// holderOf is the holder of l; "" for none.
func holderOf(l *coordinationv1.Lease) string {
	if l == nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}
