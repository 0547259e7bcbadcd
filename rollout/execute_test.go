package rollout

import (
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/strategies"
)

// The objects of the executor's fixture: canary "api" of 4 replicas at
// rest on v1 (see newExecution).
const (
	stableRS   = "api-0059c3804b"
	canaryRS   = "api-canary-5c7d9"
	stablePod0 = stableRS + "-p0"
	stablePod1 = stableRS + "-p1"
	stablePod2 = stableRS + "-p2"
)

// newExecution settles canary "api" (4 replicas, steps "50%, 100%") on v1
// on the fake cluster and returns it with the execution of its next plan:
// Deployment api at 4 running ReplicaSet stableRS's 4 serving pods,
// api-canary at 0 with ReplicaSet canaryRS at 0, Service api selecting
// app=api and plimsoll.dev/serving=true. api carries command "promote",
// the one the execution acted on, and HPA api targets it.
func newExecution(t *testing.T) (*cluster, *execution) {
	t.Helper()
	k := newCluster(t, "api")
	git := gitDeployment("v1", canaryAnnotations)
	k.handOver("c0ffee1", git)
	k.untilQuiet()
	canary := k.deployment("api-canary")
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: canaryRS, Namespace: "shop",
		Labels:          map[string]string{"app": "api", contract.LabelWorkload: "api"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(canary, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: canary.Spec.Selector, Template: canary.Spec.Template}}
	if _, err := k.client.AppsV1().ReplicaSets("shop").Create(k.ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The fake API server defaults nothing; the real one stores the
	// defaults, and the writes compare against them.
	for _, name := range []string{"api", "api-canary"} {
		d := k.deployment(name)
		d.Spec = podtemplate.DeploymentSpec(d.Spec)
		d.Spec.Template = podtemplate.Defaulted(d.Spec.Template)
		if name == "api" {
			d.Annotations[contract.AnnotationCommand] = "promote"
		}
		if _, err := k.client.AppsV1().Deployments("shop").Update(k.ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}, MaxReplicas: 8}}
	if _, err := k.client.AutoscalingV2().HorizontalPodAutoscalers("shop").Create(k.ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the informers see the writes
	w := k.c.observe("shop", "api", canaryAnnotations)
	if w.replicaSet(canaryRS) == nil || w.replicaSet(stableRS) == nil || len(w.pods) != 4 {
		t.Fatalf("fixture: want ReplicaSets %s and %s and 4 pods, have %d ReplicaSets and %d pods", stableRS, canaryRS, len(w.rsets), len(w.pods))
	}
	k.client.ClearActions()
	primary := w.deployment("")
	return k, &execution{w: w, services: map[strategies.ServiceRole]*corev1.Service{strategies.ServiceCanary: w.services["api"]},
		annotations: map[string]string{contract.AnnotationPhase: contract.PhaseProgressing}, primary: primary, commandOn: primary,
		command: "promote", autoscaler: hpa}
}

// calls lists the writes the fake API server received since the last
// call, one line each: "<verb> <resource>[/<subresource>] <name> <body>",
// the body being a patch as sent, or for a delete its propagation policy
// and preconditions.
func calls(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		verb := a.GetVerb()
		if verb == "get" || verb == "list" || verb == "watch" {
			continue
		}
		res := a.GetResource().Resource
		if s := a.GetSubresource(); s != "" {
			res += "/" + s
		}
		line := verb + " " + res
		switch a := a.(type) {
		case k8stesting.PatchAction:
			line += " " + a.GetName() + " " + string(a.GetPatch())
		case k8stesting.DeleteAction:
			line += " " + a.GetName()
			o := a.GetDeleteOptions()
			if o.PropagationPolicy != nil {
				line += " " + string(*o.PropagationPolicy)
			}
			if p := o.Preconditions; p != nil && p.UID != nil {
				line += " uid=" + string(*p.UID)
			}
			if p := o.Preconditions; p != nil && p.ResourceVersion != nil {
				line += " resourceVersion=" + *p.ResourceVersion
			}
		case k8stesting.CreateAction:
			if m, ok := a.GetObject().(metav1.Object); ok {
				line += " " + m.GetName()
			}
		}
		out = append(out, line)
	}
	client.ClearActions()
	return out
}

