package strategies

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// String returns the kind as Action.String begins: its verb, and the
// kind of object when the kind fixes it ("label pod", "delete rs", "hold
// out rs"); "ActionKind(N)" for a kind not listed.
func (k ActionKind) String() string {
	switch k {
	case ActionWrite:
		return "write"
	case ActionLabel:
		return "label pod"
	case ActionUnlabel:
		return "unlabel pod"
	case ActionSelect:
		return "select"
	case ActionClearCommand:
		return "clear command"
	case ActionHoldOut:
		return "hold out rs"
	case ActionRestore:
		return "restore rs"
	case ActionDelete:
		return "delete"
	case ActionDeletePod:
		return "delete pod"
	case ActionDeleteReplicaSet:
		return "delete rs"
	case ActionRetarget:
		return "retarget"
	case ActionHandOver:
		return "hand over rs"
	case ActionApply:
		return "apply"
	case ActionMetadata:
		return "metadata"
	case ActionAdopt:
		return "adopt"
	}
	return "ActionKind(" + strconv.Itoa(int(k)) + ")"
}

// String returns the action in one short line, for the debug log of the
// actions executed and for tests: the verb, the object, then only what
// the action sets, space-separated, in a fixed order. A Deployment is
// named by its suffix, "<name>" for the workload's own; a Service by its
// name when the action names one, else by its role (active, preview,
// canary); "-key" removes key, "key=value" sets it.
//
//	write <deployment> [replicas=N] [paused|resumed] [template] [strategy=S] [cause="..."] [status] [role=R] [annotations=k,k] [-command] [alone]
//	apply [replicas=N] [stamp] [strategy=S] [cause="..."] [always] [quiet-status] [take-over] [undone]
//	metadata <deployment> [role=R] [-annotation ...]
//	adopt <deployment> [label=value ...]
//	label pod <pod>                 unlabel pod <pod>
//	select <service> [key=value] [-key ...] [keep=N] [repair]
//	clear command
//	hold out rs <replicaset> key=value
//	restore rs <replicaset> key=value
//	hand over rs <replicaset>
//	delete <deployment> [orphan]    delete rs <replicaset>    delete pod <pod>
//	retarget <deployment>
//
// S is the strategy's type, with a rolling update's maxSurge/maxUnavailable
// ("-" for one unset): "RollingUpdate:100%/0", "Recreate". Labels and
// annotations are listed by key in sorted order, so that the line is the
// same for the same action. The abort of canary "api" at 50% of 4, say,
// is:
//
//	unlabel pod api-canary-5d8-p0
//	unlabel pod api-canary-5d8-p1
//	write <name> replicas=4 status role=stable -command
//	write -canary replicas=0 status role=canary
func (a Action) String() string {
	parts := []string{a.Kind.String()}
	add := func(s ...string) { parts = append(parts, s...) }
	flag := func(set bool, s string) {
		if set {
			add(s)
		}
	}
	switch a.Kind {
	case ActionWrite:
		add(deploymentOf(a.Deployment))
		if a.Replicas != nil {
			add("replicas=" + strconv.Itoa(int(*a.Replicas)))
		}
		if a.Paused != nil {
			add(map[bool]string{true: "paused", false: "resumed"}[*a.Paused])
		}
		flag(a.Template != nil, "template")
		if a.Strategy != nil {
			add("strategy=" + updateStrategyText(*a.Strategy))
		}
		if a.ChangeCause != "" {
			add("cause=" + strconv.Quote(a.ChangeCause))
		}
		flag(a.Status, "status")
		if a.Role != "" {
			add("role=" + string(a.Role))
		}
		if len(a.Annotations) > 0 {
			add("annotations=" + strings.Join(slices.Sorted(maps.Keys(a.Annotations)), ","))
		}
		flag(a.ClearCommand, "-command")
		flag(a.Alone, "alone")
	case ActionApply:
		if w := a.Apply; w != nil {
			if w.Replicas != nil {
				add("replicas=" + strconv.Itoa(int(*w.Replicas)))
			}
			flag(w.Stamp, "stamp")
			if w.Strategy != nil {
				add("strategy=" + updateStrategyText(*w.Strategy))
			}
			if w.ChangeCause != "" {
				add("cause=" + strconv.Quote(w.ChangeCause))
			}
			flag(w.Always, "always")
			flag(w.QuietStatus, "quiet-status")
			flag(w.TakeOver, "take-over")
			flag(w.Undone, "undone")
		}
	case ActionMetadata:
		add(deploymentOf(a.Deployment))
		if a.Role != "" {
			add("role=" + string(a.Role))
		}
		for _, key := range a.Drop {
			add("-" + key)
		}
	case ActionAdopt:
		add(deploymentOf(a.Deployment))
		for _, key := range slices.Sorted(maps.Keys(a.Labels)) {
			add(key + "=" + a.Labels[key])
		}
	case ActionLabel, ActionUnlabel, ActionDeletePod:
		add(a.Pod)
	case ActionSelect:
		add(cmp.Or(a.ServiceName, string(a.Service)))
		if a.Key != "" {
			add(a.Key + "=" + a.Value)
		}
		for _, key := range a.Drop {
			add("-" + key)
		}
		if a.Keep > 0 {
			add("keep=" + strconv.Itoa(int(a.Keep)))
		}
		flag(a.Repair, "repair")
	case ActionHoldOut, ActionRestore:
		add(a.ReplicaSet, a.Key+"="+a.Value)
	case ActionHandOver, ActionDeleteReplicaSet:
		add(a.ReplicaSet)
	case ActionDelete:
		add(deploymentOf(a.Deployment))
		flag(a.Orphan, "orphan")
	case ActionRetarget:
		add(deploymentOf(a.Deployment))
	}
	return strings.Join(parts, " ")
}

// deploymentOf names a Deployment of a workload by its suffix, as
// Action.String writes it: "<name>" for the workload's own, the suffix
// ("-canary", "-blue") for the others.
func deploymentOf(suffix string) string {
	if suffix == "" {
		return "<name>"
	}
	return suffix
}

// updateStrategyText writes update strategy s as Action.String does: its type,
// and a rolling update's maxSurge/maxUnavailable, "-" for one unset;
// "{}" for a strategy with no type, which the API server defaults.
func updateStrategyText(s appsv1.DeploymentStrategy) string {
	out := cmp.Or(string(s.Type), "{}")
	if r := s.RollingUpdate; r != nil {
		value := func(v *intstr.IntOrString) string {
			if v == nil {
				return "-"
			}
			return v.String()
		}
		out += fmt.Sprintf(":%s/%s", value(r.MaxSurge), value(r.MaxUnavailable))
	}
	return out
}
