package strategies

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// RollingHeld is what the controller holds and observes of a rolling
// workload's Deployment <name> beside what PlanRolling reads, for the one
// write of Git's Deployment a rolling plan makes (see PlanRollingApply).
type RollingHeld struct {
	// Git is the Git Deployment; Live the live Deployment <name>, nil
	// before it exists.
	Git, Live *appsv1.Deployment
	// Recorded is the recorded status the plan was made from.
	Recorded Status
	// RunsGit: the live template is Git's, as the controller writes it or
	// as adopted. It then stays exactly as it runs: an adopted template
	// has neither the workload label nor the stamp, and adding them would
	// replace every pod.
	RunsGit bool
	// Stamped: the live template carries the stamp of Git's template (see
	// podtemplate.Stamp). When it does not run Git's, it was changed by
	// hand in place.
	Stamped bool
	// Primary: Live is a rolling workload's primary; Switching: the
	// Deployments a previous strategy left (colors, a canary) are still
	// there.
	Primary, Switching bool
	// KeepsHandEdits: the live Deployment or Git's keeps kubectl's edits
	// (plimsoll.dev/kubectl-edits: keep).
	KeepsHandEdits bool
	// GitDropped: Git's Deployment no longer sets labels or annotations
	// that the controller wrote on Live from it. An apply removes only
	// what its own applies set, and only once it applies: they go in a
	// write of their own (see ActionMetadata).
	GitDropped bool
	// Cause is the change cause of a new template ("<short commit>
	// <subject>"); RecordedCause is the one recorded with the revision
	// that runs.
	Cause, RecordedCause string
	// Autoscaled: an autoscaler sets the count, Count.
	Autoscaled bool
	Count      int32
	// Once: a one-shot sync, which writes only what Git's intent needs;
	// the status of a revision it did not start is the daemon's to follow.
	Once bool
}

// RollingWrite is the write of an ActionApply: Git's Deployment, labelled
// with the workload and its role, with the plan's status annotations and
// analysis run, and the fields below in place of Git's.
type RollingWrite struct {
	// Template is the pod template written; Stamp labels it with the
	// workload and stamps it (a template from Git or a rollback; a live
	// one goes out as it runs).
	Template corev1.PodTemplateSpec
	Stamp    bool
	// ChangeCause, when set, is its kubernetes.io/change-cause.
	ChangeCause string
	// Strategy, when set, replaces Git's update strategy.
	Strategy *appsv1.DeploymentStrategy
	// Replicas, when set, is the count written, on the live object's
	// resourceVersion: an autoscaler's count, so that a scale after the
	// cache's copy fails the write (a conflict, planned again) instead of
	// being undone.
	Replicas *int32
	// Always writes even when the live Deployment holds all of it: a
	// create, or a template changed by hand that goes out again.
	Always bool
	// QuietStatus compares the live object without the status: a write
	// that would change only the status is skipped.
	QuietStatus bool
	// TakeOver moves kubectl's fields of the template to the controller
	// first, so that the write replaces them (a hand edit of Git's
	// revision); Undone says the write puts back the template a `kubectl
	// rollout undo` replaced.
	TakeOver, Undone bool
}

// PlanRollingApply lists the actions of rolling plan, made for Git's
// Deployment: one ActionApply with the template plan.Template names, or
// none when the Git template is refused and nothing runs yet (no
// Deployment is created for a refused template). Which template, which
// change cause and which strategy go out, in order:
//
//   - Git's template, when the plan names it: as it runs when it runs
//     already (the change cause kept); Git's again over one changed in
//     place by hand (taken over, the cause kept) or undone by hand
//     (`kubectl rollout undo`: the revision's recorded cause); else Git's
//     new one, with the commit as its cause.
//   - The live template, kept as it is with its cause.
//   - The rollback's template, stamped, the live cause kept.
//
// While a previous strategy's Deployments are still there, <name> takes
// the template over without a pod going before its replacement is
// available (see Surge); the write after their retirement puts Git's
// strategy back.
func PlanRollingApply(plan RollingPlan, h RollingHeld) []Action {
	live := h.Live
	if live == nil && plan.Template == TemplateLive {
		return nil
	}
	var actions []Action
	if stale := staleInputs(h); h.GitDropped || len(stale) > 0 {
		actions = append(actions, Action{Kind: ActionMetadata, Deployment: "", Drop: stale})
	}
	w := &RollingWrite{Always: live == nil, QuietStatus: h.Once}
	keepCause := func() {
		if live != nil {
			w.ChangeCause = live.Annotations[AnnotationChangeCause]
		}
	}
	switch plan.Template {
	case TemplateGit:
		w.Template, w.Stamp = h.Git.Spec.Template, true
		switch {
		case live != nil && h.RunsGit:
			w.Template, w.Stamp = live.Spec.Template, false
			keepCause()
		case live != nil && h.Stamped:
			w.Always, w.TakeOver = true, true
			keepCause()
		case h.Primary && Undone(live, h.Recorded, plan.Status.Hash, h.KeepsHandEdits):
			w.Always, w.Undone = true, true
			w.ChangeCause = h.RecordedCause
		default:
			w.ChangeCause = h.Cause
		}
	case TemplateLive:
		w.Template = live.Spec.Template
		keepCause()
	case TemplateRollback:
		w.Template, w.Stamp = plan.Rollback.Template, true
		keepCause()
	}
	if v := annotatedTemplateOf(live).Labels[contract.LabelServing]; v != "" && !h.Primary {
		// A canary's stable Deployment becomes the primary: its pods keep
		// the serving label, which the canary's Service still selects by
		// until the switch retires its key (see PlanRetirement). The label
		// stays for as long as the template runs, and goes with the next
		// revision's: taking it away alone would replace every pod.
		w.Template = *w.Template.DeepCopy()
		if w.Template.Labels == nil {
			w.Template.Labels = map[string]string{}
		}
		w.Template.Labels[contract.LabelServing] = v
	}
	if live != nil && h.Switching {
		surge := Surge(h.Git.Spec.Strategy)
		w.Strategy = &surge
	}
	if h.Autoscaled && live != nil {
		count := h.Count
		w.Replicas = &count
	}
	return append(actions, Action{Kind: ActionApply, Status: true, Role: RolePrimary, Apply: w})
}

