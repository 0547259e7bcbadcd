package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/internal/takeover"
	"plimsoll.dev/plimsoll/strategies"
	workloads "plimsoll.dev/plimsoll/workload"
)

// DiffDeployment returns, for `plimsoll diff`, the live Deployment that
// serves Git Deployment git and what the controller's write of git would
// make of it once the rollout went through, as the API server's dry-run of
// that write returns it: the defaults filled in, and a field Git dropped
// removed where the write removes it. The write is the one the strategy
// makes: for a rolling Deployment, the apply the planners plan
// (strategies.PlanRolling, then PlanRollingApply) as the executor builds
// it (see diffRolling); for a canary's stable Deployment or a blue-green
// active color, the update of its metadata the take makes (see refresh),
// with Git's template on it as the rollout leaves it. Kept as they are:
//   - the status, role and step annotations: a rollout's progress is not a
//     change of the sync;
//   - the template, when Git's is the revision rolling out (the rollout,
//     not a sync, brings it) or the workload's failed-hash (the refusal,
//     not the sync, keeps it out), unless the live one, Git's revision,
//     was changed by hand (see runsGit) or, on a rolling Deployment,
//     undone by `kubectl rollout undo`;
//   - the replica count, when an HPA scales the Deployment.
//
// A blue-green color comes renamed to Git's name and without the color in
// its selector and template labels, before and after alike, so that it
// reads like the Git Deployment it came from. It reads the API server (diff
// runs without the caches) and writes nothing. nil, nil when git runs as
// nothing yet or its workload switches strategies: its namesake is then
// diffed like any other object.
func (c *Controller) DiffDeployment(ctx context.Context, git *appsv1.Deployment, commit, subject string) (live, after *appsv1.Deployment, err error) {
	strategy := workloads.NamedStrategy(git.Annotations)
	live, err = c.servingAs(ctx, git, strategy)
	if err != nil || live == nil || workloads.NamedStrategy(live.Annotations) != strategy {
		return nil, nil, err
	}
	scaled, err := c.autoscaledLive(ctx, live.Namespace, live.Name)
	if err != nil {
		return nil, nil, err
	}
	want, replace, err := diffWrite(git, live, scaled, changeCause(commit, subject), c.clock.Now())
	if err != nil {
		return nil, nil, err
	}
	if after, err = c.dryRunWrite(ctx, live, want, replace); err != nil {
		return nil, nil, err
	}
	if strategy == contract.StrategyBlueGreen {
		asGit(live, git.Name)
		asGit(after, git.Name)
	}
	return live, after, nil
}

// ServingDeployment returns the live Deployment that serves workload
// ns/name, for the sync to judge a prune of its Git Deployment by (and
// `plimsoll diff` to show it): the one workloads.Serving names, a
// blue-green workload's active color under the workload's name and
// without the color in its selector and template labels; else its
// namesake, a Deployment no strategy has rolled yet; nil for none. It
// reads the API server.
func (c *Controller) ServingDeployment(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
	d, err := workloads.Serving(name, c.apiLookup(ctx, ns))
	switch {
	case err != nil:
		return nil, err
	case d == nil:
		return c.getDeployment(ctx, ns, name)
	case d.Name != name:
		asGit(d, name)
	}
	return d, nil
}

// servingAs returns the live Deployment that serves Git Deployment git
// (see workloads.Serving) when it has the role of strategy there: the
// active color for blue-green, the primary for rolling, the stable
// Deployment for canary; nil for none.
func (c *Controller) servingAs(ctx context.Context, git *appsv1.Deployment, strategy string) (*appsv1.Deployment, error) {
	d, err := workloads.Serving(git.Name, c.apiLookup(ctx, git.Namespace))
	if err != nil || d == nil || d.Annotations[contract.AnnotationRole] != workloads.ServingRole(strategy) {
		return nil, err
	}
	return d, nil
}

// apiLookup is a workloads.Lookup of the Deployments of namespace ns that
// reads the API server.
func (c *Controller) apiLookup(ctx context.Context, ns string) workloads.Lookup {
	return func(name string) (*appsv1.Deployment, error) { return c.getDeployment(ctx, ns, name) }
}

// asGit renames blue-green color d to its workload's name and takes the
// color out of its selector and template labels.
func asGit(d *appsv1.Deployment, name string) {
	d.Name = name
	if d.Spec.Selector != nil {
		delete(d.Spec.Selector.MatchLabels, contract.LabelColor)
	}
	delete(d.Spec.Template.Labels, contract.LabelColor)
}

// dryRunWrite sends the write of d over live, the patch of a canary's or a
// blue-green color's when replace is set (see patchDeployment: it carries
// no resourceVersion, so that the Deployment controller's status writes
// cannot make it conflict), else a server-side apply, as FieldManager with
// the dry-run flag, and returns what the API server would store.
func (c *Controller) dryRunWrite(ctx context.Context, live, d *appsv1.Deployment, replace bool) (*appsv1.Deployment, error) {
	deployments, dry := c.client.AppsV1().Deployments(d.Namespace), []string{metav1.DryRunAll}
	if replace {
		patch, _, err := deploymentPatch(live, d, true)
		if err != nil {
			return nil, err
		}
		out, err := deployments.Patch(ctx, d.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager, DryRun: dry})
		if err != nil {
			return nil, fmt.Errorf("as the rollout controller writes %s: %w", d.Name, err)
		}
		return out, nil
	}
	body, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	force := true
	out, err := deployments.Patch(ctx, d.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force, DryRun: dry})
	if err != nil {
		return nil, fmt.Errorf("as the rollout controller applies it: %w", err)
	}
	return out, nil
}

