//go:build e2e

package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/rollout"
	"plimsoll.dev/plimsoll/test/internal/kit"
)

// Annotations of a workload switched to a progressive strategy, as one
// YAML block (see switchedExample).
const (
	adoptCanary    = "    plimsoll.dev/strategy: canary\n    plimsoll.dev/service: web\n    plimsoll.dev/steps: \"50%, 100%\"\n"
	adoptBlueGreen = "    plimsoll.dev/strategy: blue-green\n    plimsoll.dev/active-service: web\n    plimsoll.dev/scale-down-delay: 3s\n"
)

// TestAdoptKubectlDeployment takes over a Deployment that `kubectl apply`
// created with 4 ready pods: pushed to Git as it runs, it becomes revision
// 1, Healthy, with the same pods (same UIDs, no new ReplicaSet), and the
// polls after write nothing; switched to canary with a new image in a later
// commit, the Service never has fewer than 4 ready endpoints.
func TestAdoptKubectlDeployment(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	files := switchedExample(t, "v1", "")
	kubectlApply(t, s.ns, files)
	endpoints := adoptRunning(t, s, "web v1, as kubectl applied it", files)

	t.Log("2. switched to canary with a new image: full capacity throughout")
	mark := endpoints.mark()
	s.repo.Commit("web v2, canary", switchedExample(t, "v2", adoptCanary))
	waitForDeployment(t, s.ns, "web", "revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForDeployment(t, s.ns, "web-canary", "scaled to 0", scaledTo(0))
	waitForReadyPods(t, s.ns, "app=web", 4)
	checkPods(t, s.ns, "app=web", 4, "registry.example/web:v2")
	checkMinReady(t, endpoints, mark, 4)
	// kubectl created web and so owned its fields: nothing of that is a
	// change by hand, to be put back.
	list, err := suite.client.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, reason := range []string{rollout.ReasonTemplateRestored, rollout.ReasonScaleRestored} {
		if msgs := eventMessages(list.Items, reason); len(msgs) > 0 {
			t.Errorf("%s Events on web, which no one changed by hand: %q", reason, msgs)
		}
	}
}

// TestAdoptHelmRelease takes over a Deployment that a Helm release
// installed (Helm's field manager, its labels and release annotations):
// pushed to Git as the chart renders it, it becomes revision 1, Healthy,
// with the same pods; switched to blue-green with a new image in a later
// commit, the Service never has fewer than 4 ready endpoints, and Helm
// still knows its release.
func TestAdoptHelmRelease(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	files := switchedExample(t, "v1", "")
	chart := t.TempDir()
	templates := map[string]string{"Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n"}
	for name, text := range files {
		templates["templates/"+name] = text
	}
	kit.WriteFiles(t, chart, templates)
	if _, err := kit.Helm(t, "install", "web", chart, "--namespace", s.ns, "--kubeconfig", suite.kubeconfig); err != nil {
		t.Fatal(err)
	}
	endpoints := adoptRunning(t, s, "web v1, as Helm installed it", files)
	if d := getDeployment(t, s.ns, "web"); d.Labels["app.kubernetes.io/managed-by"] != "Helm" || d.Annotations["meta.helm.sh/release-name"] != "web" {
		t.Errorf("adopted web lost Helm's marks: labels %v", d.Labels)
	}

	t.Log("2. switched to blue-green with a new image: full capacity throughout")
	mark := endpoints.mark()
	s.repo.Commit("web v2, blue-green", switchedExample(t, "v2", adoptBlueGreen))
	waitForDeployment(t, s.ns, "web-blue", "revision 2 Healthy", phaseIs(2, "Healthy"))
	waitForDeployment(t, s.ns, "web", "the adopted Deployment scaled to 0", scaledTo(0))
	endpoints.waitReady(t, "4 endpoints of web-blue", func(pods []string) bool {
		return len(pods) == 4 && len(withPrefix(pods, "web-blue-")) == 4
	})
	checkPods(t, s.ns, "app=web", 4, "registry.example/web:v2")
	checkMinReady(t, endpoints, mark, 4)
	if out, err := kit.Helm(t, "status", "web", "--namespace", s.ns, "--kubeconfig", suite.kubeconfig); err != nil || !strings.Contains(out, "STATUS: deployed") {
		t.Errorf("helm status after the switch: %v\n%s", err, out)
	}
}

// adoptRunning waits for the Deployment web that files describe to run 4
// ready pods, as installed by hand, then pushes files to Git and starts
// the daemon: web becomes revision 1, Healthy, with the same pods and
// ReplicaSets, the polls after write nothing, and the Service never has
// fewer than 4 ready endpoints. It returns the watch of the Service's
// endpoints.
func adoptRunning(t *testing.T, s *syncTarget, subject string, files map[string]string) *endpointWatch {
	t.Helper()
	waitForReadyPods(t, s.ns, "app=web", 4)
	pods, sets := podUIDs(t, s.ns, "app=web"), replicaSetNames(t, s.ns, "app=web")
	endpoints := watchEndpoints(t, s.ns, "web")
	endpoints.waitReady(t, "4 endpoints", func(pods []string) bool { return len(pods) == 4 })

	t.Log("1. the same manifests in Git: adopted as they run")
	mark := endpoints.mark()
	v1 := s.repo.Commit(subject, files)
	daemon := kit.StartDaemon(t, s, "--interval", "1s")
	d := waitForDeployment(t, s.ns, "web", "revision 1 Healthy", phaseIs(1, "Healthy"))
	if d.Labels["plimsoll.dev/workload"] != "web" || d.Annotations["plimsoll.dev/commit"] != v1 {
		t.Errorf("adopted web: labels %v, commit %q; want the workload label and commit %s", d.Labels, d.Annotations["plimsoll.dev/commit"], v1)
	}
	s.waitForCommit(t, v1)
	checkResyncQuiet(t, s, daemon)
	if got := podUIDs(t, s.ns, "app=web"); !slices.Equal(got, pods) {
		t.Errorf("pods after adoption %v, want the same pods %v", got, pods)
	}
	if got := replicaSetNames(t, s.ns, "app=web"); !slices.Equal(got, sets) {
		t.Errorf("ReplicaSets after adoption %v, want %v", got, sets)
	}
	checkMinReady(t, endpoints, mark, 4)
	return endpoints
}

// TestAdoptAsProgressive takes over a Deployment that kubectl created,
// pushed to Git as a canary and as a blue-green workload with the same
// template: each reaches Healthy at revision 1 on its own (no restart of
// the daemon), and the Service never has fewer than 4 ready endpoints.
func TestAdoptAsProgressive(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name, annotations string
		serving           string // the Deployment whose pods serve in the end
	}{
		{"canary", adoptCanary, "web"},
		{"blue-green", adoptBlueGreen, "web-blue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSyncTarget(t)
			kubectlApply(t, s.ns, switchedExample(t, "v1", ""))
			waitForReadyPods(t, s.ns, "app=web", 4)
			endpoints := watchEndpoints(t, s.ns, "web")
			endpoints.waitReady(t, "4 endpoints", func(pods []string) bool { return len(pods) == 4 })
			mark := endpoints.mark()
			s.repo.Commit("web v1, "+tc.name, switchedExample(t, "v1", tc.annotations))
			kit.StartDaemon(t, s, "--interval", "1s")
			waitForDeployment(t, s.ns, tc.serving, "revision 1 Healthy", phaseIs(1, "Healthy"))
			if tc.name == "blue-green" {
				waitForDeployment(t, s.ns, "web", "the adopted Deployment scaled to 0", scaledTo(0))
			} else {
				waitForDeployment(t, s.ns, "web", "4 stable replicas", scaledTo(4))
			}
			endpoints.waitReady(t, "4 endpoints of "+tc.serving, func(pods []string) bool {
				return len(pods) == 4 && len(withPrefix(pods, tc.serving+"-")) == 4
			})
			checkMinReady(t, endpoints, mark, 4)
		})
	}
}

