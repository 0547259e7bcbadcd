package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
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
}

// setKey is the queue key of a set: "StatefulSet/namespace/name".
func setKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// setCommits remembers, by set key, the template hash Git gave each set
// and the commit it came from, as the syncs' plans see them (see
// commitHandoff.Steered): what plimsoll.dev/commit records when the set
// starts rolling that template.
type setCommits struct {
	mu sync.Mutex
	m  map[string]setCommit
}

// setCommit is a template hash and its commit.
type setCommit struct{ hash, commit string }

// note records that commit gives set key the template of hash.
func (s *setCommits) note(key, hash, commit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]setCommit{}
	}
	s.m[key] = setCommit{hash: hash, commit: commit}
}

// commitOf is the commit that gave set key the template of hash, "" when
// none noted did.
func (s *setCommits) commitOf(key, hash string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.m[key]; ok && c.hash == hash {
		return c.commit
	}
	return ""
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
	s := &set{kind: kindStatefulSet, obj: sts, meta: sts, template: sts.Spec.Template, selector: sts.Spec.Selector, version: sts.ResourceVersion,
		manual: sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType,
		progress: strategies.SetProgress{Observed: observed, Desired: want, Updated: st.UpdatedReplicas, Ready: st.AvailableReplicas,
			Done: st.UpdateRevision != "" && updated && st.AvailableReplicas == want && st.Replicas == want}}
	if observed {
		s.revisionKey = st.UpdateRevision
	}
	return s
}

// daemonSetOf reads a DaemonSet's progress: done when every node that
// should run its pod runs the template's, available.
func daemonSetOf(ds *appsv1.DaemonSet) *set {
	st := ds.Status
	return &set{kind: kindDaemonSet, obj: ds, meta: ds, template: ds.Spec.Template, selector: ds.Spec.Selector, version: ds.ResourceVersion,
		manual: ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType,
		progress: strategies.SetProgress{Observed: st.ObservedGeneration >= ds.Generation, Desired: st.DesiredNumberScheduled,
			Updated: st.UpdatedNumberScheduled, Ready: st.NumberAvailable,
			Done: st.UpdatedNumberScheduled == st.DesiredNumberScheduled && st.NumberAvailable == st.DesiredNumberScheduled &&
				st.NumberUnavailable == 0}}
}

// reconcileSet observes a set, plans its step and carries it out: the
// rollback of a failed template, the replacement of the failed pods, the
// status. It returns when to look again (0: on its next change).
func (c *Controller) reconcileSet(ctx context.Context, s *set) (time.Duration, error) {
	a := s.meta.GetAnnotations()
	recorded, err := strategies.ReadStatus(a)
	if err != nil {
		recorded = strategies.Status{}
	}
	since, _ := time.Parse(time.RFC3339, a[contract.AnnotationStepSince])
	hash := podtemplate.Hash(s.template)
	o := strategies.SetObserved{Kind: s.kind, Hash: hash, Commit: c.setCommits.commitOf(setKey(s.kind, s.meta.GetNamespace(), s.meta.GetName()), hash),
		Recorded: recorded, Since: since,
		Progress: s.progress, Deadline: setDeadline(a), AutoRollback: a[contract.AnnotationAutoRollback] != "false",
		StableKept: true, Now: c.clock.Now()}
	plan := strategies.PlanSet(o)
	var stable *corev1.PodTemplateSpec
	if plan.Rollback {
		if stable, err = c.stableTemplate(ctx, s, recorded.StableHash); err != nil {
			return 0, err
		}
		if stable == nil {
			o.StableKept = false
			plan = strategies.PlanSet(o)
		}
	}
	// The status first, then the template: a cache that has the one
	// write and not yet the other then shows the failure recorded with
	// the failed template live, which plans the same rollback again (see
	// PlanSet), never the stable template as a new revision.
	client := c.clientOfSync(s.meta.GetLabels()[contract.LabelSync])
	if err := c.writeSetStatus(ctx, s, plan); err != nil {
		return 0, err
	}
	if plan.Rollback {
		if err := c.writeSetTemplate(ctx, client, s, *stable); err != nil {
			return 0, err
		}
	}
	if plan.Replace {
		if err := c.replaceFailedPods(ctx, client, s); err != nil {
			return 0, err
		}
		return setRetry, nil
	}
	if plan.Status.Phase == strategies.PhaseProgressing {
		return max(o.Deadline-o.Now.Sub(plan.Since), 0) + time.Second, nil
	}
	return 0, nil
}