// TestExecuteByAction executes each kind of action alone on the same
// workload and checks the writes it makes, and that it makes no other:
// what to write is in the action, the executor only sends it. The cases
// without a write are those whose object is not there (a Deployment,
// pod, autoscaler or command the workload does not have), and a
// selector that would leave the Service fewer ready endpoints than the
// action keeps, which no plan may get past.
func TestExecuteByAction(t *testing.T) {
	tests := []struct {
		name   string
		action strategies.Action
		setup  func(x *execution)
		// want has one entry per write, each the parts its line must have.
		want    [][]string
		wantErr error
	}{
		{name: "write a count", action: strategies.Action{Kind: strategies.ActionWrite, Deployment: contract.SuffixCanary, Replicas: ptr.To[int32](2)},
			want: [][]string{{"patch deployments api-canary", `"$patch":"replace"`, `"replicas":2`}}},
		{name: "write the status and role", action: strategies.Action{Kind: strategies.ActionWrite, Status: true, Role: strategies.RoleStable},
			want: [][]string{{"patch deployments/status api", `{"metadata":{"annotations":{"plimsoll.dev/commit":null`, `"plimsoll.dev/phase":"Progressing"`}}},
		{name: "write pause and clear the command", action: strategies.Action{Kind: strategies.ActionWrite, Paused: ptr.To(true), ClearCommand: true},
			want: [][]string{{"patch deployments api", `{"op":"test","path":"/metadata/annotations/plimsoll.dev~1command","value":"promote"}`,
				`{"op":"remove","path":"/metadata/annotations/plimsoll.dev~1command"}`, `"paused":true`},
				{"patch deployments/status api", `"reason":"DeploymentPaused"`}}},
		{name: "write a Deployment the workload lacks", action: strategies.Action{Kind: strategies.ActionWrite, Deployment: contract.SuffixBlue, Replicas: ptr.To[int32](4)}},
		{name: "label", action: strategies.Action{Kind: strategies.ActionLabel, Pod: stablePod0},
			want: [][]string{{"patch pods " + stablePod0, `"labels":{"plimsoll.dev/serving":"true"}`, `"plimsoll.dev/served":"true"`, `"controller.kubernetes.io/pod-deletion-cost":null`}}},
		{name: "unlabel", action: strategies.Action{Kind: strategies.ActionUnlabel, Pod: stablePod1},
			want: [][]string{{"patch pods " + stablePod1, `"labels":{"plimsoll.dev/serving":null}`, `"plimsoll.dev/served":null`, `"controller.kubernetes.io/pod-deletion-cost":"-1"`}}},
		{name: "select", action: strategies.Action{Kind: strategies.ActionSelect, Service: strategies.ServiceCanary,
			Key: "app", Value: "api", Drop: []string{contract.LabelServing}, Keep: 4},
			want: [][]string{{"patch services api", `{"spec":{"selector":{"app":"api","plimsoll.dev/serving":null}}}`}}},
		{name: "select refused", action: strategies.Action{Kind: strategies.ActionSelect, Service: strategies.ServiceCanary, Key: "app", Value: "web", Keep: 4},
			wantErr: errSelectorRefused},
		{name: "select a Service by name, only dropping a key", action: strategies.Action{Kind: strategies.ActionSelect, ServiceName: "api",
			Drop: []string{contract.LabelServing}},
			want: [][]string{{"patch services api", `{"spec":{"selector":{"plimsoll.dev/serving":null}}}`}}},
		{name: "apply Git's Deployment", action: strategies.Action{Kind: strategies.ActionApply, Status: true, Role: strategies.RolePrimary,
			Apply: &strategies.RollingWrite{Template: gitDeployment("v2", nil).Spec.Template, Stamp: true, ChangeCause: "bbbbbbb v2"}},
			setup: func(x *execution) { x.git = gitDeployment("v2", nil) },
			want: [][]string{{"patch deployments api", `"image":"registry.example/api:v2"`, `"kubernetes.io/change-cause":"bbbbbbb v2"`,
				`"plimsoll.dev/role":"primary"`, `"plimsoll.dev/phase":"Progressing"`, `"plimsoll.dev/template-hash":`}}},
		{name: "select for a Service the workload lacks", action: strategies.Action{Kind: strategies.ActionSelect, Service: strategies.ServicePreview, Key: "app", Value: "api"}},
		{name: "clear the command", action: strategies.Action{Kind: strategies.ActionClearCommand},
			want: [][]string{{"patch deployments api", `{"op":"test","path":"/metadata/annotations/plimsoll.dev~1command","value":"promote"}`, `{"op":"remove"`}}},
		{name: "clear no command", action: strategies.Action{Kind: strategies.ActionClearCommand}, setup: func(x *execution) { x.command = "" }},
		{name: "hold out", action: strategies.Action{Kind: strategies.ActionHoldOut, ReplicaSet: stableRS, Key: "app", Value: "api"},
			want: [][]string{{"patch replicasets " + stableRS, `"labels":{"app":null}`, `"plimsoll.dev/held-out":"app=api"`, `"$patch":"delete"`}}},
		{name: "restore", action: strategies.Action{Kind: strategies.ActionRestore, ReplicaSet: stableRS, Key: "app", Value: "api"},
			want: [][]string{{"patch replicasets " + stableRS, `"labels":{"app":"api"}`, `"plimsoll.dev/held-out":null`, `"controller":true`}}},
		{name: "hand over", action: strategies.Action{Kind: strategies.ActionHandOver, ReplicaSet: canaryRS},
			want: [][]string{{"patch replicasets " + canaryRS, `{"$patch":"delete","uid":"uid-4"}`, `"name":"api","uid":"uid-3"`}}},
		{name: "delete a ReplicaSet", action: strategies.Action{Kind: strategies.ActionDeleteReplicaSet, ReplicaSet: canaryRS},
			want: [][]string{{"delete replicasets " + canaryRS, "Background", "uid="}}},
		{name: "delete the canary, orphaning", action: strategies.Action{Kind: strategies.ActionDelete, Deployment: contract.SuffixCanary, Orphan: true},
			want: [][]string{{"delete deployments api-canary", "Orphan", "uid=uid-4"}}},
		{name: "delete a pod", action: strategies.Action{Kind: strategies.ActionDeletePod, Pod: stablePod2},
			want: [][]string{{"delete pods " + stablePod2, "uid=", "resourceVersion="}}},
		{name: "delete a pod the workload lacks", action: strategies.Action{Kind: strategies.ActionDeletePod, Pod: "api-elsewhere-p0"}},
		{name: "retarget", action: strategies.Action{Kind: strategies.ActionRetarget, Deployment: contract.SuffixGreen},
			want: [][]string{{"patch horizontalpodautoscalers api", `{"spec":{"scaleTargetRef":{"name":"api-green"}}}`}}},
		{name: "set a role", action: strategies.Action{Kind: strategies.ActionMetadata, Deployment: "", Role: strategies.RoleIdle},
			setup: func(x *execution) { x.git = gitDeployment("v2", nil) },
			want:  [][]string{{"patch deployments api", `{"metadata":{"annotations":{"plimsoll.dev/role":"idle"},"labels":{}}}`}}},
		{name: "drop a previous strategy's annotations", action: strategies.Action{Kind: strategies.ActionMetadata, Deployment: "",
			Drop: []string{contract.AnnotationSteps}},
			setup: func(x *execution) { x.git = gitDeployment("v2", nil) },
			want:  [][]string{{"patch deployments api", `{"metadata":{"annotations":{"plimsoll.dev/steps":null},"labels":{}}}`}}},
		{name: "metadata with nothing to write", action: strategies.Action{Kind: strategies.ActionMetadata, Deployment: ""},
			setup: func(x *execution) { x.git = gitDeployment("v2", nil) }},
		{name: "set the role of a Deployment the workload lacks", action: strategies.Action{Kind: strategies.ActionMetadata, Deployment: contract.SuffixBlue, Role: strategies.RoleIdle}},
		{name: "adopt", action: strategies.Action{Kind: strategies.ActionAdopt, Deployment: "",
			Labels: map[string]string{contract.LabelWorkload: "api", contract.LabelSync: "platform"}},
			setup: func(x *execution) { x.found = x.w.deployment("").DeepCopy() },
			want:  [][]string{{"patch deployments api", `"plimsoll.dev/sync":"platform"`}}},
		{name: "adopt what has the labels already", action: strategies.Action{Kind: strategies.ActionAdopt, Deployment: "",
			Labels: map[string]string{contract.LabelWorkload: "api"}},
			setup: func(x *execution) { x.found = x.w.deployment("").DeepCopy() }},
		{name: "adopt nothing found", action: strategies.Action{Kind: strategies.ActionAdopt, Deployment: "",
			Labels: map[string]string{contract.LabelWorkload: "api"}}},
		{name: "retarget no autoscaler", action: strategies.Action{Kind: strategies.ActionRetarget, Deployment: contract.SuffixGreen},
			setup: func(x *execution) { x.autoscaler = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k, x := newExecution(t)
			if tt.setup != nil {
				tt.setup(x)
			}
			err := k.c.execute(k.ctx, x, []strategies.Action{tt.action})
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("execute: %v, want %v", err, tt.wantErr)
			}
			got := calls(k.client)
			if len(got) != len(tt.want) {
				t.Fatalf("%d writes, want %d:\n  %s", len(got), len(tt.want), strings.Join(got, "\n  "))
			}
			for i, parts := range tt.want {
				for _, p := range parts {
					if !strings.Contains(got[i], p) {
						t.Errorf("write %d lacks %s:\n  %s", i, p, got[i])
					}
				}
			}
		})
	}
}

