package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/sync/inventory"
)

// identity names this process in the sync's Lease: "<host>_<pid>".
func identity() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s_%d", strings.ReplaceAll(host, "_", "-"), os.Getpid())
}

// leaseLock is the Lease plimsoll-<sync name> in the status namespace,
// held by id: the one lock of a sync, with or without --leader-elect.
func (o *runOptions) leaseLock(d *daemon, id string) *resourcelock.LeaseLock {
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: contract.LeasePrefix + o.syncName, Namespace: d.statusNamespace},
		Client:     d.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
}

// runExclusive runs the daemon as the only writer of its sync, without
// the standby of --leader-elect: the controllers start at once and fill
// their caches, but write only while this daemon holds the sync's Lease
// (the one --leader-elect uses). While another daemon holds it, this one
// writes nothing and says who holds it: a warning in its log, 503 on
// /readyz, and plimsoll.dev/blocked-writer on the sync record. It takes
// over once the holder is gone: released on exit (seen within 5 s),
// expired 35 s after a crash, at once when the holder was a process of
// this host that no longer runs (a daemon restarted here).
func (o *runOptions) runExclusive(ctx context.Context, d *daemon, log *slog.Logger) error {
	id := identity()
	d.exclusive = true
	d.holder.Store("")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lock := o.leaseLock(d, id)
	if err := releaseIfGone(ctx, lock, id); err != nil {
		log.Info("check the sync's Lease", "err", err)
	}
	errs := make(chan error, 2)
	go func() { errs <- d.run(ctx) }()
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		for ctx.Err() == nil {
			elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
				Lock: lock, LeaseDuration: exclusiveLeaseDuration, RenewDeadline: exclusiveRenewDeadline, RetryPeriod: exclusiveRetryPeriod,
				ReleaseOnCancel: true, Name: contract.LeasePrefix + o.syncName,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(lctx context.Context) {
						log.Info("holding the sync", "sync", o.syncName, "identity", id)
						d.held.Store(true)
						d.syncer.Trigger() // sync now, not at the next look
						d.markBlocked(lctx, "", log)
						<-lctx.Done()
						d.held.Store(false)
					},
					OnStoppedLeading: func() {},
					OnNewLeader: func(holder string) {
						d.holder.Store(holder)
						if holder != id && holder != "" {
							log.Warn("another daemon holds the sync; writing nothing until it is gone",
								"sync", o.syncName, "holder", holder, "identity", id)
							d.markBlocked(ctx, fmt.Sprintf("%s since %s: the sync is held by %s", id, time.Now().UTC().Format(time.RFC3339), holder), log)
						}
					},
				},
			})
			if err != nil {
				errs <- fmt.Errorf("hold the sync's Lease: %w", err)
				return
			}
			elector.Run(ctx)
		}
	}()
	go func() {
		// A holder of this host that no longer runs is not waited for:
		// checked before the first election (above), then every
		// exclusiveRetryPeriod while this daemon does not hold the sync.
		ticker := time.NewTicker(exclusiveRetryPeriod)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			if !d.held.Load() {
				if err := releaseIfGone(ctx, lock, id); err != nil && ctx.Err() == nil {
					log.Info("check the sync's Lease", "err", err)
				}
			}
		}
	}()
	err := <-errs
	cancel()
	<-elected // the Lease is released before the process exits
	if holder, _ := d.holder.Load().(string); holder != id {
		// Say, on the way out, that this daemon waits no more.
		cleanup, stop := context.WithTimeout(context.Background(), requestTimeout)
		defer stop()
		d.markBlocked(cleanup, "", log)
	}
	return err
}

// blocked says why an exclusive daemon writes nothing, for /readyz.
func (d *daemon) blocked() string {
	holder, _ := d.holder.Load().(string)
	if holder == "" {
		return "waiting for the sync's Lease"
	}
	return fmt.Sprintf("the sync is held by %s; this daemon writes nothing until it is gone", holder)
}

// markBlocked sets (or, with an empty text, removes) the annotation
// plimsoll.dev/blocked-writer on the sync record. A record that does not
// exist yet is left alone: its first sync creates it.
func (d *daemon) markBlocked(ctx context.Context, text string, log *slog.Logger) {
	value := "null"
	if text != "" {
		value = strconv.Quote(text)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, contract.AnnotationBlockedWriter, value)
	ref := d.store.Object()
	_, err := d.client.CoreV1().ConfigMaps(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: inventory.FieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Info("note the blocked writer on the sync record", "err", err)
	}
}

// releaseIfGone empties the Lease's holder when it is a process of this
// host, other than this one, that no longer runs: a daemon restarted here
// need not wait for the Lease of its dead predecessor to expire. A holder
// on another host, or a process that still runs, is left alone.
func releaseIfGone(ctx context.Context, lock *resourcelock.LeaseLock, id string) error {
	leases := lock.Client.Leases(lock.LeaseMeta.Namespace)
	lease, err := leases.Get(ctx, lock.LeaseMeta.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" || holder == id || !deadHere(holder, id) {
		return nil
	}
	empty := ""
	lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: &empty, LeaseDurationSeconds: lease.Spec.LeaseDurationSeconds,
		LeaseTransitions: lease.Spec.LeaseTransitions}
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("release the Lease of %s, which no longer runs: %w", holder, err)
	}
	return nil
}

// deadHere reports whether holder ("<host>_<pid>") names a process of
// id's host that does not run.
func deadHere(holder, id string) bool {
	i, j := strings.LastIndex(holder, "_"), strings.LastIndex(id, "_")
	if i < 0 || j < 0 || holder[:i] != id[:j] {
		return false
	}
	pid, err := strconv.Atoi(holder[i+1:])
	if err != nil || pid <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
