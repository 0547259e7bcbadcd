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
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/internal/takeover"
	"plimsoll.dev/plimsoll/strategies"
)

// runsGit reports whether Deployment d runs Git's template as it was
// written: stamped with desired, the hash of git's template, still holding
// every field git sets (see podtemplate.Holds), and no field of it
// owned by kubectl (see handEdits). A template changed by hand (`kubectl
// set image`, `kubectl set env`, `kubectl set resources`, `kubectl edit`)
// keeps the stamp it was written with, so the hash alone reads as Git's;
// this tells it apart, and the caller writes Git's template again (see
// restoring), as a sync restores any other object. Not restored:
//   - a Deployment whose Git Deployment or live object carries
//     plimsoll.dev/kubectl-edits: keep;
//   - a generation that a write of Git's template made (see
//     templateChecks.wrote), whatever it holds: when another writer (a
//     mutating webhook) puts its change back, writing again would change
//     nothing, and the controller does not fight it in a loop.
func (c *Controller) runsGit(d, git *appsv1.Deployment, desired string) bool {
	if !stampedWith(d, desired) {
		return false
	}
	if keepsHandEdits(git, d) {
		return true
	}
	return c.templates.runs(d, &git.Spec.Template, desired, handOwned(d, c.hand.ownsTemplate(d)))
}

// keepsHandEdits reports whether Git Deployment git or live Deployment d
// carries plimsoll.dev/kubectl-edits: keep.
func keepsHandEdits(git, d *appsv1.Deployment) bool {
	return keepsKubectlEdits(git.Annotations) || keepsKubectlEdits(d.Annotations)
}

// handOwned is whether kubectl's owning fields of d's template (owned)
// counts as a change by hand. An adopted template, not stamped, runs as
// kubectl created it, and kubectl owns it whole: its fields hold Git's
// (the hash says so), and writing it again would stamp it and replace
// every pod (see adopt).
func handOwned(d *appsv1.Deployment, owned bool) bool {
	return owned && d.Spec.Template.Annotations[contract.AnnotationTemplateHash] != ""
}

// restoring reports whether want, a write of Deployment live, restores
// Git's template over one changed by hand (runsGit said no for live, and
// want carries Git's template): it is written even when live holds every
// field of want, since what kubectl added is to go.
func (c *Controller) restoring(live, want *appsv1.Deployment) bool {
	return c.templates.restores(live, want) != nil
}

// stampedWith reports whether d's template reads as hash (see
// podtemplate.LiveHash). Once runsGit has said no, such a template was
// changed by hand: Git's revision, not a new one, goes out again.
func stampedWith(d *appsv1.Deployment, hash string) bool {
	return d != nil && podtemplate.LiveHash(d.Spec.Template) == hash
}

func keepsKubectlEdits(annotations map[string]string) bool {
	return annotations[contract.AnnotationKubectlEdits] == contract.KubectlEditsKept
}

// templateChecks remembers, for each Deployment, what runsGit found at the
// generation it looked at, so that a workload's reconciles (one for each
// of its pods' changes) compare a template once per change of its spec,
// not once each.
type templateChecks struct {
	mu sync.Mutex
	by map[string]templateCheck
}

// templateCheck is what runsGit found of one Deployment at one generation,
// against the Git template git whose hash is hash: whether the template
// held git's fields, whether a restore is due, and whether the generation
// came of a restore (settled: taken as Git's whatever it holds).
type templateCheck struct {
	uid        types.UID
	generation int64
	hash       string
	git        *corev1.PodTemplateSpec
	holds      bool
	due        bool
	settled    bool
}

func newTemplateChecks() *templateChecks {
	return &templateChecks{by: map[string]templateCheck{}}
}

// runs is runsGit past the stamp: whether d's template holds git (hash
// hash), compared only when d's generation or the hash changed since, and
// kubectl owns none of it (owned).
func (t *templateChecks) runs(d *appsv1.Deployment, git *corev1.PodTemplateSpec, hash string, owned bool) bool {
	key := d.Namespace + "/" + d.Name
	t.mu.Lock()
	e, ok := t.by[key]
	t.mu.Unlock()
	if !ok || e.uid != d.UID || e.generation != d.Generation || e.hash != hash {
		e = templateCheck{uid: d.UID, generation: d.Generation, hash: hash, git: git,
			holds: podtemplate.Holds(d.Spec.Template, *git)}
	}
	e.due = !e.settled && (!e.holds || owned)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.by[key] = e
	return !e.due
}

// restores returns the check of live that makes want a restore (see
// restoring), nil when want is none or creates the Deployment (live nil).
func (t *templateChecks) restores(live, want *appsv1.Deployment) *templateCheck {
	if live == nil {
		return nil // a creation
	}
	t.mu.Lock()
	e, ok := t.by[live.Namespace+"/"+live.Name]
	t.mu.Unlock()
	if !ok || !e.due || e.uid != live.UID || e.generation != live.Generation || !podtemplate.Holds(want.Spec.Template, *e.git) {
		return nil
	}
	return &e
}

// wrote records a write of want over live that the API server returned as
// out, presented to the planners as generation (see specGenerations.of),
// and reports whether it was a restore. Then out's generation is settled.
// A later change of the spec (a new generation) is looked at again.
func (t *templateChecks) wrote(live, want, out *appsv1.Deployment, generation int64) bool {
	e := t.restores(live, want)
	if e == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.by[out.Namespace+"/"+out.Name] = templateCheck{uid: out.UID, generation: generation, hash: e.hash, git: e.git,
		holds: true, settled: true}
	return true
}

// forget drops what is remembered of Deployment ns/name (deleted).
func (t *templateChecks) forget(ns, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.by, ns+"/"+name)
}

