package rollout

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/contract"
)

// crowd is a fake API server holding n workloads in namespace shop, each
// a Deployment w-NNNN naming Service w-NNNN, a ReplicaSet, pods pods and
// an EndpointSlice, with a controller whose caches hold them all.
func crowd(tb testing.TB, n, pods int) *Controller {
	tb.Helper()
	var objs []runtime.Object
	for i := range n {
		name := fmt.Sprintf("w-%04d", i)
		meta := func(suffix string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: "shop", Name: name + suffix,
				Labels: map[string]string{contract.LabelWorkload: name, contract.LabelSync: "default"}}
		}
		d := &appsv1.Deployment{ObjectMeta: meta("")}
		d.Annotations = map[string]string{contract.AnnotationService: name}
		objs = append(objs, d, &appsv1.ReplicaSet{ObjectMeta: meta("-5d8f")})
		for p := range pods {
			objs = append(objs, &corev1.Pod{ObjectMeta: meta(fmt.Sprintf("-5d8f-%d", p))})
		}
		objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}},
			&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name + "-x",
				Labels: map[string]string{discoveryv1.LabelServiceName: name}}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	c := New(Config{Client: fake.NewClientset(objs...), SyncName: "default", Log: slog.New(slog.DiscardHandler)})
	for _, f := range c.factories {
		f.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		tb.Fatal("caches did not sync")
	}
	return c
}

// TestObserveAmongMany reads one workload of 50 in a namespace: its
// Deployment, ReplicaSet, 3 pods and Service with its slice, and nothing
// of the others; and the workload that names a Service is its one user.
func TestObserveAmongMany(t *testing.T) {
	c := crowd(t, 50, 3)
	w := c.observe("shop", "w-0007", nil)
	var names []string
	for name := range w.deploys {
		names = append(names, "deploy "+name)
	}
	for _, rs := range w.rsets {
		names = append(names, "rs "+rs.Name)
	}
	for _, p := range w.pods {
		names = append(names, "pod "+p.Name)
	}
	for name := range w.services {
		names = append(names, "service "+name)
	}
	slices.Sort(names)
	want := []string{"deploy w-0007", "pod w-0007-5d8f-0", "pod w-0007-5d8f-1", "pod w-0007-5d8f-2", "rs w-0007-5d8f", "service w-0007"}
	if !slices.Equal(names, want) {
		t.Errorf("observed %q, want %q", names, want)
	}
	if _, ok := w.ready["w-0007"]; !ok {
		t.Error("the Service's ready pods were not read")
	}
	if got := c.serviceUsers("shop", "w-0042"); !slices.Equal(got, []string{"shop/w-0042"}) {
		t.Errorf("users of Service w-0042: %q, want [shop/w-0042]", got)
	}
	if got := c.observe("shop", "w-9999", nil); len(got.deploys)+len(got.rsets)+len(got.pods) != 0 {
		t.Errorf("a workload that does not exist read %d Deployments, %d ReplicaSets, %d pods", len(got.deploys), len(got.rsets), len(got.pods))
	}
}

// BenchmarkObserve reads one workload of 1,000 in one namespace, each of
// 10 pods: what each reconcile of the scale comparison starts with.
func BenchmarkObserve(b *testing.B) {
	c := crowd(b, 1000, 10)
	i := 0
	for b.Loop() {
		c.observe("shop", fmt.Sprintf("w-%04d", i%1000), nil)
		i++
	}
}