// setDeadline is a set's plimsoll.dev/progress-deadline, checked when its
// commit was; the default when it sets none.
func setDeadline(a map[string]string) time.Duration {
	if d, err := time.ParseDuration(a[contract.AnnotationProgressDeadline]); err == nil && d > 0 {
		return d
	}
	return strategies.DefaultSetDeadline
}

// writeSetStatus records plan's status and since on the set, in one merge
// patch of its annotations, when they differ from what it holds; with the
// Events of what changed.
func (c *Controller) writeSetStatus(ctx context.Context, s *set, plan strategies.SetPlan) error {
	live := s.meta.GetAnnotations()
	want := plan.Status.Annotations()
	if !plan.Since.IsZero() {
		want[contract.AnnotationStepSince] = plan.Since.UTC().Format(time.RFC3339)
	}
	patch := map[string]any{}
	for _, k := range append(slices.Clone(contract.StatusKeys), contract.AnnotationStepSince) {
		switch v, ok := want[k]; {
		case ok && live[k] != v:
			patch[k] = v
		case !ok && live[k] != "":
			patch[k] = nil
		}
	}
	if len(patch) == 0 {
		return nil
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	// The status is the daemon's bookkeeping, written to the status
	// subresource as a Deployment's is (docs/syncs.md).
	if err := c.patchSet(ctx, c.client, s, types.MergePatchType, body, statusSubresource); err != nil {
		return fmt.Errorf("write the status of %s %s/%s: %w", s.kind, s.meta.GetNamespace(), s.meta.GetName(), err)
	}
	c.reportSet(ctx, s, plan)
	return nil
}

// reportSet tells of a status written on a set as report does of a
// Deployment's: a log line, the metrics, one Event for the change
// (RolledBack, RolloutFailed or PhaseChanged), then the notifier.
func (c *Controller) reportSet(ctx context.Context, s *set, plan strategies.SetPlan) {
	recorded, _ := strategies.ReadStatus(s.meta.GetAnnotations())
	ns, name, status := s.meta.GetNamespace(), s.meta.GetName(), plan.Status
	c.log.Info("workload status", "kind", s.kind, "workload", ns+"/"+name, "strategy", contract.StrategyRolling,
		"revision", status.Revision, "phase", string(status.Phase), "message", status.Message)
	c.metrics.observe(ns, name, contract.StrategyRolling, status, c.clock.Now())
	switch {
	case plan.Failed && plan.Rollback:
		c.metrics.rolledBack(contract.StrategyRolling)
		c.events.Event(ctx, s.obj, corev1.EventTypeWarning, ReasonRolledBack, status.Message)
	case plan.Failed:
		c.events.Event(ctx, s.obj, corev1.EventTypeWarning, ReasonRolloutFailed, status.Message)
	case status.Phase != recorded.Phase:
		c.events.Event(ctx, s.obj, corev1.EventTypeNormal, ReasonPhase, fmt.Sprintf("%s: %s", status.Phase, status.Message))
	}
	if c.notifier != nil {
		c.notifier.Notify(StatusReport{Namespace: ns, Workload: name, Kind: s.kind, Strategy: contract.StrategyRolling,
			Recorded: recorded, Status: status, RolledBack: plan.Failed && plan.Rollback})
	}
}

// patchSet patches the set (or its subresources) as the rollout
// controller.
func (c *Controller) patchSet(ctx context.Context, client kubernetes.Interface, s *set, pt types.PatchType, body []byte, subresources ...string) error {
	ns, name, opts := s.meta.GetNamespace(), s.meta.GetName(), metav1.PatchOptions{FieldManager: FieldManager}
	var out metav1.Object
	var err error
	switch s.kind {
	case kindStatefulSet:
		out, err = client.AppsV1().StatefulSets(ns).Patch(ctx, name, pt, body, opts, subresources...)
	case kindDaemonSet:
		out, err = client.AppsV1().DaemonSets(ns).Patch(ctx, name, pt, body, opts, subresources...)
	}
	if err == nil {
		s.version = out.GetResourceVersion()
	}
	return err
}

// writeSetTemplate writes template t over the set's: the whole of it, as
// a JSON patch replaces it, on the version the controller read.
func (c *Controller) writeSetTemplate(ctx context.Context, client kubernetes.Interface, s *set, t corev1.PodTemplateSpec) error {
	body, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": s.version},
		{"op": "replace", "path": "/spec/template", "value": t},
	})
	if err != nil {
		return fmt.Errorf("encode the stable template of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	if err := c.patchSet(ctx, client, s, types.JSONPatchType, body); err != nil {
		return fmt.Errorf("roll %s %s/%s back to its stable template: %w", s.kind, s.meta.GetNamespace(), s.meta.GetName(), err)
	}
	return nil
}

