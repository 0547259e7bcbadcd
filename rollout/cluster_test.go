package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"plimsoll.dev/plimsoll/contract"
	psync "plimsoll.dev/plimsoll/sync"
)

// cluster is a fake API server with a controller on its informers, and
// settle (settle_test.go) playing the Deployment controller, the kubelet
// and the EndpointSlice controller for it.
type cluster struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	c      *Controller
	// orphaned holds "<resource>/<name>" of the objects deleted with the
	// orphan propagation policy: what they controlled stays, without an
	// owner (see settle).
	orphaned map[string]bool
	// log is the controller's log: it keeps the actions executed (see
	// actions).
	log *actionLog
}

// newCluster starts a controller on a fake API server that holds the
// Services named.
func newCluster(t *testing.T, services ...string) *cluster {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := fake.NewClientset()
	orphaned := map[string]bool{}
	uids := 0
	// The API server gives every object a uid, which owner references
	// name; the fake does not.
	client.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if m, err := meta.Accessor(a.(k8stesting.CreateAction).GetObject()); err == nil && m.GetUID() == "" {
			uids++
			m.SetUID(types.UID(fmt.Sprintf("uid-%d", uids)))
		}
		return false, nil, nil
	})
	client.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		if p := d.GetDeleteOptions().PropagationPolicy; p != nil && *p == metav1.DeletePropagationOrphan {
			orphaned[d.GetResource().Resource+"/"+d.GetName()] = true
		}
		return false, nil, nil
	})
	for _, s := range services {
		if _, err := client.CoreV1().Services("shop").Create(ctx, service(s), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	log := newActionLog()
	c := New(Config{Client: client, SyncName: "default", Clock: clk, Log: slog.New(log)})
	for _, f := range c.factories {
		f.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("caches did not sync")
	}
	close(c.started)
	return &cluster{t: t, ctx: ctx, client: client, clock: clk, c: c, orphaned: orphaned, log: log}
}

// gitDeployment is a Git Deployment "api" of 4 replicas running image
// registry.example/api:<version>, with the given plimsoll.dev/ annotations.
func gitDeployment(version string, annotations map[string]string) *appsv1.Deployment {
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
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "registry.example/api:" + version}}},
			},
		},
	}
}

func service(name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
}

// handOver hands Git's Deployment to the controller as the sync does:
// the check of its commit, then the hand-over's take.
func (k *cluster) handOver(commit string, git *appsv1.Deployment) {
	k.t.Helper()
	h, err := k.c.Check(k.ctx, psync.Handoff{Commit: commit, Subject: "commit " + commit, Deployments: []*appsv1.Deployment{git}})
	if err != nil {
		k.t.Fatalf("Check: %v", err)
	}
	if err := h.Take(k.ctx, nil); err != nil {
		k.t.Fatalf("Take: %v", err)
	}
}

// round settles the cluster, lets the informers and the clock catch up,
// and reconciles the workload once; it returns the requests the
// reconcile made (see requests), and leaves the actions it executed to
// actions.
func (k *cluster) round() []string {
	k.t.Helper()
	k.settle()
	time.Sleep(50 * time.Millisecond) // the informers see the writes
	k.clock.Step(time.Minute)         // timed steps and delays run out
	requests(k.client)
	k.actions()
	if err := k.c.reconcile(k.ctx, "shop/api"); err != nil {
		k.t.Fatalf("reconcile: %v", err)
	}
	return requests(k.client)
}

// toV2 hands over v1 of "api" with annotations and lets it settle, then
// hands over v2: the rounds that follow roll revision 2 out.
func (k *cluster) toV2(annotations map[string]string) {
	k.t.Helper()
	k.handOver("c0ffee1", gitDeployment("v1", annotations))
	k.untilQuiet()
	k.handOver("decade2", gitDeployment("v2", annotations))
}

// untilQuiet runs rounds until one makes no request, and returns the
// requests of every round before it (see playUntilQuiet for its actions
// too).
func (k *cluster) untilQuiet() [][]string {
	k.t.Helper()
	var rounds [][]string
	for _, p := range k.playUntilQuiet() {
		rounds = append(rounds, p.requests)
	}
	return rounds
}

