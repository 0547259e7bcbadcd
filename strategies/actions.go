package strategies

import (
	"cmp"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// ActionKind is what one action of a plan does.
type ActionKind int

// The actions a plan may list.
const (
	// ActionWrite writes a Deployment of the workload: the plan's status,
	// and the action's role, replicas, template and command clearing.
	ActionWrite ActionKind = iota + 1
	// ActionLabel gives a canary pod plimsoll.dev/serving="true".
	ActionLabel
	// ActionUnlabel takes plimsoll.dev/serving away from a canary pod.
	ActionUnlabel
	// ActionSelect sets one key of a Service's selector.
	ActionSelect
	// ActionClearCommand removes the command the reconcile acted on from
	// the workload's primary Deployment, after the writes it asked for.
	ActionClearCommand
	// ActionHoldOut takes label Key (of value Value) away from the
	// ReplicaSet ReplicaSet, and records it in plimsoll.dev/held-out.
	ActionHoldOut
	// ActionRestore gives label Key=Value back to the ReplicaSet
	// ReplicaSet, and drops plimsoll.dev/held-out.
	ActionRestore
	// ActionDelete deletes the workload's Deployment Deployment; with
	// Orphan, its ReplicaSets keep running, owned by nothing.
	ActionDelete
	// ActionDeletePod deletes the pod Pod.
	ActionDeletePod
	// ActionDeleteReplicaSet deletes the ReplicaSet ReplicaSet and its
	// pods.
	ActionDeleteReplicaSet
	// ActionRetarget points the workload's HorizontalPodAutoscaler at its
	// Deployment Deployment.
	ActionRetarget
	// ActionHandOver gives the ReplicaSet ReplicaSet, the canary
	// Deployment's, to the stable Deployment: its owner moves from the one
	// to the other in one patch (see planCanary, step 5 of a hand-over).
	ActionHandOver
	// ActionApply applies Git's Deployment <name> of a rolling workload
	// with server-side apply, as Apply says.
	ActionApply
	// ActionMetadata writes the metadata of the workload's Deployment
	// Deployment alone, before anything else is written of it: the role
	// Role (none for ""), without the annotations Drop, and without what
	// Git dropped of the labels and annotations the controller wrote on
	// it from Git. <name> of a workload switching to blue-green becomes
	// idle, and serves until the first color takes over; <name> of one
	// switching to rolling loses the previous strategy's annotations,
	// which an apply does not remove (another operation wrote them).
	ActionMetadata
	// ActionAdopt takes over the Deployment <name>, found running but not
	// written by plimsoll: it gets the labels Labels, the fields kubectl
	// owns on it become the controller's, and the ReplicaSets it controls
	// get the workload's label (see PlanAdoption). Metadata only: its
	// template, and so every pod, stays as it runs.
	ActionAdopt
)

// ServiceRole names a Service a strategy steers.
type ServiceRole string

// The Services of the strategies, named by the workload's annotations.
const (
	// ServiceActive is plimsoll.dev/active-service of a blue-green workload.
	ServiceActive ServiceRole = "active"
	// ServicePreview is plimsoll.dev/preview-service; a workload without
	// one skips its actions.
	ServicePreview ServiceRole = "preview"
	// ServiceCanary is plimsoll.dev/service of a canary workload.
	ServiceCanary ServiceRole = "canary"
)

// Action is one write of a plan. A plan lists its actions in the order
// they are to be executed; the caller executes them one by one, stops at
// the first that fails, and plans again.
type Action struct {
	Kind ActionKind
	// Deployment names the Deployment of an ActionWrite by its suffix to
	// the workload's name: "" for <name>, contract.SuffixCanary,
	// contract.SuffixBlue or contract.SuffixGreen.
	Deployment string
	// Status makes the write record the plan's status and step state.
	Status bool
	// Replicas, when set, is the replica count the write gives it.
	Replicas *int32
	// Role, when set, is the plimsoll.dev/role the write gives it.
	Role Role
	// Template, when set, is the pod template the write gives it.
	Template *corev1.PodTemplateSpec
	// Strategy, when set, is the update strategy the write gives it.
	Strategy *appsv1.DeploymentStrategy
	// ChangeCause, when set, is the kubernetes.io/change-cause the write
	// gives it: what `kubectl rollout history` lists for its new
	// ReplicaSet.
	ChangeCause string
	// ClearCommand drops plimsoll.dev/command in the same write: the
	// command was acted on in this plan.
	ClearCommand bool
	// Paused, when set, is the spec.paused the write gives it.
	Paused *bool
	// Annotations, when set, are annotations the write gives it besides
	// the status: a message, the inputs of Git that an error names.
	Annotations map[string]string
	// Alone writes the Deployment and not its template's ReplicaSet,
	// which every other write gives the same status annotations (see
	// MirrorOf): the record of an error, which changes no count and no
	// template, and which the Deployment controller copies in its own
	// time. A write refused because the sync's identity may not patch
	// ReplicaSets is told all the same.
	Alone bool
	// ReplicaSet names the ReplicaSet of an ActionHoldOut, an
	// ActionRestore, an ActionHandOver or an ActionDeleteReplicaSet.
	ReplicaSet string
	// Orphan makes an ActionDelete leave the Deployment's ReplicaSets
	// running.
	Orphan bool
	// Pod names the pod of an ActionLabel or ActionUnlabel.
	Pod string
	// Service, Key and Value are the selector entry of an ActionSelect
	// (none for one that only drops keys); Key and Value the label of an
	// ActionHoldOut or ActionRestore. ServiceName, when set, names the
	// Service of an ActionSelect in place of Service: one a previous
	// strategy steered (see PlanRetirement).
	Service     ServiceRole
	ServiceName string
	Key, Value  string
	// Drop are the selector keys an ActionSelect removes in the same
	// write: those of the strategy the workload no longer uses, so that
	// no moment has both (a selector of color and serving selects no pod).
	// Of an ActionMetadata, the annotations it removes.
	Drop []string
	// Labels are the labels an ActionAdopt gives the Deployment.
	Labels map[string]string
	// Apply is the write of an ActionApply.
	Apply *RollingWrite
	// Repair says the selector of an ActionSelect was changed outside the
	// controller: writing it again is a repair, which is reported.
	Repair bool
	// Keep is the fewest ready endpoints the Service of an ActionSelect
	// must have under its new selector (see GuardSelector): the
	// workload's count for the Service that carries its traffic, 0 for a
	// preview.
	Keep int32
}

// sequenceCanary lists the actions of a canary plan. While the rollout
// steps, pods are labelled before the stable Deployment scales down for
// them and unlabelled after it scales up for them: with N = 4 at 50%, one
// more canary pod serves before stable goes from 3 to 2. When the canary
// goes away (an abort, a failure, a finished promotion: the canary to
// zero) its pods are unlabelled first, so they stop serving at once.
func sequenceCanary(plan CanaryPlan, o CanaryObserved, n int32) []Action {
	var actions []Action
	pods := func(kind ActionKind, names []string) {
		for _, name := range names {
			actions = append(actions, Action{Kind: kind, Pod: name})
		}
	}
	// Labels go first: pods join the Service before others leave it. A
	// plan that takes the canary away labels only stable pods (an
	// autoscaled workload's, back into the Service) and then takes every
	// canary pod out at once, before anything else.
	away := plan.CanaryReplicas != nil && *plan.CanaryReplicas == 0
	pods(ActionLabel, plan.Label)
	if away {
		pods(ActionUnlabel, plan.Unlabel)
	}
	if plan.SelectServing {
		actions = append(actions, Action{Kind: ActionSelect, Service: ServiceCanary, Key: contract.LabelServing, Value: "true",
			Drop: []string{contract.LabelColor}, Keep: n})
	}
	actions = append(actions, stableWrite(Action{Kind: ActionWrite, Deployment: "", Status: true, Role: RoleStable,
		Replicas: plan.StableReplicas, Paused: plan.StablePaused, ClearCommand: true}, plan.Stable, o))
	switch {
	case plan.OrphanCanary:
		// The ReplicaSet is the stable's before its canary goes.
		if plan.HandOver != "" {
			actions = append(actions, Action{Kind: ActionHandOver, ReplicaSet: plan.HandOver})
		}
		actions = append(actions, Action{Kind: ActionDelete, Deployment: contract.SuffixCanary, Orphan: true})
	case o.Canary != nil:
		actions = append(actions, Action{Kind: ActionWrite, Deployment: contract.SuffixCanary, Status: true, Role: RoleCanary,
			Replicas: plan.CanaryReplicas, Paused: plan.CanaryPaused})
	}
	for _, rs := range plan.DeleteReplicaSets {
		actions = append(actions, Action{Kind: ActionDeleteReplicaSet, ReplicaSet: rs})
	}
	// After the stable's write: a stable resumed before it adopts a
	// ReplicaSet given back at 0 (see planAdoption).
	for _, h := range plan.HoldOut {
		actions = append(actions, Action{Kind: ActionHoldOut, ReplicaSet: h.ReplicaSet, Key: h.Key, Value: h.Value})
	}
	for _, h := range plan.Restore {
		actions = append(actions, Action{Kind: ActionRestore, ReplicaSet: h.ReplicaSet, Key: h.Key, Value: h.Value})
	}
	if !away {
		pods(ActionUnlabel, plan.Unlabel)
	}
	pods(ActionDeletePod, plan.DeletePods)
	return actions
}

// stableWrite is write, the stable Deployment's, with what t makes of
// its template and strategy:
//
//   - StableServing: its own template labelled serving and with the
//     workload's label (an adopted Deployment's template lacks it, and
//     the stable pods must be in the caches);
//   - StablePromote: the canary's template without its track, labelled
//     serving, under a surge strategy; its change cause is the canary's,
//     so that its new ReplicaSet is the canary's commit in `kubectl
//     rollout history`;
//   - StableHandOver: the canary's very template, so that the stable's
//     new ReplicaSet selects the canary's pods (see planHandOver), and
//     the canary's change cause;
//   - StableSettle: Git's strategy again, which the canary holds.
func stableWrite(write Action, t StableTemplate, o CanaryObserved) Action {
	stable, canary := o.Stable, o.Canary
	switch {
	case t == StableServing && stable != nil:
		tpl := *stable.Spec.Template.DeepCopy()
		setTemplateLabel(&tpl, contract.LabelServing, "true")
		setTemplateLabel(&tpl, contract.LabelWorkload, stable.Name)
		write.Template = &tpl
	case t == StablePromote && stable != nil:
		if canary != nil {
			tpl := *canary.Spec.Template.DeepCopy()
			delete(tpl.Labels, contract.LabelTrack)
			setTemplateLabel(&tpl, contract.LabelServing, "true")
			tpl = podtemplate.Stamp(tpl)
			write.Template, write.ChangeCause = &tpl, canary.Annotations[AnnotationChangeCause]
		}
		surge := Surge(stable.Spec.Strategy)
		write.Strategy = &surge
	case t == StableHandOver && canary != nil:
		tpl := *canary.Spec.Template.DeepCopy()
		write.Template, write.ChangeCause = &tpl, canary.Annotations[AnnotationChangeCause]
	case t == StableSettle && canary != nil:
		strategy := *canary.Spec.Strategy.DeepCopy()
		write.Strategy = &strategy
	}
	return write
}

// setTemplateLabel sets label key=value on template t.
func setTemplateLabel(t *corev1.PodTemplateSpec, key, value string) {
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[key] = value
}

// sequenceBlueGreen lists the actions of a blue-green plan: the colors'
// Deployments first (scale-ups and status), then the Services (the swap),
// then what lost traffic. A color is not scaled down while the active
// Service needs its pods to keep total ready endpoints: the color the
// swap takes traffic from waits for the next plan, and one whose
// endpoints have not left yet waits a second (pending reports such a
// wait); a color with more pods than its count (scaled by hand) goes back
// to it at once, since the endpoints keep total. Before the first swap
// the active Service selects no color and serves every color's pods, so
// scaling one down is the plan's intent, not a race.
//
// A command that swaps (promote, abort) stays on the primary until the
// swap is made, so that a swap that fails is tried again with it; a
// pending promote stays until it acts.
func sequenceBlueGreen(plan BlueGreenPlan, o BlueGreenObserved, total int32) (actions []Action, pending bool) {
	served := func(name string) bool {
		if o.Active == "" {
			return false
		}
		for _, pod := range o.ActiveEndpoints {
			if PodOf(pod, name) {
				return true
			}
		}
		return false
	}
	// keeps reports whether live may go from its count down to n with the
	// active Service keeping n ready endpoints at the least, were every
	// pod that goes one of them: the active color scaled by hand from 2 to
	// 5 goes back to Git's 2 (5 endpoints, 3 pods go, 2 stay), while the
	// color the swap took traffic from waits as long as the endpoints hold
	// only its pods (4 endpoints, 4 pods go, 0 stay).
	keeps := func(live *appsv1.Deployment, to int32) bool {
		return int32(len(o.ActiveEndpoints))-(liveReplicas(live)-to) >= total
	}
	swaps := plan.Active != "" && plan.Active != o.Active
	clearNow := !plan.Pending && !swaps
	for _, color := range []Color{ColorBlue, ColorGreen} {
		live := o.Deployment(color)
		if live == nil {
			continue
		}
		write := Action{Kind: ActionWrite, Deployment: color.Suffix(), Status: true, Role: plan.Roles[color], ClearCommand: clearNow}
		if n, ok := plan.Replicas[color]; ok {
			switch {
			case n < liveReplicas(live) && color == o.Active && swaps:
				pending = true // after the swap, in the next plan
			case n >= liveReplicas(live) || !served(live.Name) || keeps(live, n):
				write.Replicas = &n
			default:
				pending = true
			}
		}
		actions = append(actions, write)
	}
	if plan.Active != "" {
		actions = append(actions, Action{Kind: ActionSelect, Service: ServiceActive, Key: contract.LabelColor, Value: string(plan.Active),
			Drop: []string{contract.LabelServing}, Keep: total})
	}
	if plan.Preview != "" {
		actions = append(actions, Action{Kind: ActionSelect, Service: ServicePreview, Key: contract.LabelColor, Value: string(plan.Preview),
			Drop: []string{contract.LabelServing}})
	}
	if swaps && !plan.Pending {
		actions = append(actions, Action{Kind: ActionClearCommand})
	}
	// The HPA scales what serves: the color the Service selects once the
	// swap is made.
	if to := cmp.Or(plan.Active, o.Active); o.Autoscaled && to != "" && o.Deployment(to) != nil && o.ScaleTarget != to.Suffix() {
		actions = append(actions, Action{Kind: ActionRetarget, Deployment: to.Suffix()})
	}
	if l := o.Legacy; plan.LegacyReplicas != nil && l != nil && liveReplicas(l) != *plan.LegacyReplicas {
		if served(l.Name) {
			pending = true
		} else {
			actions = append(actions, Action{Kind: ActionWrite, Deployment: "", Replicas: plan.LegacyReplicas})
		}
	}
	return actions, pending
}