// stableTemplate finds, among the set's controller revisions, the one
// whose template hashes to hash; nil when none is kept.
func (c *Controller) stableTemplate(ctx context.Context, s *set, hash string) (*corev1.PodTemplateSpec, error) {
	revs, err := c.revisionsOf(ctx, s)
	if err != nil {
		return nil, err
	}
	for _, r := range revs {
		var data struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if json.Unmarshal(r.Data.Raw, &data) == nil && podtemplate.Hash(data.Spec.Template) == hash {
			t := data.Spec.Template
			return &t, nil
		}
	}
	return nil, nil
}

// revisionsOf lists the controller revisions the set owns, newest first.
func (c *Controller) revisionsOf(ctx context.Context, s *set) ([]appsv1.ControllerRevision, error) {
	selector, err := metav1.LabelSelectorAsSelector(s.selector)
	if err != nil {
		return nil, fmt.Errorf("read the selector of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	list, err := c.client.AppsV1().ControllerRevisions(s.meta.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("list the revisions of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	owned := slices.DeleteFunc(list.Items, func(r appsv1.ControllerRevision) bool {
		ref := metav1.GetControllerOf(&r)
		return ref == nil || ref.UID != s.meta.GetUID()
	})
	slices.SortFunc(owned, func(a, b appsv1.ControllerRevision) int { return int(b.Revision - a.Revision) })
	return owned, nil
}

// replaceFailedPods deletes the set's pods that are not Ready and do not
// run its live template, so that its controller creates them again from
// it: a StatefulSet rolled back waits for such a pod forever
// (kubernetes/kubernetes#67250). A Ready pod is never deleted.
func (c *Controller) replaceFailedPods(ctx context.Context, client kubernetes.Interface, s *set) error {
	current := s.revisionKey
	if s.kind == kindDaemonSet {
		revs, err := c.revisionsOf(ctx, s)
		if err != nil || len(revs) == 0 {
			return err
		}
		current = revs[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	}
	if current == "" {
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(s.selector)
	if err != nil {
		return fmt.Errorf("read the selector of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	pods, err := c.client.CoreV1().Pods(s.meta.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return fmt.Errorf("list the pods of %s %s: %w", s.kind, s.meta.GetName(), err)
	}
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != s.meta.GetUID() || p.DeletionTimestamp != nil ||
			p.Labels[appsv1.ControllerRevisionHashLabelKey] == current || podReady(&p) {
			continue
		}
		uid := p.UID
		err := client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("replace pod %s of the failed template of %s %s: %w", p.Name, s.kind, s.meta.GetName(), err)
		}
		c.events.Event(ctx, s.obj, corev1.EventTypeNormal, ReasonPodReplaced,
			fmt.Sprintf("pod %s of the failed template, never Ready, deleted so that the %s creates it from its stable template", p.Name, s.kind))
	}
	return nil
}

// podReady reports whether pod p is Ready.
func podReady(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}
