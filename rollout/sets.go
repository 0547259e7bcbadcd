package rollout

import (
	"context"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// The kinds of set the controller rolls beside Deployments: their own
// controllers replace the pods, the rollout controller watches them
// against a deadline and rolls a failed template back.
const (
	kindStatefulSet = "StatefulSet"
	kindDaemonSet   = "DaemonSet"
)

// setRetry is how soon a set whose failed pods are being replaced is
// looked at again, beside its own status updates.
const setRetry = 2 * time.Second

// set is a StatefulSet or a DaemonSet as the controller reads it: the
// object, and its template and controller's progress whatever the kind.
type set struct {
	kind     string
	obj      runtime.Object
	meta     metav1.Object
	template corev1.PodTemplateSpec
	progress strategies.SetProgress
	// revisionKey is the controller-revision-hash label of the pods of
	// the live template, "" while the kind's controller has not counted
	// from it (a DaemonSet's is looked up when needed).
	revisionKey string
	selector    *metav1.LabelSelector
	// version is the resourceVersion the next write must find: the
	// cache's, then that of the controller's own last write (the object
	// is the cache's, and never changed).
	version string
	// manual reports an OnDelete update strategy: its pods change only
	// when someone deletes them, so no deadline can hold it to account,
	// and the controller leaves it alone.
	manual bool
	// replicas and partition are a StatefulSet's count and the partition
	// of its rolling update, or a DaemonSet's nodes that should run its
	// pod; onDelete reports a DaemonSet's OnDelete update strategy.
	replicas, partition int32
	onDelete            bool
}

// setKey is the queue key of a set: "StatefulSet/namespace/name".
func setKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// setCommits remembers, by set key, the template Git gave each set and
// the commit it came from, as the syncs' plans see them (see
// commitHandoff.Steered): what plimsoll.dev/commit records when the set
// starts rolling that template, and what a retry writes back.
type setCommits struct {
	mu sync.Mutex
	m  map[string]setCommit
}

// setCommit is a template from Git, its hash, its commit, and the
// update strategy Git gives with it (which a canary DaemonSet gets back
// at the end of its steps).
type setCommit struct {
	hash, commit       string
	template, strategy map[string]any
}

// note records what Git gives set key.
func (s *setCommits) note(key string, c setCommit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]setCommit{}
	}
	s.m[key] = c
}

// of is what was noted of set key; the zero setCommit when nothing was.
func (s *setCommits) of(key string) setCommit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// forget drops what was noted of set key, which is gone.
func (s *setCommits) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// setSelector selects the StatefulSets and DaemonSets the controller
// rolls: those of its sync, or of any sync.
func setSelector(cfg Config) string {
	if cfg.SyncName != "" {
		return contract.LabelSync + "=" + cfg.SyncName
	}
	return contract.LabelSync
}

// enqueueSet queues a StatefulSet or DaemonSet the sync applied.
func (c *Controller) enqueueSet(obj any) {
	if c.once.Load() {
		return // a one-shot sync leaves sets to the daemon
	}
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		c.sets.Add(setKey(kindStatefulSet, o.Namespace, o.Name))
	case *appsv1.DaemonSet:
		c.sets.Add(setKey(kindDaemonSet, o.Namespace, o.Name))
	}
}

// workSets reconciles sets until the queue shuts down.
func (c *Controller) workSets(ctx context.Context) {
	for c.processNextSet(ctx) {
	}
}

// processNextSet reconciles one set, while this daemon may write and
// owns its sync; a failed reconcile is retried with backoff.
func (c *Controller) processNextSet(ctx context.Context) bool {
	key, quit := c.sets.Get()
	if quit {
		return false
	}
	defer c.sets.Done(key)
	if !c.writable() {
		c.sets.Forget(key)
		c.sets.AddAfter(key, heldRetry)
		return true
	}
	s, err := c.readSet(key)
	if s == nil && err == nil {
		c.setCommits.forget(key)
	}
	if err != nil || s == nil || s.manual {
		c.sets.Forget(key)
		return true
	}
	release, owned := func() {}, true
	if c.owns != nil {
		release, owned = c.owns(s.meta.GetLabels()[contract.LabelSync])
	}
	if !owned {
		c.sets.Forget(key)
		return true
	}
	defer release()
	after, err := c.reconcileSet(ctx, s)
	if err != nil {
		c.log.Info("reconcile failed; retrying", "object", key, "err", err)
		c.sets.AddRateLimited(key)
		return true
	}
	c.sets.Forget(key)
	if after > 0 {
		c.sets.AddAfter(key, after)
	}
	return true
}

