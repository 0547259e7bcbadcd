//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// switchReplicas is the size of every workload of the switch table: the
// fewest ready endpoints each Service may ever have.
const switchReplicas = 4

// strategyShort names a strategy in a workload name: r, b, c.
var strategyShort = map[string]string{"rolling": "r", "blue-green": "b", "canary": "c"}

// switchCase is one row of the switch table: a workload that runs from
// and switches to, at rest or in the middle of a rollout (paused), or, for
// blue-green, during the scale-down delay after a swap.
type switchCase struct {
	from, to string
	mid      bool
	// delay: a blue-green workload switches while the color that lost
	// traffic still waits for its scale-down delay.
	delay bool
}

// name is the workload's name: "c2b-mid" is a canary paused in the middle
// of a rollout that switches to blue-green.
func (sc switchCase) name() string {
	state := "rest"
	switch {
	case sc.mid:
		state = "mid"
	case sc.delay:
		state = "delay"
	}
	return strategyShort[sc.from] + "2" + strategyShort[sc.to] + "-" + state
}

// second says whether the row goes to a second revision before it
// switches.
func (sc switchCase) second() bool { return sc.mid || sc.delay }

// switchManifest is a workload of the table, as Git holds it: Deployment
// and Service name, 4 replicas of registry.example/<name>:version, with
// strategy's annotations. held makes a blue-green workload wait for
// promote and a canary pause at its second step, so that a second
// revision stops in the middle; target workloads get steps that run
// through, and carry an annotation of the team's, example.com/owner, that
// the switch drops.
func switchManifest(name, strategy, version string, held bool) string {
	var annotations []string
	if held {
		annotations = append(annotations, "example.com/owner: alice")
	}
	switch strategy {
	case "blue-green":
		delay := "2s"
		if strings.HasSuffix(name, "-delay") {
			delay = "10m"
		}
		annotations = []string{"plimsoll.dev/strategy: blue-green", "plimsoll.dev/active-service: " + name, "plimsoll.dev/scale-down-delay: " + delay}
		if held && !strings.HasSuffix(name, "-delay") {
			annotations = append(annotations, `plimsoll.dev/auto-promote: "false"`)
		}
	case "canary":
		steps := `"50%, 100%"`
		if held {
			steps = `"50%, pause, 100%"`
		}
		annotations = []string{"plimsoll.dev/strategy: canary", "plimsoll.dev/service: " + name, "plimsoll.dev/steps: " + steps}
	}
	meta := ""
	if len(annotations) > 0 {
		meta = "  annotations:\n    " + strings.Join(annotations, "\n    ") + "\n"
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels: {app: %[1]s}
%[2]sspec:
  replicas: %[4]d
  progressDeadlineSeconds: 120
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
      - name: app
        image: registry.example/%[1]s:%[3]s
---
apiVersion: v1
kind: Service
metadata:
  name: %[1]s
spec:
  selector: {app: %[1]s}
  ports:
  - port: 80
    targetPort: 8080
`, name, meta, version, switchReplicas)
}

// workloadStatus returns the Deployments of workload name by name, and
// the status annotations of the one with the highest revision (every
// Deployment of a progressive workload carries the workload's status).
func workloadStatus(t *testing.T, ns, name string) (map[string]*appsv1.Deployment, map[string]string) {
	t.Helper()
	list, err := suite.client.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "plimsoll.dev/workload=" + name})
	if err != nil {
		t.Fatal(err)
	}
	deploys := map[string]*appsv1.Deployment{}
	var best map[string]string
	bestRevision := -1
	for i := range list.Items {
		d := &list.Items[i]
		deploys[d.Name] = d
		var rev int
		fmt.Sscan(d.Annotations["plimsoll.dev/revision"], &rev)
		if rev > bestRevision {
			best, bestRevision = d.Annotations, rev
		}
	}
	return deploys, best
}

// switchedTo reports what is left before workload name runs strategy as
// it should once switched and Healthy on revision at image: "" once it
// does. It checks the Deployments the strategy runs and those it must
// have retired, the Service's selector, and the images its endpoints
// serve.
func switchedTo(t *testing.T, ns, name, strategy string, revision int, image string, endpoints *endpointWatch) string {
	t.Helper()
	deploys, st := workloadStatus(t, ns, name)
	if st["plimsoll.dev/phase"] != "Healthy" || st["plimsoll.dev/revision"] != fmt.Sprint(revision) {
		return fmt.Sprintf("revision %s %s (%s), want revision %d Healthy", st["plimsoll.dev/revision"], st["plimsoll.dev/phase"], st["plimsoll.dev/message"], revision)
	}
	for _, d := range deploys {
		if owner, ok := d.Annotations["example.com/owner"]; ok {
			return fmt.Sprintf("%s keeps annotation example.com/owner=%s, which Git dropped", d.Name, owner)
		}
	}
	sel := selector(t, ns, name)
	gone := func(suffixes ...string) string {
		for _, s := range suffixes {
			if deploys[name+s] != nil {
				return fmt.Sprintf("%s%s still exists", name, s)
			}
		}
		return ""
	}
	var left string
	switch strategy {
	case "rolling":
		if d := deploys[name]; d == nil || d.Annotations["plimsoll.dev/role"] != "primary" {
			return name + " is not the primary"
		}
		left = gone("-blue", "-green", "-canary")
		if sel["plimsoll.dev/color"] != "" || sel["plimsoll.dev/serving"] != "" {
			left = fmt.Sprintf("selector %v keeps a key of the previous strategy", sel)
		}
	case "blue-green":
		active := sel["plimsoll.dev/color"]
		if active == "" || sel["plimsoll.dev/serving"] != "" {
			return fmt.Sprintf("selector %v, want a color and no serving key", sel)
		}
		if d := deploys[name]; d != nil && (*d.Spec.Replicas != 0 || d.Status.Replicas != 0) {
			left = fmt.Sprintf("%s still runs %d pods", name, d.Status.Replicas)
		}
		if left == "" {
			left = gone("-canary")
		}
	case "canary":
		if sel["plimsoll.dev/serving"] != "true" || sel["plimsoll.dev/color"] != "" {
			return fmt.Sprintf("selector %v, want serving and no color", sel)
		}
		if c := deploys[name+"-canary"]; c == nil || *c.Spec.Replicas != 0 || c.Status.Replicas != 0 {
			left = name + "-canary is not at 0"
		}
		if left == "" {
			left = gone("-blue", "-green")
		}
	}
	if left != "" {
		return left
	}
	ready := endpoints.readyNames()
	if len(ready) != switchReplicas {
		return fmt.Sprintf("%d ready endpoints %v, want %d", len(ready), ready, switchReplicas)
	}
	pods, err := suite.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if slices.Contains(ready, p.Name) && p.Spec.Containers[0].Image != image {
			return fmt.Sprintf("endpoint %s runs %s, want %s", p.Name, p.Spec.Containers[0].Image, image)
		}
	}
	return ""
}

// TestStrategySwitchTable switches a workload between every ordered pair
// of strategies, once at rest (Healthy) and once in the middle of a
// rollout (a canary paused at its second step, a blue-green revision
// ready and waiting for promote, a rolling revision paused before it
// rolls out), and a blue-green workload also while the color it swapped
// from waits out its scale-down delay, each with a new image, all
// fourteen in one repository synced by one daemon. Each reaches the new strategy's Healthy on Git's
// template, with the revision counting on, the old strategy's
// Deployments retired, a PhaseChanged Event naming both strategies, and
// its Service never below 4 ready endpoints from the switch on.
func TestStrategySwitchTable(t *testing.T) {
	parallel(t)
	strategies := []string{"rolling", "blue-green", "canary"}
	var cases []switchCase
	for _, from := range strategies {
		for _, to := range strategies {
			if from != to {
				cases = append(cases, switchCase{from: from, to: to}, switchCase{from: from, to: to, mid: true})
			}
			if from == "blue-green" && from != to {
				cases = append(cases, switchCase{from: from, to: to, delay: true})
			}
		}
	}
	tree := func(version func(switchCase) string, strategy func(switchCase) string, held bool) map[string]string {
		files := map[string]string{}
		for _, sc := range cases {
			files[sc.name()+".yaml"] = switchManifest(sc.name(), strategy(sc), version(sc), held)
		}
		return files
	}
	from := func(sc switchCase) string { return sc.from }
	s := newSyncTarget(t)
	s.repo.Commit("the workloads at v1", tree(func(switchCase) string { return "v1" }, from, true))
	kit.StartDaemon(t, s, "--interval", "1s")
	watches := map[string]*endpointWatch{}
	for _, sc := range cases {
		watches[sc.name()] = watchEndpoints(t, s.ns, sc.name())
	}
	for _, sc := range cases {
		waitFor(t, sc.name()+" revision 1 Healthy", func(context.Context) (bool, error) {
			_, st := workloadStatus(t, s.ns, sc.name())
			return st["plimsoll.dev/revision"] == "1" && st["plimsoll.dev/phase"] == "Healthy", nil
		})
	}

	t.Log("the mid-rollout rows go to revision 2 and stop there: paused, waiting for promote, at the canary's pause step; the delay rows swap and wait")
	for _, sc := range cases {
		if sc.mid && sc.from == "rolling" {
			command(t, s.ns, sc.name(), "pause")
			waitForDeployment(t, s.ns, sc.name(), "paused", func(d *appsv1.Deployment) bool { return d.Annotations["plimsoll.dev/phase"] == "Paused" })
		}
	}
	v2 := func(sc switchCase) string {
		if sc.second() {
			return "v2"
		}
		return "v1"
	}
	s.repo.Commit("the mid and delay rows at v2", tree(v2, from, true))
	for _, sc := range cases {
		switch {
		case sc.mid:
			waitFor(t, sc.name()+" revision 2 Paused", func(context.Context) (bool, error) {
				_, st := workloadStatus(t, s.ns, sc.name())
				return st["plimsoll.dev/revision"] == "2" && st["plimsoll.dev/phase"] == "Paused", nil
			})
		case sc.delay:
			waitFor(t, sc.name()+" revision 2 swapped, blue waiting for its scale-down delay", func(context.Context) (bool, error) {
				deploys, st := workloadStatus(t, s.ns, sc.name())
				blue := deploys[sc.name()+"-blue"]
				return st["plimsoll.dev/revision"] == "2" && strings.Contains(st["plimsoll.dev/message"], "scales down at") &&
					blue != nil && blue.Status.AvailableReplicas == switchReplicas, nil
			})
		}
	}

	t.Log("every row switches strategy with a new image, v3")
	marks := map[string]int{}
	for name, w := range watches {
		marks[name] = w.mark()
	}
	s.repo.Commit("every row switches strategy", tree(func(switchCase) string { return "v3" }, func(sc switchCase) string { return sc.to }, false))
	for _, sc := range cases {
		revision := 2
		if sc.second() {
			revision = 3
		}
		name := sc.name()
		image := fmt.Sprintf("registry.example/%s:v3", name)
		waitFor(t, fmt.Sprintf("%s switched from %s to %s, revision %d Healthy on %s", name, sc.from, sc.to, revision, image), func(context.Context) (bool, error) {
			if left := switchedTo(t, s.ns, name, sc.to, revision, image, watches[name]); left != "" {
				return false, errors.New(left)
			}
			return true, nil
		})
	}
	events, err := suite.client.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range cases {
		name := sc.name()
		checkMinReady(t, watches[name], marks[name], switchReplicas)
		if !switchEvent(events.Items, name, sc.from, sc.to) {
			t.Errorf("%s: no PhaseChanged Event naming %s and %s; the workload's Events: %v", name, sc.from, sc.to, workloadEvents(events.Items, name))
		}
	}
}

// switchEvent reports whether events hold a PhaseChanged Event on a
// Deployment of workload name that names strategies from and to.
func switchEvent(events []corev1.Event, name, from, to string) bool {
	for _, e := range workloadEventsOf(events, name) {
		if e.Reason == "PhaseChanged" && strings.Contains(e.Message, "from "+from+" to "+to) {
			return true
		}
	}
	return false
}

// workloadEventsOf returns the Events about Deployment name and its
// colors and canary.
func workloadEventsOf(events []corev1.Event, name string) []corev1.Event {
	names := map[string]bool{name: true, name + "-blue": true, name + "-green": true, name + "-canary": true}
	var out []corev1.Event
	for _, e := range events {
		if e.InvolvedObject.Kind == "Deployment" && names[e.InvolvedObject.Name] {
			out = append(out, e)
		}
	}
	return out
}

// workloadEvents are workloadEventsOf as "reason: message" lines, for a
// failure.
func workloadEvents(events []corev1.Event, name string) []string {
	var out []string
	for _, e := range workloadEventsOf(events, name) {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}
