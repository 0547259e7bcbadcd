//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// Images of the smoke test. kwok keeps a pod whose image contains
// "does-not-exist" Pending and unready, as a kubelet would with an image it
// cannot pull.
const (
	goodImage = "registry.example/web:v1"
	badImage  = "registry.example/web:does-not-exist"
)

// TestDeploymentSemantics reproduces, on the local control plane, the native
// Deployment behaviour that plimsoll's rolling strategy builds on.
//
// With 4 replicas and the default 25% maxSurge / 25% maxUnavailable, the
// controller may run 4 + ceil(0.25*4) = 5 pods and must keep
// 4 - floor(0.25*4) = 3 available. A new template whose pods never become
// Ready therefore stalls at 3 Ready old pods and 2 unready new ones, and the
// Service keeps serving from the 3. Restoring the previous template, as
// `kubectl rollout undo` does, brings 4/4 back.
func TestDeploymentSemantics(t *testing.T) {
	ctx := context.Background()
	ns := kit.NewNamespace(t, suite.client, "")
	deployments := suite.client.AppsV1().Deployments(ns)

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := suite.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service: %v", err)
	}
	if _, err := deployments.Create(ctx, webDeployment(4, goodImage), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}

	t.Log("4 replicas become 4/4 Ready")
	waitForComplete(t, ns, "web", 4)
	ready, unready := podsByReadiness(t, ns, "app=web")
	if len(ready) != 4 || len(unready) != 0 {
		t.Fatalf("after the first rollout: %d ready and %d unready pods, want 4 and 0", len(ready), len(unready))
	}
	waitForServiceAddresses(t, ns, "web", podIPs(ready))

	t.Log("an image that cannot be pulled stalls the rollout at 3 old Ready pods and 2 new unready ones")
	setImage(t, ns, "web", badImage)
	stalled := func(ctx context.Context) error {
		ready, unready := podsByReadiness(t, ns, "app=web")
		if got := imagesOf(ready); len(ready) != 3 || !slices.Equal(got, []string{goodImage}) {
			return fmt.Errorf("ready pods: %d with images %v, want 3 with %s", len(ready), got, goodImage)
		}
		if got := imagesOf(unready); len(unready) != 2 || !slices.Equal(got, []string{badImage}) {
			return fmt.Errorf("unready pods: %d with images %v, want 2 with %s", len(unready), got, badImage)
		}
		return nil
	}
	waitFor(t, "the rollout to stall", func(ctx context.Context) (bool, error) {
		return stalled(ctx) == nil, nil
	})
	// The Deployment controller has nothing more it may do: the state holds.
	holdsFor(t, "the stalled rollout", 5*time.Second, stalled)

	t.Log("the Service lists only the Ready pods' addresses as ready, the new pods' as not ready")
	ready, unready = podsByReadiness(t, ns, "app=web")
	waitForServiceAddresses(t, ns, "web", podIPs(ready))
	waitFor(t, "the unready pods to be listed as not ready", func(ctx context.Context) (bool, error) {
		_, notReady := serviceAddresses(t, ns, "web")
		return slices.Equal(notReady, podIPs(unready)), nil
	})

	t.Log("rolling back to the previous template brings 4/4 back")
	kubectl(t, "rollout", "undo", "deployment/web", "-n", ns)
	waitForComplete(t, ns, "web", 4)
	waitFor(t, "only the 4 old-image pods to remain", func(ctx context.Context) (bool, error) {
		pods, err := suite.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 4 && slices.Equal(imagesOf(pods.Items), []string{goodImage}), nil
	})
	ready, unready = podsByReadiness(t, ns, "app=web")
	if len(ready) != 4 || len(unready) != 0 {
		t.Fatalf("after the rollback: %d ready and %d unready pods, want 4 and 0", len(ready), len(unready))
	}
	waitForServiceAddresses(t, ns, "web", podIPs(ready))
	waitFor(t, "no address to be listed as not ready", func(ctx context.Context) (bool, error) {
		_, notReady := serviceAddresses(t, ns, "web")
		return len(notReady) == 0, nil
	})
}

// webDeployment is a plain Deployment as a user writes it: no strategy
// fields, so the API server defaults them (RollingUpdate, 25%/25%).
func webDeployment(replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "web",
						Image: image,
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
					}},
				},
			},
		},
	}
}

func setImage(t *testing.T, ns, name, image string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, image)
	_, err := suite.client.AppsV1().Deployments(ns).Patch(context.Background(), name,
		"application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("set image of %s to %s: %v", name, image, err)
	}
}

// waitForComplete waits until the Deployment's controller has observed its
// latest spec and every one of replicas pods is updated, ready and available.
func waitForComplete(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	waitFor(t, fmt.Sprintf("deployment %s/%s to be %d/%d", ns, name, replicas, replicas), func(ctx context.Context) (bool, error) {
		d, err := suite.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation &&
			s.Replicas == replicas && s.UpdatedReplicas == replicas &&
			s.ReadyReplicas == replicas && s.AvailableReplicas == replicas, nil
	})
}

// podsByReadiness lists the live (not terminating) pods matching selector,
// split by their Ready condition.
func podsByReadiness(t *testing.T, ns, selector string) (ready, unready []corev1.Pod) {
	t.Helper()
	pods, err := suite.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("list pods %s: %v", selector, err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if podReady(&p) {
			ready = append(ready, p)
		} else {
			unready = append(unready, p)
		}
	}
	return ready, unready
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// imagesOf returns the distinct container images of pods, sorted.
func imagesOf(pods []corev1.Pod) []string {
	var images []string
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			if !slices.Contains(images, c.Image) {
				images = append(images, c.Image)
			}
		}
	}
	slices.Sort(images)
	return images
}

// podIPs returns the pods' IPs, sorted.
func podIPs(pods []corev1.Pod) []string {
	ips := make([]string, 0, len(pods))
	for _, p := range pods {
		ips = append(ips, p.Status.PodIP)
	}
	slices.Sort(ips)
	return ips
}

// serviceAddresses returns the addresses in the Service's EndpointSlices,
// sorted, split into those marked ready (what a proxy sends traffic to) and
// the rest.
func serviceAddresses(t *testing.T, ns, service string) (ready, notReady []string) {
	t.Helper()
	selector := labels.Set{discoveryv1.LabelServiceName: service}.String()
	list, err := suite.client.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("list EndpointSlices of %s: %v", service, err)
	}
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				ready = append(ready, e.Addresses...)
			} else {
				notReady = append(notReady, e.Addresses...)
			}
		}
	}
	slices.Sort(ready)
	slices.Sort(notReady)
	return ready, notReady
}

// waitForServiceAddresses waits until the Service's ready addresses are
// exactly want.
func waitForServiceAddresses(t *testing.T, ns, service string, want []string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("service %s ready addresses to be %s", service, strings.Join(want, ",")), func(ctx context.Context) (bool, error) {
		ready, _ := serviceAddresses(t, ns, service)
		return slices.Equal(ready, want), nil
	})
}