// wroteTemplate records a write of want over live that the API server
// returned as out (see templateChecks.wrote). A restore that changed the
// template is logged and reported with a TemplateRestored event on out;
// one that only took kubectl's fields over (their values were Git's
// already, as on a Deployment kubectl created and Git adopted) is not.
func (c *Controller) wroteTemplate(ctx context.Context, live, want, out *appsv1.Deployment) {
	if !c.templates.wrote(live, want, out, c.specs.of(out).Generation) ||
		podtemplate.Hash(live.Spec.Template) == podtemplate.Hash(want.Spec.Template) {
		return
	}
	c.templateRestored(ctx, out, "")
}

// templateRestored logs and records, as a TemplateRestored Warning Event
// on d, that Git's template goes out again over one changed outside Git;
// where says where when it is not d itself ("on web-green").
func (c *Controller) templateRestored(ctx context.Context, d *appsv1.Deployment, where string) {
	c.log.Info("restored the pod template changed by hand", "workload", d.Namespace+"/"+d.Labels[contract.LabelWorkload], "deployment", d.Name,
		"where", where)
	msg := "the pod template was changed outside Git: Git's template is written again"
	if where != "" {
		msg += " " + where
	}
	c.eventFor(ctx, d, corev1.EventTypeWarning, ReasonTemplateRestored, msg)
}

// recordedAnnotations returns the annotations that record the status and
// state of Deployment d: its own, or, when `kubectl rollout undo` has put
// an earlier revision's over them, those of the ReplicaSet of d that
// records a later revision (see rewound).
func recordedAnnotations(d *appsv1.Deployment, rsets []*appsv1.ReplicaSet) map[string]string {
	if rs := rewound(d, rsets); rs != nil {
		return rs.Annotations
	}
	return annotationsOf(d)
}

// rewound returns the ReplicaSet of Deployment d (one d controls) that
// records a later plimsoll.dev/revision than d itself, nil when none does.
// The Deployment controller copies a Deployment's annotations onto its
// newest ReplicaSet, so none records more than the Deployment, until
// `kubectl rollout undo` copies the annotations of the ReplicaSet it goes
// back to onto the Deployment, the status of that earlier revision
// included: revision 2 Healthy reads as revision 1, and Git's template,
// put back, as a revision 2 of its own. The ReplicaSet that records the
// latest revision tells what was.
func rewound(d *appsv1.Deployment, rsets []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if d == nil {
		return nil
	}
	own, err := strategies.ReadStatus(d.Annotations)
	if err != nil {
		return nil
	}
	var latest *appsv1.ReplicaSet
	best := own.Revision
	for _, rs := range rsets {
		if !metav1.IsControlledBy(rs, d) {
			continue
		}
		if st, err := strategies.ReadStatus(rs.Annotations); err == nil && st.Revision > best {
			latest, best = rs, st.Revision
		}
	}
	return latest
}

// rewoundByHand reports whether the status annotations of Deployment d
// were written over by someone else than the controller: `kubectl rollout
// undo` copies the annotations of the ReplicaSet it goes back to, and
// owns them from then on. On a canary's stable Deployment that
// ReplicaSet, the newest until the promotion, may record the very
// revision the Deployment does (see rewound), and only who wrote them
// tells.
func (c *Controller) rewoundByHand(d *appsv1.Deployment, rsets []*appsv1.ReplicaSet) bool {
	return rewound(d, rsets) != nil || c.hand.rewrote(d) != ""
}

// claimHandEditFields gives the controller the fields kubectl owns on
// Deployment live (see takeover.Patch) before want, a restore, is written
// over it: so that a rolling Deployment's apply of Git's template removes
// what kubectl added (an env var of `kubectl set env`) instead of keeping
// it beside Git's, and so that kubectl owns nothing of the template once
// it is Git's again, which an update does not see to when a value stays
// as it is. The caches hold no managed fields (see trim), so it reads live
// from the API server: one read, made only for a restore. It returns want,
// or a copy on the resourceVersion the patch left when want carries one
// (an update; an autoscaled rolling apply, whose count is still the one
// planned with). Nothing is patched when live has changed since the
// cache's copy (the patch would move fields the plan did not see), when a
// command waits on it (set with kubectl annotate, the write would remove
// it before it is acted on), or on a conflict: the write still puts back
// what Git sets, and the next reconcile takes the fields.
func (c *Controller) claimHandEditFields(ctx context.Context, live, want *appsv1.Deployment) (*appsv1.Deployment, error) {
	fresh, err := c.client.AppsV1().Deployments(live.Namespace).Get(ctx, live.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return want, nil
	case err != nil:
		return nil, fmt.Errorf("read Deployment %s to take over kubectl's fields: %w", live.Name, err)
	case fresh.ResourceVersion != live.ResourceVersion, fresh.Annotations[contract.AnnotationCommand] != "":
		return want, nil
	}
	out, err := c.claimKubectlFields(ctx, fresh)
	switch {
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return want, nil
	case err != nil:
		return nil, fmt.Errorf("take over the fields kubectl set on Deployment %s: %w", live.Name, err)
	case out == nil:
		return want, nil
	}
	if want.ResourceVersion == "" {
		return want, nil
	}
	want = want.DeepCopy()
	want.ResourceVersion = out.ResourceVersion
	return want, nil
}

// claimKubectlFields sends the patch that gives the controller the fields
// kubectl owns on Deployment d, as read (see takeover.Patch), and returns
// d as stored; nil, and no error, when kubectl owns none. The patch
// carries d's resourceVersion: the error is the API server's, for the
// caller to judge a conflict.
func (c *Controller) claimKubectlFields(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	patch, err := takeover.Patch(d, FieldManager)
	if err != nil || patch == nil {
		return nil, err
	}
	return c.writerOf(d).AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
}