// diffWrite is the write DiffDeployment dry-runs for Git Deployment git,
// whose workload live serves (scaled: by an HPA's count), and whether it
// is an update (replace) or a server-side apply; cause is the change cause
// of a new template, and now the time the planners judge deadlines by.
func diffWrite(git, live *appsv1.Deployment, scaled bool, cause string, now time.Time) (want *appsv1.Deployment, replace bool, err error) {
	st, err := strategies.ReadStatus(live.Annotations)
	if err != nil {
		return nil, false, err
	}
	if workloads.NamedStrategy(git.Annotations) == contract.StrategyRolling {
		return diffRolling(git, live, st, scaled, cause, now), false, nil
	}
	return diffProgressive(git, live, st, scaled, cause), true, nil
}

// diffRolling is the apply of rolling workload git over live, its
// primary Deployment recorded at st, as the planners make it once the
// rollout went through: strategies.PlanRolling's template (Git's, or the
// live one for a refused revision), strategies.PlanRollingApply's write
// of it (the change cause, a template changed by hand or undone put
// back, the HPA's count), built as the executor builds it (see
// applyObject); the status and the analysis run are kept as they are.
func diffRolling(git, live *appsv1.Deployment, st strategies.Status, scaled bool, cause string, now time.Time) *appsv1.Deployment {
	hash := podtemplate.Hash(git.Spec.Template)
	want := strategies.Desired{Hash: hash, Replicas: git.Spec.Replicas, Commit: st.Commit}
	plan := strategies.PlanRolling(want, st, strategies.RollingObserved{Deployment: live, Now: now})
	held := strategies.RollingHeld{Git: git, Live: live, Recorded: st, Stamped: stampedWith(live, hash), Primary: true,
		Cause: cause, Autoscaled: scaled, Count: specReplicas(live), KeepsHandEdits: keepsHandEdits(git, live),
		RecordedCause: live.Annotations[AnnotationChangeCause]}
	held.RunsGit = plan.Template == strategies.TemplateGit && held.Stamped && !changedByHand(git, live, hash)
	kept := map[string]string{}
	for _, k := range statusKeys {
		if v, ok := live.Annotations[k]; ok {
			kept[k] = v
		}
	}
	for _, a := range strategies.PlanRollingApply(plan, held) {
		if a.Kind == strategies.ActionApply {
			obj := applyObject(git, live, kept, nil, a.Apply)
			if v, ok := kept[contract.AnnotationAnalysisRun]; ok {
				setAnnotation(&obj.ObjectMeta, contract.AnnotationAnalysisRun, v)
			}
			obj.ResourceVersion = ""
			return obj
		}
	}
	// A refused template and nothing running: the planners write nothing.
	obj := rollingObject(git, kept)
	obj.Spec.Template = live.Spec.Template
	return obj
}

// changedByHand reports whether live's template, stamped with Git's hash,
// was changed by hand since (see runsGit), read from the fields the API
// server stores, as `plimsoll diff` has no memory of what it wrote.
func changedByHand(git, live *appsv1.Deployment, hash string) bool {
	return stampedWith(live, hash) && !keepsHandEdits(git, live) &&
		(!podtemplate.Holds(live.Spec.Template, git.Spec.Template) ||
			handOwned(live, takeover.ByHandUnder(live.ManagedFields, "spec", "template")))
}

// diffProgressive is the update of a canary's stable Deployment or a
// blue-green active color live, recorded at st, as the rollout leaves
// it: Git's metadata as the take refreshes it (see refreshed: what
// Git dropped, gone), Git's count unless an HPA owns it, and Git's
// template as the promotion or the swap leaves it, for a new revision
// (strategies.DecideRevision) or over one changed by hand.
func diffProgressive(git, live *appsv1.Deployment, st strategies.Status, scaled bool, cause string) *appsv1.Deployment {
	hash := podtemplate.Hash(git.Spec.Template)
	want := refresh(live, git)
	labels, annotations := writtenKeys(takeover.Decode(live.ManagedFields)).dropped(live, git)
	dropKeys(want, labels, annotations)
	want.ManagedFields = nil
	want.Spec.Replicas = git.Spec.Replicas
	newRevision := strategies.DecideRevision(st, hash).Action == strategies.RevisionNew &&
		hash != podtemplate.LiveHash(live.Spec.Template)
	if newRevision || changedByHand(git, live, hash) {
		// Git's template as the rollout leaves it: the canary promoted,
		// or the color that took it swapped in; or, over one changed by
		// hand, as the controller writes it again (see runsGit).
		t := servingTemplate(git)
		if workloads.NamedStrategy(git.Annotations) == contract.StrategyBlueGreen {
			t = *git.Spec.Template.DeepCopy()
			setLabel(&t.ObjectMeta, contract.LabelColor, live.Spec.Template.Labels[contract.LabelColor])
		}
		want.Spec.Template = strategies.WorkloadTemplate(t, git.Name)
		if newRevision {
			setAnnotation(&want.ObjectMeta, AnnotationChangeCause, cause)
		}
	}
	if scaled {
		want.Spec.Replicas = live.Spec.Replicas
	}
	return want
}

// getDeployment reads a Deployment from the API server; nil when it does
// not exist. Only a controller that does not run (plimsoll diff) and a
// prune read this way.
func (c *Controller) getDeployment(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
	d, err := c.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Deployment %s/%s: %w", ns, name, err)
	}
	return d, nil
}
