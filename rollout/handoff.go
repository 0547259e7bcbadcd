package rollout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/revision"
	psync "plimsoll.dev/plimsoll/sync"
	"plimsoll.dev/plimsoll/sync/apply"
	"plimsoll.dev/plimsoll/sync/manifest"
)

// Check is the controller's side of the one call a sync makes of it per
// commit (the controller is the sync's sync.DeploymentSink, which
// cmd/plimsoll wires): it checks every Deployment of the commit (see
// checkDeployment) and records nothing, queues nothing. The sync.Checked it
// returns takes the Deployments once the sync has applied the commit's
// other objects (see handOff), or records the refusals once the sync has
// refused the commit (see commitHandoff.Refuse).
func (c *Controller) Check(ctx context.Context, h psync.Handoff) (psync.Checked, error) {
	return c.check(ctx, "", h)
}

// check is Check for the Deployments of sync syncName, "" for every sync.
func (c *Controller) check(ctx context.Context, syncName string, h psync.Handoff) (psync.Checked, error) {
	out := &commitHandoff{c: c, sync: syncName, in: h, blueGreen: blueGreenWorkloads(h.Deployments)}
	var errs []error
	for _, d := range h.Deployments {
		err := c.checkDeployment(ctx, cmp.Or(syncName, d.Labels[contract.LabelSync], c.syncName), d, h.Services[d.Namespace])
		if err == nil {
			continue
		}
		errs = append(errs, &psync.DeploymentError{Namespace: d.Namespace, Name: d.Name, Err: err})
		strategy := d.Annotations[contract.AnnotationStrategy]
		if isInputError(err) && (strategy == contract.StrategyBlueGreen || strategy == contract.StrategyCanary) {
			out.refusals = append(out.refusals, refusal{git: d.DeepCopy(), err: err})
		}
	}
	out.refused = errors.Join(errs...)
	return out, out.refused
}

// commitHandoff is one checked commit's Deployments (the sync's Checked).
type commitHandoff struct {
	c    *Controller
	sync string
	in   psync.Handoff
	// blueGreen are the commit's blue-green workloads, whose autoscalers
	// the controller points at a color (see steered).
	blueGreen map[types.NamespacedName]bool
	// refused is the check's error; refusals are the workloads it refused
	// that a reconcile marks Degraded once the commit is refused.
	refused  error
	refusals []refusal
}

// refusal is Git's Deployment of a workload, refused for err.
type refusal struct {
	git *appsv1.Deployment
	err error
}

// Steered keeps the fields the controller steers (see steered), and
// notes the commit that gives a StatefulSet or DaemonSet its template.
func (h *commitHandoff) Steered(want, live *unstructured.Unstructured) {
	if kind, hash, ok := setTemplate(want); ok {
		template, _, _ := unstructured.NestedMap(want.Object, "spec", "template")
		strategy, _, _ := unstructured.NestedMap(want.Object, "spec", "updateStrategy")
		h.c.setCommits.note(setKey(kind, want.GetNamespace(), want.GetName()), setCommit{hash: hash, commit: h.in.Commit, template: template, strategy: strategy})
	}
	steered(want, live, h.blueGreen)
}

// Take takes what Git asks of each workload of the commit (see handOff);
// a refused commit takes nothing.
func (h *commitHandoff) Take(ctx context.Context, leaving []types.NamespacedName) error {
	if h.refused != nil {
		return h.refused
	}
	return h.c.handOff(ctx, h.sync, h.in.Commit, h.in.Subject, h.in.Deployments, leaving)
}

// Refuse records the refusal of each blue-green or canary workload whose
// own Deployment the check refused, and queues it: its reconcile marks it
// Degraded with the refusal, and holds it as it is until Git changes; the
// pods do not notice. A controller that does not run (plimsoll diff)
// records nothing.
func (h *commitHandoff) Refuse() {
	if !h.c.running() {
		return
	}
	for _, r := range h.refusals {
		key := r.git.Namespace + "/" + r.git.Name
		if h.c.intents.refuse(key, r.git, r.err) {
			h.c.queue.Add(key)
		}
	}
}

