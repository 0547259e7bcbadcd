//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// TestHPAScalesOnExternalMetric shows that the local control plane's real
// HorizontalPodAutoscaler controller scales a Deployment on a load the test
// sets, read through the aggregation layer from the metrics adapter and
// Prometheus. No plimsoll is involved: this is the ground the autoscaling
// tests of plimsoll's workloads stand on.
//
// The HPA targets an average of 100 per replica of the External metric, so
// it wants ceil(load/100) replicas within [2, 8]: the Deployment, created
// with 1 replica, goes to 2 at a load of 200 (the minimum, which 200/100
// also gives), and to 6 at a load of 600. 600 is 3 times what 2 replicas
// are meant to serve, far outside the controller's 10% tolerance. An HPA
// without spec.behavior grows at most to max(2 * current, 4) replicas per
// decision, so 2 -> 6 takes two: 2 -> 4, and 4 -> 6 at the next sync
// (hack/cluster sets the sync period to 5s).
func TestHPAScalesOnExternalMetric(t *testing.T) {
	a := startMetricsAdapter(t)
	ns := kit.NewNamespace(t, suite.client, "")

	a.setLoad(t, ns, "web", 200)
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte(rollingDeployment(1, goodImage)+"---\n"+loadHPAManifest("web", 2, 8)), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-n", ns, "-f", manifest)

	t.Log("at a load of 200 the HPA reads the metric and holds 2 replicas")
	waitForScaleTarget(t, ns, "web", "web", 2)
	waitForComplete(t, ns, "web", 2)

	t.Log("at a load of 600 it scales the Deployment to 6")
	changed := time.Now()
	a.setLoad(t, ns, "web", 600)
	served := time.Since(changed)
	waitForScaleTarget(t, ns, "web", "web", 6)
	t.Logf("load 600 served by the metrics API %s after it was set; HPA decided 6 replicas %s after that",
		served.Round(100*time.Millisecond), (time.Since(changed) - served).Round(100*time.Millisecond))
	waitForComplete(t, ns, "web", 6)
}

// hpaCondition returns the HPA's condition of type c, or one of status
// Unknown if it has none.
func hpaCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, c autoscalingv2.HorizontalPodAutoscalerConditionType) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, cond := range hpa.Status.Conditions {
		if cond.Type == c {
			return cond
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: c, Status: corev1.ConditionUnknown}
}
