//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// blueGreenExample is examples/blue-green with image shop:<version> and
// the given scale-down delay.
func blueGreenExample(t *testing.T, version, delay string) map[string]string {
	t.Helper()
	return example(t, "blue-green",
		"registry.example/shop:v1", "registry.example/shop:"+version,
		"plimsoll.dev/scale-down-delay: 30s", "plimsoll.dev/scale-down-delay: "+delay)
}

// TestBlueGreenRollout follows examples/blue-green (4 replicas) through two
// revisions while watching the active Service's EndpointSlices: never fewer
// than 4 ready endpoints, every endpoint a new-color pod right after the
// swap, the old color at zero once the delay is over; then an abort after a
// swap puts the old pods back in one step.
func TestBlueGreenRollout(t *testing.T) {
	parallel(t)
	const delay = 15 * time.Second
	s := newSyncTarget(t)
	s.repo.Commit("shop v1", blueGreenExample(t, "v1", delay.String()))
	kit.StartDaemon(t, s, "--interval", "1s")

	t.Log("1. first revision: blue at 4, the active Service selects blue")
	blue := waitForDeployment(t, s.ns, "shop-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))
	if got := selector(t, s.ns, "shop")["plimsoll.dev/color"]; got != "blue" {
		t.Fatalf("active Service selects color %q, want blue", got)
	}
	if got := blue.Annotations["plimsoll.dev/role"]; got != "active" {
		t.Errorf("shop-blue role %q, want active", got)
	}
	endpoints := watchEndpoints(t, s.ns, "shop")
	endpoints.waitReady(t, "4 blue endpoints", func(pods []string) bool { return len(pods) == 4 && allWithPrefix(pods, "shop-blue-") })
	if getDeployment(t, s.ns, "shop") != nil {
		t.Error("a Deployment named shop exists; a blue-green workload runs as shop-blue and shop-green only")
	}

	t.Log("2. revision 2 goes to green; the swap happens once green has 4 available")
	mark := endpoints.mark()
	v2 := s.repo.Commit("shop v2", blueGreenExample(t, "v2", delay.String()))
	endpoints.waitReady(t, "the swap to green", func(pods []string) bool { return len(withPrefix(pods, "shop-green-")) > 0 })
	swapped := time.Now()
	// The first state that holds a green pod must hold green pods only: the
	// selector swap is one patch.
	for _, line := range endpoints.history(mark) {
		if strings.Contains(line, "shop-green-") {
			if strings.Contains(line, "shop-blue-") || !strings.Contains(line, "n=4") {
				t.Errorf("first endpoints state with a green pod: %s; want the 4 green pods only", line)
			}
			break
		}
	}
	if b := getDeployment(t, s.ns, "shop-blue"); b == nil || *b.Spec.Replicas != 4 {
		t.Errorf("blue right after the swap: %v, want still at 4 replicas for the scale-down delay", b)
	}
	if got := selector(t, s.ns, "shop-preview")["plimsoll.dev/color"]; got != "green" {
		t.Errorf("preview Service selects %q after the swap, want green", got)
	}

	t.Log("3. blue scales to zero after the delay; revision 2 Healthy")
	green := waitForDeployment(t, s.ns, "shop-green", "revision 2 Healthy", phaseIs(2, "Healthy"))
	blue = waitForDeployment(t, s.ns, "shop-blue", "scaled to 0", scaledTo(0))
	if since := time.Since(swapped); since < delay-2*time.Second {
		t.Errorf("blue was scaled down %s after the swap, before the %s delay", since.Round(time.Millisecond), delay)
	}
	if n, pods := endpoints.minReadySince(mark); n < 4 {
		t.Errorf("the active Service had %d ready endpoints during the rollout (%v), want never fewer than 4; history:\n%s",
			n, pods, strings.Join(endpoints.history(mark), "\n"))
	}
	if got := images(t, s.ns, "app=shop", "shop-green-"); !onlyImage(got, 4, "registry.example/shop:v2") {
		t.Errorf("green pods run %v, want 4 on v2", got)
	}
	for _, d := range []*appsv1.Deployment{blue, green} {
		if d.Annotations["plimsoll.dev/revision"] != "2" || d.Annotations["plimsoll.dev/phase"] != "Healthy" {
			t.Errorf("%s status %v, want revision 2 Healthy on every Deployment of the workload", d.Name, d.Annotations)
		}
	}
	t.Logf("endpoints during revision 2:\n%s", strings.Join(endpoints.history(mark), "\n"))
	if history := kubectl(t, "rollout", "history", "deployment/shop-green", "-n", s.ns); !strings.Contains(history, v2[:7]+" shop v2") {
		t.Errorf("kubectl rollout history of shop-green does not list %q:\n%s", v2[:7]+" shop v2", history)
	}

	t.Log("4. revision 3 swaps to blue; an abort within the delay swaps back to the green pods at once")
	before := endpoints.ready()
	s.repo.Commit("shop v3", blueGreenExample(t, "v3", delay.String()))
	endpoints.waitReady(t, "the swap to blue", func(pods []string) bool { return allWithPrefix(pods, "shop-blue-") })
	mark = endpoints.mark()
	aborted := time.Now()
	command(t, s.ns, "shop-blue", "abort")
	endpoints.waitReady(t, "the swap back to green", func(pods []string) bool { return slices.Equal(pods, before) })
	t.Logf("abort to the old pods serving: %s", time.Since(aborted).Round(time.Millisecond))
	history := endpoints.history(mark)
	if len(history) < 2 {
		t.Fatalf("endpoints history after the abort: %v", history)
	}
	// One step: from the 4 blue pods straight to the same 4 green pods.
	if n, pods := endpoints.minReadySince(mark); n < 4 {
		t.Errorf("after the abort the Service had %d ready endpoints (%v); history:\n%s", n, pods, strings.Join(history, "\n"))
	}
	if next := history[1]; !strings.Contains(next, strings.Join(before, " ")) {
		t.Errorf("the state after the abort is %s; want the old green pods %v", next, before)
	}
	green = waitForDeployment(t, s.ns, "shop-green", "revision 3 Degraded", phaseIs(3, "Degraded"))
	if green.Annotations["plimsoll.dev/failed-hash"] == "" || green.Annotations["plimsoll.dev/command"] != "" {
		t.Errorf("after the abort: annotations %v, want failed-hash set and the command cleared", green.Annotations)
	}
	waitForDeployment(t, s.ns, "shop-blue", "scaled to 0", scaledTo(0))
	holdsFor(t, "the aborted revision staying out", 3*time.Second, func(ctx context.Context) error {
		if got := selector(t, s.ns, "shop")["plimsoll.dev/color"]; got != "green" {
			t.Errorf("the active Service selects %q", got)
		}
		return nil
	})
}

// manualBlueGreen is examples/blue-green with image shop:<version>,
// auto-promote off, a 5s scale-down delay and a 10s progress deadline.
func manualBlueGreen(t *testing.T, version string) map[string]string {
	t.Helper()
	return example(t, "blue-green",
		"registry.example/shop:v1", "registry.example/shop:"+version,
		"plimsoll.dev/scale-down-delay: 30s", "plimsoll.dev/scale-down-delay: 5s\n    plimsoll.dev/auto-promote: \"false\"",
		"progressDeadlineSeconds: 60", "progressDeadlineSeconds: 10")
}

// TestBlueGreenCommands drives a workload with auto-promote off: the first
// revision goes live at once (nothing serves yet), the second waits for
// promote and is aborted, the third waits for promote with the preview
// Service on it and is promoted, a pause after the swap keeps the
// old color up past its delay until resume, and a revision whose pods
// never become Ready fails without ever taking traffic.
func TestBlueGreenCommands(t *testing.T) {
	s := newSyncTarget(t)
	s.repo.Commit("shop v1", manualBlueGreen(t, "v1"))
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "shop-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))
	endpoints := watchEndpoints(t, s.ns, "shop")
	endpoints.waitReady(t, "4 blue endpoints", func(pods []string) bool { return len(pods) == 4 && allWithPrefix(pods, "shop-blue-") })
	mark := endpoints.mark()

	t.Log("1. revision 2 waits for promote on green; abort before the swap scales green down")
	s.repo.Commit("shop v2", manualBlueGreen(t, "v2"))
	waitForDeployment(t, s.ns, "shop-blue", "waiting for promote", phaseIs(2, "Paused", "waiting for promote"))
	waitForDeployment(t, s.ns, "shop-green", "4 available", scaledTo(4))
	command(t, s.ns, "shop-blue", "abort")
	blue := waitForDeployment(t, s.ns, "shop-blue", "revision 2 Degraded", phaseIs(2, "Degraded", "aborted revision 2"))
	if blue.Annotations["plimsoll.dev/failed-hash"] == "" {
		t.Errorf("no failed-hash after the abort: %v", blue.Annotations)
	}
	waitForDeployment(t, s.ns, "shop-green", "scaled to 0", scaledTo(0))

	t.Log("2. revision 3 is ready on green and waits for promote; the preview Service shows it")
	v3 := s.repo.Commit("shop v3", manualBlueGreen(t, "v3"))
	waitForDeployment(t, s.ns, "shop-blue", "waiting for promote", phaseIs(3, "Paused", "waiting for promote"))
	waitForDeployment(t, s.ns, "shop-green", "4 available", scaledTo(4))
	s.waitForCommit(t, v3) // the sync's handoff of v3 is over: what follows is the controller's alone
	if got := selector(t, s.ns, "shop-preview")["plimsoll.dev/color"]; got != "green" {
		t.Errorf("preview Service selects %q, want green", got)
	}
	checkQuiet(t, s.ns, "shop-blue", "shop-green")
	holdsFor(t, "traffic staying on blue until promote", 2*time.Second, func(context.Context) error {
		if pods := endpoints.ready(); len(pods) != 4 || !allWithPrefix(pods, "shop-blue-") {
			t.Errorf("endpoints %v before promote", pods)
		}
		return nil
	})

	t.Log("3. promote swaps; pause holds blue up past the 5s delay; resume scales it down")
	command(t, s.ns, "shop-blue", "promote")
	endpoints.waitReady(t, "the swap to green", func(pods []string) bool { return len(pods) == 4 && allWithPrefix(pods, "shop-green-") })
	command(t, s.ns, "shop-green", "pause")
	waitForDeployment(t, s.ns, "shop-green", "Paused", phaseIs(3, "Paused", "paused"))
	holdsFor(t, "blue staying up while paused", 7*time.Second, func(context.Context) error {
		if b := getDeployment(t, s.ns, "shop-blue"); *b.Spec.Replicas != 4 {
			t.Errorf("blue asks for %d pods while paused", *b.Spec.Replicas)
		}
		return nil
	})
	command(t, s.ns, "shop-green", "resume")
	waitForDeployment(t, s.ns, "shop-blue", "scaled to 0", scaledTo(0))
	waitForDeployment(t, s.ns, "shop-green", "revision 3 Healthy", phaseIs(3, "Healthy"))

	t.Log("4. revision 4 never becomes Ready on blue: Degraded, traffic never leaves green")
	greenOnly := endpoints.mark()
	s.repo.Commit("shop broken", manualBlueGreen(t, "does-not-exist"))
	green := waitForDeployment(t, s.ns, "shop-green", "revision 4 Degraded", phaseIs(4, "Degraded", "progress deadline exceeded"))
	t.Logf("message: %s", green.Annotations["plimsoll.dev/message"])
	if green.Annotations["plimsoll.dev/failed-hash"] == "" {
		t.Errorf("no failed-hash after the failure: %v", green.Annotations)
	}
	waitForDeployment(t, s.ns, "shop-blue", "scaled to 0", scaledTo(0))
	checkNeverServed(t, endpoints, greenOnly, "shop-blue-", 4)
	if n, pods := endpoints.minReadySince(mark); n < 4 {
		t.Errorf("the active Service had %d ready endpoints (%v); history:\n%s", n, pods, strings.Join(endpoints.history(mark), "\n"))
	}
	if got := selector(t, s.ns, "shop")["plimsoll.dev/color"]; got != "green" {
		t.Errorf("active Service selects %q after the failure, want green", got)
	}
}

// waitingForPromote starts a daemon on a manual blue-green workload and
// returns once revision 2 is ready on green and waits for promote, blue
// serving.
func waitingForPromote(t *testing.T) *syncTarget {
	t.Helper()
	s := newSyncTarget(t)
	s.repo.Commit("shop v1", manualBlueGreen(t, "v1"))
	kit.StartDaemon(t, s, "--interval", "1s")
	waitForDeployment(t, s.ns, "shop-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))
	s.repo.Commit("shop v2", manualBlueGreen(t, "v2"))
	waitForDeployment(t, s.ns, "shop-blue", "waiting for promote", phaseIs(2, "Paused", "waiting for promote"))
	waitForDeployment(t, s.ns, "shop-green", "4 available", scaledTo(4))
	return s
}

// TestBlueGreenServiceChange changes the active Service in Git while a
// revision waits for promote on green: the sync applies the change but
// keeps the controller's color in the selector (a Service's selector is
// replaced whole by an apply), so no green pod ever gets traffic.
func TestBlueGreenServiceChange(t *testing.T) {
	s := waitingForPromote(t)
	endpoints := watchEndpoints(t, s.ns, "shop")
	endpoints.waitReady(t, "4 endpoints", func(pods []string) bool { return len(pods) == 4 })
	mark := endpoints.mark()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch, err := suite.client.CoreV1().Services(s.ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=shop"})
	if err != nil {
		t.Fatal(err)
	}
	colorless := make(chan []string) // every selector the Service had without a color, once the watch ends
	go func() {
		var selectors []string
		for ev := range watch.ResultChan() {
			if svc, ok := ev.Object.(*corev1.Service); ok && svc.Spec.Selector["plimsoll.dev/color"] == "" {
				selectors = append(selectors, fmt.Sprint(svc.Spec.Selector))
			}
		}
		colorless <- selectors
	}()

	files := manualBlueGreen(t, "v2")
	files["service.yaml"] = strings.Replace(files["service.yaml"], "  - name: http\n    port: 80\n    targetPort: http\n",
		"  - name: http\n    port: 80\n    targetPort: http\n  - name: admin\n    port: 81\n    targetPort: http\n", 1)
	s.waitForCommit(t, s.repo.Commit("shop: admin port", files))
	waitFor(t, "the admin port", func(ctx context.Context) (bool, error) {
		svc, err := suite.client.CoreV1().Services(s.ns).Get(ctx, "shop", metav1.GetOptions{})
		return err == nil && len(svc.Spec.Ports) == 2, err
	})
	holdsFor(t, "traffic staying on blue", 2*time.Second, func(context.Context) error {
		if got := selector(t, s.ns, "shop")["plimsoll.dev/color"]; got != "blue" {
			return fmt.Errorf("the active Service selects color %q", got)
		}
		return nil
	})
	checkNeverServed(t, endpoints, mark, "shop-green-", 4)
	cancel()
	if selectors := <-colorless; len(selectors) > 0 {
		t.Errorf("the active Service lost its color: selectors %v", selectors)
	}
}

// TestBlueGreenSwapRefused: a promote whose Service swap the API server
// refuses stays on the Deployment, and traffic on blue, until the swap can
// be made; then the same promote swaps to green, without a second command,
// and is cleared only then.
func TestBlueGreenSwapRefused(t *testing.T) {
	s := waitingForPromote(t)

	lift := freezeSelectors(t, s.ns)
	command(t, s.ns, "shop-blue", "promote")
	holdsFor(t, "the promote waiting for its swap", 3*time.Second, func(context.Context) error {
		if got := selector(t, s.ns, "shop")["plimsoll.dev/color"]; got != "blue" {
			return fmt.Errorf("the active Service selects %q through the policy", got)
		}
		if got := getDeployment(t, s.ns, "shop-blue").Annotations["plimsoll.dev/command"]; got != "promote" {
			return fmt.Errorf("command %q on shop-blue while the swap is refused, want promote", got)
		}
		return nil
	})

	lift()
	waitFor(t, "the swap to green", func(ctx context.Context) (bool, error) {
		return selector(t, s.ns, "shop")["plimsoll.dev/color"] == "green", nil
	})
	waitForDeployment(t, s.ns, "shop-blue", "the promote cleared", func(d *appsv1.Deployment) bool {
		_, pending := d.Annotations["plimsoll.dev/command"]
		return !pending
	})
	waitForDeployment(t, s.ns, "shop-green", "revision 2 Healthy", phaseIs(2, "Healthy"))
}

// freezeSelectors makes the API server refuse any change to the selector
// of a Service in namespace ns, with a ValidatingAdmissionPolicy, and
// returns the function that lifts the refusal. It returns once a dry-run
// change is refused.
func freezeSelectors(t *testing.T, ns string) (lift func()) {
	t.Helper()
	ctx := context.Background()
	name := "freeze-selectors-" + ns
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "object.spec.selector == oldObject.spec.selector",
				Message:    "Service selectors are frozen",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	api := suite.client.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ValidatingAdmissionPolicy: %v", err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ValidatingAdmissionPolicyBinding: %v", err)
	}
	lifted := false
	lift = func() {
		if lifted {
			return
		}
		lifted = true
		if err := api.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete ValidatingAdmissionPolicyBinding: %v", err)
		}
		if err := api.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete ValidatingAdmissionPolicy: %v", err)
		}
	}
	t.Cleanup(lift)
	probe := []byte(`{"spec":{"selector":{"plimsoll.dev/probe":"x"}}}`)
	waitFor(t, "the policy to refuse a selector change", func(ctx context.Context) (bool, error) {
		_, err := suite.client.CoreV1().Services(ns).Patch(ctx, "shop", types.MergePatchType, probe, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "Service selectors are frozen"), nil
	})
	return lift
}
