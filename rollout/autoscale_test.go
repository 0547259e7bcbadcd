package rollout

import (
	"context"
	"log/slog"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/contract"
)

// TestLookUpAutoscalers hands blue-green workload "shop" over while the
// caches do not hold the HPA the sync has just created for it (the
// informers are not started): a one-shot sync reads it from the API
// server, so that the swap's retarget sees it in the same run; the daemon,
// another strategy, or a workload whose HPA the caches hold already, make
// no request. An HPA of another workload is not the workload's.
func TestLookUpAutoscalers(t *testing.T) {
	hpa := func(name, target string) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: name},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: target},
			},
		}
	}
	blueGreen := map[string]string{contract.AnnotationStrategy: contract.StrategyBlueGreen}
	canary := map[string]string{contract.AnnotationStrategy: contract.StrategyCanary}
	for _, tt := range []struct {
		name        string
		once        bool
		annotations map[string]string
		cached      bool // the caches hold the workload's HPA already
		want        string
		lists       int
	}{
		{name: "once, blue-green", once: true, annotations: blueGreen, want: "shop", lists: 1},
		{name: "daemon", annotations: blueGreen},
		{name: "once, canary", once: true, annotations: canary},
		{name: "once, held by the caches", once: true, annotations: blueGreen, cached: true, want: "shop-blue"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(hpa("shop", "shop"), hpa("cart", "cart-blue"))
			c := New(Config{Client: client, Once: tt.once, Log: slog.New(slog.DiscardHandler)})
			w := c.observe("web", "shop", tt.annotations)
			if tt.cached {
				w.autoscalers = ofWorkload([]*autoscalingv2.HorizontalPodAutoscaler{hpa("shop", "shop-blue")}, "shop")
			}
			c.lookUpAutoscalers(context.Background(), w, tt.annotations)
			_, target := w.autoscaler("shop", "shop-blue", "shop-green")
			if target != tt.want {
				t.Errorf("the HPA targets %q, want %q", target, tt.want)
			}
			if h, _ := w.autoscaler("cart", "cart-blue"); h != nil {
				t.Errorf("workload shop holds HPA %s of workload cart", h.Name)
			}
			lists := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "list" && a.GetResource().Resource == "horizontalpodautoscalers" {
					lists++
				}
			}
			if lists != tt.lists {
				t.Errorf("%d lists of HPAs from the API server, want %d", lists, tt.lists)
			}
		})
	}
}
