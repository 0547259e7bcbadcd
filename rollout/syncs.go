package rollout

import (
	"context"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/contract"
	psync "plimsoll.dev/plimsoll/sync"
)

// One controller serves the workloads of every sync a replica owns (a
// daemon of many syncs, Config.Owns): each sync hands its Deployments
// over through its own SyncSink, a workload is reconciled only while its
// sync is owned, and its writes go out as its sync's identity
// (Config.ClientFor).

// SyncSink is the controller as the sync.DeploymentSink of one sync among
// several: its handoff forgets only the workloads of that sync that
// left Git.
type SyncSink struct {
	*Controller
	sync string
}

// ForSync returns the sync.DeploymentSink of sync name.
func (c *Controller) ForSync(name string) *SyncSink { return &SyncSink{Controller: c, sync: name} }

// Check is Controller.Check for the Deployments of the sync's commit,
// whose rights are checked for the sync's identity.
func (s *SyncSink) Check(ctx context.Context, h psync.Handoff) (psync.Checked, error) {
	return s.check(ctx, s.sync, h)
}

// QueueSync queues every workload of sync name that the caches hold: a
// replica that has just come to own the sync picks its rollouts up where
// their annotations say they are. It first forgets the intents it holds
// of the sync's workloads: they are from a time it owned the sync before,
// and another replica may have rolled a later commit out since. Taken
// again, such an intent rolled a canary back to that earlier commit, and
// promoted it at once, before this replica's first sync of the sync
// handed the latest one over.
func (c *Controller) QueueSync(name string) {
	c.intents.keepOnly(nil, name)
	selector := labels.SelectorFromSet(labels.Set{contract.LabelSync: name})
	for _, v := range c.views {
		deploys, err := v.deploys.List(selector)
		if err != nil {
			continue
		}
		for _, d := range deploys {
			if w := d.Labels[contract.LabelWorkload]; w != "" {
				c.queue.Add(d.Namespace + "/" + w)
			}
		}
	}
}

// own holds the ownership of the sync of workload key for one reconcile
// (Config.Owns); without Owns every workload is the controller's, but
// those of other syncs (see mayWrite).
func (c *Controller) own(key string) (release func(), owned bool) {
	if !c.mayWrite(key) {
		return func() {}, false
	}
	if c.owns == nil {
		return func() {}, true
	}
	return c.owns(c.syncOf(key))
}

// syncOf names the sync of workload key: the plimsoll.dev/sync label of
// the Deployment Git handed off, else of its Deployments in the caches;
// "" when none tells.
func (c *Controller) syncOf(key string) string {
	if in, ok := c.intents.get(key); ok {
		if name := in.syncName(); name != "" {
			return name
		}
	}
	ns, _, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return ""
	}
	v, ok := c.viewOf(ns)
	if !ok {
		return ""
	}
	for _, d := range indexed[*appsv1.Deployment](v.index.deploys, byWorkload, key) {
		if name := d.Labels[contract.LabelSync]; name != "" {
			return name
		}
	}
	return ""
}

// writer is the client the writes of workload key go out with: its
// sync's (Config.ClientFor), else the controller's own.
func (c *Controller) writer(key string) kubernetes.Interface {
	return c.clientOfSync(c.syncOf(key))
}

// workloadWriter is the client the writes of workload w go out with:
// that of its sync (see syncOf), else of the sync the plimsoll.dev/sync
// label of one of the Deployments read for w names. A workload leaving
// Git has no intent any more, and a one-shot sync no caches: its
// Deployments, read for its removal, still say whose they are.
func (c *Controller) workloadWriter(w *workload) kubernetes.Interface {
	if name := c.syncOf(w.key()); name != "" {
		return c.clientOfSync(name)
	}
	for _, d := range slices.Sorted(maps.Keys(w.deploys)) {
		if name := w.deploys[d].Labels[contract.LabelSync]; name != "" {
			return c.clientOfSync(name)
		}
	}
	return c.clientOfSync("")
}

// writerOf is the client that writes obj: that of the sync its
// plimsoll.dev/sync label names, else of the workload its
// plimsoll.dev/workload label names.
func (c *Controller) writerOf(obj metav1.Object) kubernetes.Interface {
	if name := obj.GetLabels()[contract.LabelSync]; name != "" {
		return c.clientOfSync(name)
	}
	return c.writer(obj.GetNamespace() + "/" + obj.GetLabels()[contract.LabelWorkload])
}

// writerFor is the client that writes obj for workload w: w's sync's;
// obj's (see writerOf) for a write that is no workload's (nil w).
func (c *Controller) writerFor(w *workload, obj metav1.Object) kubernetes.Interface {
	if w == nil {
		return c.writerOf(obj)
	}
	return c.workloadWriter(w)
}

// writerOfPod is the client that labels pod ns/name: its workload's, as
// the pod's labels in the caches say.
func (c *Controller) writerOfPod(ns, name string) kubernetes.Interface {
	if v, ok := c.viewOf(ns); ok {
		if obj, ok, _ := v.index.pods.GetByKey(ns + "/" + name); ok {
			if pod, ok := obj.(metav1.Object); ok {
				return c.writerOf(pod)
			}
		}
	}
	return c.clientOfSync("")
}

// clientOfSync is the client of sync name's writes (Config.ClientFor);
// the controller's own without ClientFor, or when it gives none.
func (c *Controller) clientOfSync(name string) kubernetes.Interface {
	if c.clientFor != nil {
		if client := c.clientFor(name); client != nil {
			return client
		}
	}
	return c.client
}

// key is the workload's key, "namespace/name".
func (w *workload) key() string { return w.ns + "/" + w.name }

// syncName is the sync that handed the intent over: the plimsoll.dev/sync
// label of its Git Deployment, or of the refused one.
func (in intent) syncName() string {
	for _, d := range []*appsv1.Deployment{in.git, in.refusedGit} {
		if d != nil && d.Labels[contract.LabelSync] != "" {
			return d.Labels[contract.LabelSync]
		}
	}
	return ""
}