// deployment reads Deployment name from the fake API server.
func (k *cluster) deployment(name string) *appsv1.Deployment {
	k.t.Helper()
	d, err := k.client.AppsV1().Deployments("shop").Get(k.ctx, name, metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	return d
}

// lookUp reads Deployment name from the fake API server, nil when there is
// none.
func (k *cluster) lookUp(name string) *appsv1.Deployment {
	k.t.Helper()
	d, err := k.client.AppsV1().Deployments("shop").Get(k.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return d
}

// requests returns the API requests the client saw since the last call,
// watches and the informers' lists aside, as "verb resource/name" lines,
// a patch followed by its body and a Deployment's update by its replicas
// and any maxSurge of its rolling update: "update deployments/api-blue
// replicas=0", "update deployments/api replicas=4 maxSurge=100%".
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
		switch a := a.(type) {
		case k8stesting.DeleteAction:
			if p := a.GetDeleteOptions().PropagationPolicy; p != nil && *p == metav1.DeletePropagationOrphan {
				line += " orphan"
			}
		case k8stesting.PatchAction:
			if a.GetResource().Resource == "deployments" {
				line = "update " + strings.TrimPrefix(line, "patch ") + deploymentPatchLine(a)
				break
			}
			line += " " + string(a.GetPatch())
		case k8stesting.UpdateAction:
			if d, ok := a.GetObject().(*appsv1.Deployment); ok && d.Spec.Replicas != nil {
				line += fmt.Sprintf(" replicas=%d", *d.Spec.Replicas)
				if d.Spec.Paused {
					line += " paused"
				}
				if r := d.Spec.Strategy.RollingUpdate; r != nil && r.MaxSurge != nil {
					line += " maxSurge=" + r.MaxSurge.String()
				}
			}
		}
		out = append(out, line)
	}
	client.ClearActions()
	return out
}

// deploymentPatchLine describes a patch of a Deployment as requests
// lists an update: " replicas=N", " paused" or " resumed", and
// " maxSurge=..." when its spec sets them, " status" when it goes to the
// status subresource, " condition=REASON" for each condition it sets.
func deploymentPatchLine(a k8stesting.PatchAction) string {
	var p struct {
		Spec *struct {
			Replicas *int32 `json:"replicas"`
			Paused   *bool  `json:"paused"`
			Strategy struct {
				RollingUpdate *struct {
					MaxSurge any `json:"maxSurge"`
				} `json:"rollingUpdate"`
			} `json:"strategy"`
		} `json:"spec"`
		Status *struct {
			Conditions []appsv1.DeploymentCondition `json:"conditions"`
		} `json:"status"`
	}
	if a.GetPatchType() == types.JSONPatchType {
		var ops []struct {
			Path  string          `json:"path"`
			Value json.RawMessage `json:"value"`
		}
		_ = json.Unmarshal(a.GetPatch(), &ops)
		for _, op := range ops {
			if op.Path == "/spec" {
				_ = json.Unmarshal([]byte(`{"spec":`+string(op.Value)+`}`), &p)
			}
		}
	} else {
		_ = json.Unmarshal(a.GetPatch(), &p)
	}
	line := ""
	if p.Spec != nil && p.Spec.Replicas != nil {
		line += fmt.Sprintf(" replicas=%d", *p.Spec.Replicas)
	}
	if p.Spec != nil && p.Spec.Paused != nil {
		line += map[bool]string{true: " paused", false: " resumed"}[*p.Spec.Paused]
	}
	if p.Spec != nil && p.Spec.Strategy.RollingUpdate != nil && p.Spec.Strategy.RollingUpdate.MaxSurge != nil {
		line += fmt.Sprintf(" maxSurge=%v", p.Spec.Strategy.RollingUpdate.MaxSurge)
	}
	if a.GetSubresource() == "status" {
		line += " status"
	}
	if p.Status != nil {
		for _, c := range p.Status.Conditions {
			line += fmt.Sprintf(" condition=%s", c.Reason)
		}
	}
	return line
}