// Followed is what a rolling workload followed without an intent from
// Git holds, besides its plan: the Deployment, the status it records
// (read from the ReplicaSet that records a later revision when `kubectl
// rollout undo` put an earlier one's annotations on the Deployment), that
// ReplicaSet (nil when the Deployment records its own status), and
// whether the Deployment keeps hand edits (plimsoll.dev/hand-edits).
type Followed struct {
	Live           *appsv1.Deployment
	Recorded       Status
	Rewound        *appsv1.ReplicaSet
	KeepsHandEdits bool
}

// PlanRollingFollow lists the one write of a rolling workload that runs
// without an intent from Git (a daemon that started and has not synced
// yet), planned from its recorded hash: the plan's status and analysis
// run and, for a rollback, the rollback's template, labelled with
// workload and stamped. The executor skips the write when the Deployment
// holds all of it already.
//
// A template put back by `kubectl rollout undo` is written over again, as
// a write of Git's would (see Undone): the template of the revision the
// workload records, read from its ReplicaSet, which holds it as the
// rollout left it, stamp and workload label included. Worked through:
// revision 2 Healthy at hash H2, undone to revision 1's template H1; the
// Deployment now carries revision 1's annotations and template, and
// ReplicaSet web-h2 still records revision 2 at H2. Planned from the
// Deployment alone, revision 1 would be Healthy again, and the next
// handoff would count revision 2 as new; planned from web-h2, the write
// restores H2's template with revision 2's status, and the Deployment
// controller scales web-h2 back up. A ReplicaSet whose template, read
// field by field (see podtemplate.Hash), is not the recorded one (edited
// by hand under the same stamp) is not written back, and neither is one
// the workload keeps hand edits of, or a Degraded revision's: the next
// handoff writes Git's.
func PlanRollingFollow(plan RollingPlan, workload string, f Followed) []Action {
	a := Action{Kind: ActionWrite, Deployment: "", Status: true}
	switch {
	case plan.Template == TemplateRollback:
		t := WorkloadTemplate(plan.Rollback.Template, workload)
		a.Template = &t
	case plan.Template == TemplateGit && f.Rewound != nil && Undone(f.Live, f.Recorded, plan.Status.Hash, f.KeepsHandEdits) &&
		podtemplate.Hash(f.Rewound.Spec.Template) == plan.Status.Hash:
		t := *f.Rewound.Spec.Template.DeepCopy()
		delete(t.Labels, LabelPodTemplateHash)
		a.Template = &t
	}
	return []Action{a}
}

// WorkloadTemplate is template t, copied, labelled with workload and
// stamped (see podtemplate.Stamp): a template as the controller writes it
// on any Deployment of the workload.
func WorkloadTemplate(t corev1.PodTemplateSpec, workload string) corev1.PodTemplateSpec {
	t = *t.DeepCopy()
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[contract.LabelWorkload] = workload
	return podtemplate.Stamp(t)
}

// PlanRollingCommand lists the one write of a command acted on by a
// rolling workload (see ApplyCommand): pause and resume are the
// Deployment's own spec.paused, and the status and analysis run after
// the command go with them, in the write that clears the command.
func PlanRollingCommand(done Commanded) []Action {
	paused := done.Held.Paused
	return []Action{{Kind: ActionWrite, Deployment: "", Status: true, Paused: &paused, ClearCommand: true}}
}

// progressiveInputs are the annotations a blue-green or canary workload
// reads, which a rolling one does not, and the state they record.
var progressiveInputs = slices.Concat([]string{
	contract.AnnotationStrategy, contract.AnnotationActiveService, contract.AnnotationPreviewService, contract.AnnotationService,
	contract.AnnotationAutoPromote, contract.AnnotationScaleDownDelay, contract.AnnotationSteps,
}, contract.StateKeys)

// staleInputs are the annotations of a previous strategy that h's live
// Deployment <name>, not yet the primary of a rolling workload (the
// legacy Deployment of blue-green, the stable one of canary), carries
// and Git's does not set: a rolling apply does not remove them.
func staleInputs(h RollingHeld) []string {
	if h.Live == nil || h.Primary {
		return nil
	}
	var stale []string
	for _, k := range progressiveInputs {
		_, inLive := h.Live.Annotations[k]
		if _, inGit := h.Git.Annotations[k]; inLive && !inGit {
			stale = append(stale, k)
		}
	}
	return stale
}

// annotatedTemplateOf is d's pod template, an empty one for nil.
func annotatedTemplateOf(d *appsv1.Deployment) corev1.PodTemplateSpec {
	if d == nil {
		return corev1.PodTemplateSpec{}
	}
	return d.Spec.Template
}