// kubectlApply applies files with `kubectl apply` (client-side, as a user
// without plimsoll would) in namespace ns.
func kubectlApply(t *testing.T, ns string, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	kit.WriteFiles(t, dir, files)
	kubectl(t, "apply", "-n", ns, "-f", dir)
}

// waitForReadyPods waits until selector selects exactly n pods, all Ready.
func waitForReadyPods(t *testing.T, ns, selector string, n int) {
	t.Helper()
	waitFor(t, "pods "+selector+" Ready", func(context.Context) (bool, error) {
		ready, unready := podsByReadiness(t, ns, selector)
		return len(ready) == n && len(unready) == 0, nil
	})
}

// podUIDs lists the UIDs of the pods selector selects, sorted.
func podUIDs(t *testing.T, ns, selector string) []string {
	t.Helper()
	list, err := suite.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, p := range list.Items {
		uids = append(uids, string(p.UID))
	}
	slices.Sort(uids)
	return uids
}

// replicaSetNames lists the ReplicaSets selector selects, sorted.
func replicaSetNames(t *testing.T, ns, selector string) []string {
	t.Helper()
	list, err := suite.client.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(list.Items))
	for _, rs := range list.Items {
		names = append(names, rs.Name)
	}
	slices.Sort(names)
	return names
}