// handOff takes what Git asks of each workload of sync syncName ("" for
// every sync), given every Deployment of a commit once per commit: a Git
// Deployment that differs from the one held for its workload becomes the
// workload's intent (with the commit it came from) and the workload is
// queued; the reconcile writes what the intent changes. An unchanged one
// keeps the intent and the commit it had, so a commit that changes
// nothing of a workload writes nothing to it; a refusal recorded before
// is over. A workload of the sync whose Deployment left Git is forgotten
// (a workload of another sync is not, for missing in desired), and one
// named in leaving (the sync prunes its Deployment next) is retired
// first, unless the prune keeps what serves it (see removeLeaving). In
// once mode (Config.Once) it waits until each queued workload has been
// reconciled and returns the failures, naming each Deployment and the
// commit.
//
// A workload is one sync's: a Git Deployment whose workload another sync
// handed off, or whose live Deployments carry another sync's
// plimsoll.dev/sync label, is refused with an *apply.OwnerError naming
// both, and the handoff takes nothing of the commit (see checkHolders).
// Two handoffs of one workload at the same moment are decided as each
// records its intent (see intents.record): the second is refused.
func (c *Controller) handOff(ctx context.Context, syncName, commit, subject string, desired []*appsv1.Deployment, leaving []types.NamespacedName) error {
	if c.once.Load() && !c.running() {
		return errors.New("hand Deployments to the rollout controller: it is not running")
	}
	if err := c.checkHolders(desired); err != nil {
		return err
	}
	if err := c.removeLeaving(ctx, cmp.Or(syncName, c.syncName), leaving); err != nil {
		return err
	}
	keys := make([]string, 0, len(desired))
	var waits []<-chan error
	var queued []*appsv1.Deployment
	var errs []error
	for _, d := range desired {
		key := d.Namespace + "/" + d.Name
		keys = append(keys, key)
		changed, holder := c.intents.record(key, d.DeepCopy(), commit, subject)
		if holder != "" {
			errs = append(errs, ownerError(d, holder))
			continue
		}
		if !changed {
			continue
		}
		if c.once.Load() {
			waits = append(waits, c.intents.wait(key))
			queued = append(queued, d)
		}
		c.queue.Add(key)
	}
	c.intents.keepOnly(keys, syncName)
	for i, ch := range waits {
		select {
		case err := <-ch:
			if err != nil {
				errs = append(errs, fmt.Errorf("roll out Deployment %s/%s of commit %s: %w", queued[i].Namespace, queued[i].Name, revision.Short(commit), err))
			}
		case <-ctx.Done():
			return fmt.Errorf("wait for the rollout controller: %w", ctx.Err())
		}
	}
	return errors.Join(errs...)
}

// checkHolders refuses the Git Deployments of desired whose workload is
// another sync's than the one whose label they carry: held by its
// handoff, or running as its (see foreignOwner).
func (c *Controller) checkHolders(desired []*appsv1.Deployment) error {
	var errs []error
	for _, d := range desired {
		key, sync := d.Namespace+"/"+d.Name, d.Labels[contract.LabelSync]
		if sync == "" {
			continue
		}
		in, _ := c.intents.get(key)
		holder := in.holder()
		if holder == sync {
			holder = ""
		}
		if holder == "" {
			holder = c.foreignOwner(key, sync)
		}
		if holder != "" {
			errs = append(errs, ownerError(d, holder))
		}
	}
	return errors.Join(errs...)
}

// foreignOwner names a sync other than sync whose plimsoll.dev/sync label
// a live Deployment of workload key carries, in the caches: the
// Deployment of the workload's name, or one that runs it under another
// (labelled plimsoll.dev/workload). "" when there is none, or the
// controller does not run.
func (c *Controller) foreignOwner(key, sync string) string {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || !c.running() {
		return ""
	}
	v, ok := c.viewOf(ns)
	if !ok {
		return ""
	}
	deploys := indexed[*appsv1.Deployment](v.index.deploys, byWorkload, key)
	if d, err := v.deploys.Deployments(ns).Get(name); err == nil {
		deploys = append(deploys, d)
	}
	for _, d := range deploys {
		if owner := d.Labels[contract.LabelSync]; owner != "" && owner != sync {
			return owner
		}
	}
	return ""
}

// mayWrite reports whether a reconcile may write workload key. An intent
// handed off by a sync whose workload runs as another sync's (see
// foreignOwner) is dropped, and the handoffs waiting for it hear an
// *apply.OwnerError: two replicas that took one workload at once both
// reconciled it, the one whose create lost found the other's Deployment
// there, and the retry would have written its own template over it. A
// daemon of one sync (no Config.Owns) writes no workload that runs as
// another sync's; in a daemon of many, the sync the workload runs as is
// the one whose ownership the reconcile then needs (see own).
func (c *Controller) mayWrite(key string) bool {
	if in, ok := c.intents.get(key); ok && in.syncName() != "" {
		if owner := c.foreignOwner(key, in.syncName()); owner != "" {
			git := cmp.Or(in.git, in.refusedGit)
			c.intents.disown(key, in.syncName(), ownerError(git, owner))
			c.log.Info("workload runs as another sync's; its handoff dropped", "workload", key, "sync", in.syncName(), "owner", owner)
		}
	}
	return c.owns != nil || c.syncName == "" || c.foreignOwner(key, c.syncName) == ""
}

// ownerError is the refusal of Git Deployment d, labelled as one sync's,
// whose workload is sync owner's.
func ownerError(d *appsv1.Deployment, owner string) error {
	return &apply.OwnerError{Key: manifest.Key{Group: "apps", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name},
		Owner: owner, Sync: d.Labels[contract.LabelSync]}
}

