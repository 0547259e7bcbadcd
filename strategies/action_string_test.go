package strategies

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"plimsoll.dev/plimsoll/contract"
)

// TestActionString: each kind of action in its one line, the verb, the
// object, then only what the action sets, in a fixed order.
func TestActionString(t *testing.T) {
	surge := Surge(appsv1.DeploymentStrategy{})
	half := intstr.FromString("50%")
	tests := []struct {
		name string
		a    Action
		want string
	}{
		{"a bare write", Action{Kind: ActionWrite}, "write <name>"},
		{"the canary's step", Action{Kind: ActionWrite, Deployment: contract.SuffixCanary, Status: true, Role: RoleCanary, Replicas: ptrTo[int32](2)},
			"write -canary replicas=2 status role=canary"},
		{"the stable paused at 0, the command cleared", Action{Kind: ActionWrite, Status: true, Role: RoleStable, Replicas: ptrTo[int32](0),
			Paused: ptrTo(true), ClearCommand: true},
			"write <name> replicas=0 paused status role=stable -command"},
		{"the stable resumed", Action{Kind: ActionWrite, Paused: ptrTo(false)}, "write <name> resumed"},
		{"a promotion: template, surge, cause", Action{Kind: ActionWrite, Template: &corev1.PodTemplateSpec{}, Strategy: &surge,
			ChangeCause: "commit decade2", Status: true, Role: RoleStable},
			`write <name> template strategy=RollingUpdate:100%/0 cause="commit decade2" status role=stable`},
		{"Git's strategy back, half of it unset", Action{Kind: ActionWrite, Strategy: &appsv1.DeploymentStrategy{
			Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &half}}},
			"write <name> strategy=RollingUpdate:-/50%"},
		{"a strategy with no type", Action{Kind: ActionWrite, Strategy: &appsv1.DeploymentStrategy{}}, "write <name> strategy={}"},
		{"an error recorded alone, annotations by key", Action{Kind: ActionWrite, Deployment: contract.SuffixBlue, Alone: true,
			Annotations: map[string]string{contract.AnnotationMessage: "m", contract.AnnotationCommit: "c"}},
			"write -blue annotations=plimsoll.dev/commit,plimsoll.dev/message alone"},
		{"an apply", Action{Kind: ActionApply, Apply: &RollingWrite{Replicas: ptrTo[int32](3), Stamp: true, Strategy: &surge,
			ChangeCause: "c0ffee1", Always: true, QuietStatus: true, TakeOver: true, Undone: true}},
			`apply replicas=3 stamp strategy=RollingUpdate:100%/0 cause="c0ffee1" always quiet-status take-over undone`},
		{"an apply of nothing", Action{Kind: ActionApply}, "apply"},
		{"metadata: idle", Action{Kind: ActionMetadata, Role: RoleIdle}, "metadata <name> role=idle"},
		{"metadata: a strategy's annotations out", Action{Kind: ActionMetadata, Drop: []string{contract.AnnotationSteps, contract.AnnotationService}},
			"metadata <name> -plimsoll.dev/steps -plimsoll.dev/service"},
		{"adopt, labels by key", Action{Kind: ActionAdopt, Labels: map[string]string{contract.LabelWorkload: "web", "app": "web"}},
			"adopt <name> app=web plimsoll.dev/workload=web"},
		{"label", Action{Kind: ActionLabel, Pod: "web-canary-x"}, "label pod web-canary-x"},
		{"unlabel", Action{Kind: ActionUnlabel, Pod: "web-canary-x"}, "unlabel pod web-canary-x"},
		{"the swap", Action{Kind: ActionSelect, Service: ServiceActive, Key: contract.LabelColor, Value: "green",
			Drop: []string{contract.LabelServing}, Keep: 4},
			"select active plimsoll.dev/color=green -plimsoll.dev/serving keep=4"},
		{"a repair", Action{Kind: ActionSelect, Service: ServiceCanary, Key: contract.LabelServing, Value: "true", Repair: true},
			"select canary plimsoll.dev/serving=true repair"},
		{"a drop from a Service named", Action{Kind: ActionSelect, ServiceName: "web", Service: ServiceActive,
			Drop: []string{contract.LabelColor, contract.LabelServing}},
			"select web -plimsoll.dev/color -plimsoll.dev/serving"},
		{"clear command", Action{Kind: ActionClearCommand}, "clear command"},
		{"hold out", Action{Kind: ActionHoldOut, ReplicaSet: "web-5d8", Key: "app", Value: "web"}, "hold out rs web-5d8 app=web"},
		{"restore", Action{Kind: ActionRestore, ReplicaSet: "web-5d8", Key: "app", Value: "web"}, "restore rs web-5d8 app=web"},
		{"hand over", Action{Kind: ActionHandOver, ReplicaSet: "web-canary-6c8"}, "hand over rs web-canary-6c8"},
		{"delete the canary, orphan", Action{Kind: ActionDelete, Deployment: contract.SuffixCanary, Orphan: true}, "delete -canary orphan"},
		{"delete a color", Action{Kind: ActionDelete, Deployment: contract.SuffixGreen}, "delete -green"},
		{"delete a ReplicaSet", Action{Kind: ActionDeleteReplicaSet, ReplicaSet: "web-5d8"}, "delete rs web-5d8"},
		{"delete a pod", Action{Kind: ActionDeletePod, Pod: "web-5d8-a"}, "delete pod web-5d8-a"},
		{"retarget", Action{Kind: ActionRetarget, Deployment: contract.SuffixGreen}, "retarget -green"},
		{"fields of other kinds ignored", Action{Kind: ActionLabel, Pod: "p", Replicas: ptrTo[int32](1), Status: true}, "label pod p"},
		{"a kind not listed", Action{Kind: 99}, "ActionKind(99)"},
		{"the zero action", Action{}, "ActionKind(0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
