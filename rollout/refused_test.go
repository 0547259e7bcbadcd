package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
)

// TestRefusedWriteIsReported: a canary whose hand-over the API server
// forbids (the patch that takes the stable's ReplicaSet out) says so in its message, with the verb and the object, in a
// Warning Event and a metric, keeps its phase (the revision did not
// fail), and goes on by itself once the write is allowed again.
func TestRefusedWriteIsReported(t *testing.T) {
	k := newCluster(t, "api")
	k.c.metrics = NewMetrics(prometheus.NewRegistry())
	forbid := true
	k.client.PrependReactor("patch", "replicasets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if !forbid || !strings.Contains(string(p.GetPatch()), contract.AnnotationHeldOut) {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets"}, p.GetName(),
			errorString(`User "system:serviceaccount:shop:deployer" cannot patch resource "replicasets" in API group "apps" in the namespace "shop"`))
	})
	k.toV2(canaryAnnotations)
	var msg string
	for range 3 * refusalsReported {
		k.settle()
		time.Sleep(50 * time.Millisecond)
		k.clock.Step(time.Minute)
		k.c.queue.Add("shop/api")
		k.c.processNext(k.ctx)
		if msg = k.deployment("api").Annotations[contract.AnnotationMessage]; strings.HasPrefix(msg, refusedPrefix) {
			break
		}
	}
	for _, want := range []string{refusedPrefix, "ReplicaSet api-", `cannot patch resource "replicasets"`} {
		if !strings.Contains(msg, want) {
			t.Fatalf("the stable's message %q does not say %q", msg, want)
		}
	}
	if phase := k.deployment("api").Annotations[contract.AnnotationPhase]; phase != contract.PhaseProgressing {
		t.Errorf("phase %q after a refused write, want Progressing kept", phase)
	}
	if n := testutil.ToFloat64(k.c.metrics.writes.WithLabelValues("shop", "api")); n < 1 {
		t.Errorf("plimsoll_rollout_write_refusals_total{shop,api} = %v, want at least 1", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !k.warned(ReasonWriteRefused, `cannot patch resource "replicasets"`) {
		if time.Now().After(deadline) {
			t.Fatal("no Warning Event WriteRefused naming the refused write")
		}
		time.Sleep(20 * time.Millisecond)
	}

	forbid = false
	k.untilQuiet()
	if msg := k.deployment("api").Annotations[contract.AnnotationMessage]; strings.HasPrefix(msg, refusedPrefix) {
		t.Errorf("the message still says %q once the write is allowed", msg)
	}
}

// errorString is an error of text s.
type errorString string

func (e errorString) Error() string { return string(e) }

// warned reports whether a Warning Event of reason whose message holds
// text was recorded in namespace shop.
func (k *cluster) warned(reason, text string) bool {
	list, err := k.client.CoreV1().Events("shop").List(k.ctx, metav1.ListOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Type == "Warning" && e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}