// readSet reads set key from the caches; nil when it is gone.
func (c *Controller) readSet(key string) (*set, error) {
	kind, rest, _ := strings.Cut(key, "/")
	ns, name, _ := strings.Cut(rest, "/")
	v, ok := c.viewOf(ns)
	if !ok {
		return nil, nil
	}
	var s *set
	var err error
	switch kind {
	case kindStatefulSet:
		var sts *appsv1.StatefulSet
		if sts, err = v.statefulSets.StatefulSets(ns).Get(name); err == nil {
			s = statefulSetOf(sts)
		}
	case kindDaemonSet:
		var ds *appsv1.DaemonSet
		if ds, err = v.daemonSets.DaemonSets(ns).Get(name); err == nil {
			s = daemonSetOf(ds)
		}
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return s, err
}

// statefulSetOf reads a StatefulSet's progress: done when every replica
// is Ready (available, with minReadySeconds) and those the update may
// reach run the update revision: all of them, the current revision then
// the update one, or the ordinals from its partition up.
func statefulSetOf(sts *appsv1.StatefulSet) *set {
	want, partition := int32(1), int32(0)
	if sts.Spec.Replicas != nil {
		want = *sts.Spec.Replicas
	}
	ru := sts.Spec.UpdateStrategy.RollingUpdate
	if ru != nil && ru.Partition != nil {
		partition = min(*ru.Partition, want)
	}
	st := sts.Status
	observed := st.ObservedGeneration >= sts.Generation
	updated := st.UpdatedReplicas >= want-partition && (partition > 0 || st.CurrentRevision == st.UpdateRevision)
	ready := st.UpdateRevision != "" && st.AvailableReplicas == want && st.Replicas == want
	s := &set{kind: kindStatefulSet, obj: sts, meta: sts, template: sts.Spec.Template, selector: sts.Spec.Selector, version: sts.ResourceVersion,
		manual:   sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType,
		replicas: want, partition: partition,
		progress: strategies.SetProgress{Observed: observed, Desired: want, Updated: st.UpdatedReplicas, Ready: st.AvailableReplicas,
			Done:  ready && updated,
			Whole: ready && st.UpdatedReplicas >= want && st.CurrentRevision == st.UpdateRevision}}
	if observed {
		s.revisionKey = st.UpdateRevision
	}
	return s
}

// daemonSetOf reads a DaemonSet's progress: done when every node that
// should run its pod runs the template's, available.
func daemonSetOf(ds *appsv1.DaemonSet) *set {
	st := ds.Status
	done := st.UpdatedNumberScheduled == st.DesiredNumberScheduled && st.NumberAvailable == st.DesiredNumberScheduled && st.NumberUnavailable == 0
	// OnDelete on a canary DaemonSet is plimsoll's hold (see holdNodes).
	onDelete := ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
	return &set{kind: kindDaemonSet, obj: ds, meta: ds, template: ds.Spec.Template, selector: ds.Spec.Selector, version: ds.ResourceVersion,
		manual: onDelete && ds.Annotations[contract.AnnotationStrategy] != contract.StrategyCanary, onDelete: onDelete,
		replicas: st.DesiredNumberScheduled,
		progress: strategies.SetProgress{Observed: st.ObservedGeneration >= ds.Generation, Desired: st.DesiredNumberScheduled,
			Updated: st.UpdatedNumberScheduled, Ready: st.NumberAvailable, Done: done, Whole: done}}
}
