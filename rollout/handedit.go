package rollout

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/takeover"
	"plimsoll.dev/plimsoll/strategies"
)

// ReasonTemplateRestored is the event reason when the controller writes
// Git's template again over one changed by hand.
const ReasonTemplateRestored = "TemplateRestored"

// runsGit reports whether Deployment d runs Git's template as it was
// written: stamped with desired, the hash of git's template, and still
// holding every field git sets (see strategies.TemplateHolds). A template
// changed by hand (`kubectl set image`, `kubectl set env`, `kubectl
// edit`) keeps the stamp it was written with, so the hash alone reads as
// Git's; this tells it apart, and the caller writes Git's template again,
// as a sync restores any other object. Not restored:
//   - a Deployment whose Git Deployment or live object carries
//     plimsoll.dev/kubectl-edits: keep;
//   - a template a write of Git's template left as it was (see
//     templateChecks.wrote): another writer, a mutating webhook, puts its
//     change back, and writing again would change nothing.
func (c *Controller) runsGit(d, git *appsv1.Deployment, desired string) bool {
	if !stampedWith(d, desired) {
		return false
	}
	if keepsKubectlEdits(git.Annotations) || keepsKubectlEdits(d.Annotations) {
		return true
	}
	return c.templates.holds(d, &git.Spec.Template, desired)
}

// stampedWith reports whether d's template reads as hash (see
// strategies.LiveHash). Once runsGit has said no, such a template was
// changed by hand: Git's revision, not a new one, goes out again.
func stampedWith(d *appsv1.Deployment, hash string) bool {
	return d != nil && strategies.LiveHash(d.Spec.Template) == hash
}

func keepsKubectlEdits(annotations map[string]string) bool {
	return annotations[contract.AnnotationKubectlEdits] == contract.KubectlEditsKept
}

// templateChecks remembers, for each Deployment, whether its template held
// Git's at the generation it was compared at, so that a workload's
// reconciles (one for each of its pods' changes) compare a template once
// per change of its spec, not once each.
type templateChecks struct {
	mu sync.Mutex
	by map[string]templateCheck
}

// templateCheck is one comparison: the Deployment's uid and generation,
// the hash of the Git template compared with, the template itself, and
// the outcome.
type templateCheck struct {
	uid        types.UID
	generation int64
	hash       string
	git        *corev1.PodTemplateSpec
	holds      bool
}

func newTemplateChecks() *templateChecks {
	return &templateChecks{by: map[string]templateCheck{}}
}

// holds reports whether d's template holds git, whose hash is hash,
// comparing them only when d's generation or the hash changed since.
func (t *templateChecks) holds(d *appsv1.Deployment, git *corev1.PodTemplateSpec, hash string) bool {
	key := d.Namespace + "/" + d.Name
	t.mu.Lock()
	e, ok := t.by[key]
	t.mu.Unlock()
	if ok && e.uid == d.UID && e.generation == d.Generation && e.hash == hash {
		return e.holds
	}
	e = templateCheck{uid: d.UID, generation: d.Generation, hash: hash, git: git,
		holds: strategies.TemplateHolds(d.Spec.Template, *git)}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.by[key] = e
	return e.holds
}

// wrote records a write of want that the API server returned as out,
// presented to the planners as generation (see specGenerations.of), and
// reports whether it was a restore: want carried Git's template over a
// template that did not hold it. Then out's generation counts as holding
// Git's template whatever it holds: restored, or put back as it was by
// another writer (a mutating webhook), which the controller does not
// fight in a loop. A later change of the spec (a new generation) is
// compared again.
func (t *templateChecks) wrote(want, out *appsv1.Deployment, generation int64) bool {
	key := out.Namespace + "/" + out.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.by[key]
	if !ok || e.uid != out.UID || e.holds || !strategies.TemplateHolds(want.Spec.Template, *e.git) {
		return false
	}
	e.generation, e.holds = generation, true
	t.by[key] = e
	return true
}

// forget drops what is remembered of Deployment ns/name (deleted).
func (t *templateChecks) forget(ns, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.by, ns+"/"+name)
}

// restored logs and reports that the controller wrote Git's template
// over d's, changed by hand.
func (c *Controller) restored(d *appsv1.Deployment) {
	c.log.Info("restored the pod template changed by hand", "workload", d.Namespace+"/"+d.Labels[contract.LabelWorkload], "deployment", d.Name)
	c.eventFor(d, corev1.EventTypeWarning, ReasonTemplateRestored,
		"the pod template was changed outside Git: Git's template is written again")
}

// takeOverHandEdits gives the controller's apply the fields kubectl owns
// on rolling Deployment d (see takeover.Patch), so that its next apply,
// of Git's template, removes what kubectl added (an env var of `kubectl
// set env`) instead of keeping it beside Git's. The caches hold no
// managed fields (see trim), so it reads d from the API server: one read,
// made only for a template changed by hand. It returns d's resourceVersion
// after the patch, "" when it patched nothing: when d has changed since
// the cache's copy (the patch would then move fields the plan did not
// see), when a command waits on d (set with kubectl annotate, the apply
// would remove it before it is acted on), or on a conflict. The apply
// still puts back what Git sets, and the next reconcile takes the fields.
func (c *Controller) takeOverHandEdits(ctx context.Context, d *appsv1.Deployment) (string, error) {
	fresh, err := c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read Deployment %s to take over kubectl's fields: %w", d.Name, err)
	case fresh.ResourceVersion != d.ResourceVersion, fresh.Annotations[contract.AnnotationCommand] != "":
		return "", nil
	}
	patch, err := takeover.Patch(fresh, FieldManager)
	if err != nil || patch == nil {
		return "", err
	}
	out, err := c.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("take over the fields kubectl set on Deployment %s: %w", d.Name, err)
	}
	return out.ResourceVersion, nil
}