// checkDeployment reports what keeps Git Deployment git of sync syncName
// from being rolled out as written: a namespace the controller does not
// watch (see Config.Namespaces), an unknown strategy, an annotation value
// that does not parse, a Service the strategy needs that is unnamed, or
// neither in the commit (services) nor in the cluster, a selector that is
// not the one the workload's Deployments run with, a write of its rollout
// that the sync's identity may not make (see checkRights). It writes
// nothing and records nothing.
func (c *Controller) checkDeployment(ctx context.Context, syncName string, git *appsv1.Deployment, services []string) error {
	if !c.watches(git.Namespace) {
		return fmt.Errorf("namespace %q is not one the rollout controller watches", git.Namespace)
	}
	err := checkAnnotations(git.Annotations)
	if err == nil {
		err = c.checkServices(ctx, git, services)
	}
	if err == nil {
		err = c.checkSelector(ctx, git)
	}
	if err == nil {
		err = c.checkRights(ctx, syncName, git)
	}
	return err
}

// checkServices checks that the Services git's strategy steers exist, or
// come with the commit (services). It reads the controller's cache; a
// controller that does not run (plimsoll diff) asks the API server.
func (c *Controller) checkServices(ctx context.Context, git *appsv1.Deployment, services []string) error {
	for _, key := range serviceKeys {
		name := git.Annotations[key]
		if name == "" || slices.Contains(services, name) || !steers(git.Annotations[contract.AnnotationStrategy], key) {
			continue
		}
		exists, err := c.serviceExists(ctx, git.Namespace, name)
		if err != nil {
			return err
		}
		if !exists {
			return missingService(key, name, git.Namespace)
		}
	}
	return nil
}

// checkSelector checks that git's selector is the one every live
// Deployment of its workload runs with, less the keys plimsoll adds (a
// blue-green color, a canary's track). A Deployment's selector is
// immutable: a changed one would fail the controller's writes after the
// rest of the commit was applied, and deleting the Deployments to make
// them again would take every pod down. It reads the controller's cache;
// a controller that does not run asks the API server.
func (c *Controller) checkSelector(ctx context.Context, git *appsv1.Deployment) error {
	deploys, err := c.workloadDeployments(ctx, git.Namespace, git.Name)
	if err != nil {
		return err
	}
	want := ownSelector(git.Spec.Selector)
	for _, d := range deploys {
		if live := ownSelector(d.Spec.Selector); !equality.Semantic.DeepEqual(live, want) {
			return &inputError{fmt.Sprintf("field spec.selector: %s is not %s, the selector Deployment %s runs with; a selector is immutable, and %s",
				metav1.FormatLabelSelector(git.Spec.Selector), metav1.FormatLabelSelector(live), d.Name, contract.RecreateAdvice)}
		}
	}
	return nil
}

// ownSelector is sel without the keys plimsoll adds to a selector, nil
// parts for empty ones.
func ownSelector(sel *metav1.LabelSelector) *metav1.LabelSelector {
	out := &metav1.LabelSelector{}
	if sel == nil {
		return out
	}
	for k, v := range sel.MatchLabels {
		if !strings.HasPrefix(k, contract.Prefix) {
			if out.MatchLabels == nil {
				out.MatchLabels = map[string]string{}
			}
			out.MatchLabels[k] = v
		}
	}
	if len(sel.MatchExpressions) > 0 {
		out.MatchExpressions = sel.MatchExpressions
	}
	return out
}

// workloadDeployments returns the live Deployments of workload ns/name
// (labelled plimsoll.dev/workload=name): from the caches when the
// controller runs, else from the API server (see listWorkload).
func (c *Controller) workloadDeployments(ctx context.Context, ns, name string) ([]*appsv1.Deployment, error) {
	if v, ok := c.viewOf(ns); ok && c.running() {
		return indexed[*appsv1.Deployment](v.index.deploys, byWorkload, ns+"/"+name), nil
	}
	return c.listWorkload(ctx, ns, name)
}

// serviceExists reports whether Service ns/name exists.
func (c *Controller) serviceExists(ctx context.Context, ns, name string) (bool, error) {
	if v, ok := c.viewOf(ns); ok && c.running() {
		_, err := v.services.Services(ns).Get(name)
		return err == nil, nil
	}
	_, err := c.client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read Service %s: %w", name, err)
	}
	return true, nil
}

// steers reports whether strategy uses the Service named by annotation key.
func steers(strategy, key string) bool {
	switch key {
	case contract.AnnotationActiveService, contract.AnnotationPreviewService:
		return strategy == contract.StrategyBlueGreen
	case contract.AnnotationService:
		return strategy == contract.StrategyCanary
	}
	return false
}
