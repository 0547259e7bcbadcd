package rollout

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"plimsoll.dev/plimsoll/contract"
)

// gitDeployment is a Git Deployment "api" of 4 replicas with the given
// plimsoll.dev/ annotations.
func gitDeployment(annotations map[string]string) *appsv1.Deployment {
	n, deadline := int32(4), int32(60)
	labels := map[string]string{"app": "api"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop", Labels: map[string]string{"app": "api", contract.LabelSync: "default"},
			Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n, ProgressDeadlineSeconds: &deadline,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "registry.example/api:v1"}}},
			},
		},
	}
}

func service(name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
}

// settle plays the Deployment controller for the fake API server: every
// Deployment reports its replicas available and its rollout complete.
func settle(t *testing.T, client *fake.Clientset) {
	t.Helper()
	ctx := context.Background()
	list, err := client.AppsV1().Deployments("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		d := &list.Items[i]
		n := *d.Spec.Replicas
		want := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}}
		if fmt.Sprint(d.Status) == fmt.Sprint(want) {
			continue
		}
		d.Status = want
		if _, err := client.AppsV1().Deployments("shop").UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// requests returns the API requests the client saw since the last call,
// watches and the informers' lists aside, as "verb resource/name" lines.
func requests(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "watch" || a.GetVerb() == "list" {
			continue
		}
		line := a.GetVerb() + " " + a.GetResource().Resource
		if n, ok := a.(interface{ GetName() string }); ok {
			line += "/" + n.GetName()
		}
		if u, ok := a.(k8stesting.UpdateAction); ok && !strings.Contains(line, "/") {
			if m, ok := u.GetObject().(metav1.Object); ok {
				line += "/" + m.GetName()
			}
		}
		out = append(out, line)
	}
	client.ClearActions()
	return out
}

// TestUnchangedWorkloadMakesNoRequest: a blue-green and a canary workload
// are handed over and reconciled until they are Healthy (the fake API
// server standing in for the Deployment controller); from then on, a
// reconcile of the unchanged workload, and the same commit handed over
// again, make no API request at all: no GET, no write.
func TestUnchangedWorkloadMakesNoRequest(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		services    []string
	}{
		{name: "canary", services: []string{"api"}, annotations: map[string]string{
			contract.AnnotationStrategy: contract.StrategyCanary, contract.AnnotationService: "api", contract.AnnotationSteps: "50%, 100%"}},
		{name: "blue-green", services: []string{"api"}, annotations: map[string]string{
			contract.AnnotationStrategy: contract.StrategyBlueGreen, contract.AnnotationActiveService: "api", contract.AnnotationScaleDownDelay: "0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := fake.NewClientset()
			for _, s := range tt.services {
				if _, err := client.CoreV1().Services("shop").Create(ctx, service(s), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
			c := New(Config{Client: client, SyncName: "default", Clock: clk})
			for _, f := range c.factories {
				f.Start(ctx.Done())
			}
			if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
				t.Fatal("caches did not sync")
			}
			close(c.started)
			git := gitDeployment(tt.annotations)
			if err := c.CheckDeployment(ctx, git, tt.services); err != nil {
				t.Fatalf("CheckDeployment: %v", err)
			}
			if err := c.SyncDeployments(ctx, "c0ffee1", "first", []*appsv1.Deployment{git}); err != nil {
				t.Fatalf("SyncDeployments: %v", err)
			}
			// Reconcile until quiet; each round lets the caches catch up.
			var last []string
			for round := 0; ; round++ {
				if round == 30 {
					t.Fatalf("still writing after 30 rounds: %v", last)
				}
				settle(t, client)
				time.Sleep(50 * time.Millisecond) // the informers see the writes
				clk.Step(time.Minute)             // timed steps and delays run out
				requests(client)
				if err := c.reconcile(ctx, "shop/api"); err != nil {
					t.Fatalf("reconcile round %d: %v", round, err)
				}
				if last = requests(client); len(last) == 0 {
					break
				}
			}
			w := c.observe("shop", "api", nil)
			primary := w.deployment("")
			if tt.name == "blue-green" {
				primary = w.deployment(contract.SuffixBlue)
			}
			if primary == nil || primary.Annotations[contract.AnnotationPhase] != contract.PhaseHealthy {
				t.Fatalf("workload not Healthy once quiet: %v", primary)
			}
			// The same commit handed over again is no change.
			if err := c.SyncDeployments(ctx, "c0ffee1", "first", []*appsv1.Deployment{gitDeployment(tt.annotations)}); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				if err := c.reconcile(ctx, "shop/api"); err != nil {
					t.Fatal(err)
				}
			}
			if got := requests(client); len(got) != 0 {
				t.Errorf("reconciles of an unchanged %s workload made %d requests, want 0:\n%s", tt.name, len(got), strings.Join(got, "\n"))
			}
			if n := c.queue.Len(); n > 1 {
				t.Errorf("%d workloads queued by an unchanged hand-off", n)
			}
		})
	}
}