// TestExecuteStopsAtTheFirstFailure: a plan's actions go out in their
// order; the first refused ends the execution with its error, naming
// what it did, and none after it is sent (the next reconcile plans
// again).
func TestExecuteStopsAtTheFirstFailure(t *testing.T) {
	k, x := newExecution(t)
	k.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetName() == stablePod1 {
			return true, nil, apierrors.NewServiceUnavailable("etcd is away")
		}
		return false, nil, nil
	})
	err := k.c.execute(k.ctx, x, []strategies.Action{
		{Kind: strategies.ActionLabel, Pod: stablePod0},
		{Kind: strategies.ActionUnlabel, Pod: stablePod1},
		{Kind: strategies.ActionDeletePod, Pod: stablePod2},
	})
	if err == nil || !strings.Contains(err.Error(), "label pod "+stablePod1) || !apierrors.IsServiceUnavailable(err) {
		t.Errorf("execute: %v, want the unlabel's error, wrapped", err)
	}
	got := calls(k.client)
	want := []string{"patch pods " + stablePod0, "patch pods " + stablePod1}
	if len(got) != len(want) {
		t.Fatalf("writes:\n  %s\nwant the label, then the failed unlabel, and no delete", strings.Join(got, "\n  "))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("write %d is %s, want %s", i, got[i], w)
		}
	}
}
