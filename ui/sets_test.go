package ui

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
)

// setObjects are what a sync applied as sets in namespace shop: a
// StatefulSet db rolled by canary, paused at step 1 of 3 with its
// partition at 2 (pod db-2 on the update revision), its Service with db-0
// and db-1 ready; and a Healthy DaemonSet agent with a pod on each of two
// nodes. Beside them: a pod that db's selector selects but that it does
// not own, one it owns but its selector no longer selects, a StatefulSet
// no sync applied, and an Event about a Deployment that is also named db.
func setObjects() []runtime.Object {
	sync := map[string]string{contract.LabelSync: "platform"}
	env := []corev1.EnvVar{{Name: "T", Value: planted}}
	two, three := int32(2), int32(3)
	db := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "u-db", Labels: sync,
		Annotations: map[string]string{contract.AnnotationStrategy: contract.StrategyCanary, contract.AnnotationPhase: contract.PhasePaused,
			contract.AnnotationRevision: "3", contract.AnnotationCommit: "3333333ccccccccccccccccccccccccccccccccc",
			contract.AnnotationMessage: "canary step 1/3: 1 of 3 pods updated; waiting for promote",
			contract.AnnotationStep:    "1", contract.AnnotationSteps: "33%, pause, 100%"}},
		Spec: appsv1.StatefulSetSpec{Replicas: &three, ServiceName: "db",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &two}}},
		Status: appsv1.StatefulSetStatus{ReadyReplicas: 2, UpdatedReplicas: 1, AvailableReplicas: 2,
			CurrentRevision: "db-5c7f9", UpdateRevision: "db-8d4e1"}}
	db.Spec.Template.Spec.Containers = []corev1.Container{{Name: "db", Image: "db:v2", Env: env}}
	agent := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "shop", UID: "u-agent", Labels: sync,
		Annotations: map[string]string{contract.AnnotationPhase: contract.PhaseHealthy, contract.AnnotationRevision: "1",
			contract.AnnotationCommit: "3333333ccccccccccccccccccccccccccccccccc", contract.AnnotationMessage: "revision 1: 2/2 updated and available"}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberReady: 2, UpdatedNumberScheduled: 2, NumberAvailable: 2}}
	agent.Spec.Template.Spec.Containers = []corev1.Container{{Name: "agent", Image: "agent:v1", Env: env}}
	unsynced := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "shop", UID: "u-cache"}}
	objs := []runtime.Object{db, agent, unsynced,
		podOfSet("db-0", "db", "db-5c7f9", "node-a", "u-db", true),
		podOfSet("db-1", "db", "db-5c7f9", "node-b", "u-db", true),
		podOfSet("db-2", "db", "db-8d4e1", "node-c", "u-db", false),
		podOfSet("db-stray", "db", "db-5c7f9", "node-a", "u-other", true),
		podOfSet("db-released", "released", "db-5c7f9", "node-a", "u-db", true),
		podOfSet("agent-x1", "agent", "6f7d8c9b5", "node-a", "u-agent", true),
		podOfSet("agent-x2", "agent", "6f7d8c9b5", "node-b", "u-agent", true),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "db"}}},
	}
	yes, no := true, false
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "db-x", Namespace: "shop",
		Labels: map[string]string{discoveryv1.LabelServiceName: "db"}}}
	for _, p := range []string{"db-0", "db-1", "db-2"} {
		ready := &yes
		if p == "db-2" {
			ready = &no
		}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"},
			Conditions: discoveryv1.EndpointConditions{Ready: ready}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: p}})
	}
	at := metav1.NewTime(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	return append(objs, slice,
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e-db", Namespace: "shop"}, Source: corev1.EventSource{Component: rolloutComponent},
			InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Namespace: "shop", Name: "db"}, Type: corev1.EventTypeNormal,
			Reason: "Phase", Message: "Paused: canary step 1/3", Count: 1, LastTimestamp: at},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e-deploy-db", Namespace: "shop"}, Source: corev1.EventSource{Component: rolloutComponent},
			InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Namespace: "shop", Name: "db"}, Type: corev1.EventTypeNormal,
			Reason: "Phase", Message: "about a Deployment named db", Count: 1, LastTimestamp: at},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e-agent", Namespace: "shop"}, Source: corev1.EventSource{Component: rolloutComponent},
			InvolvedObject: corev1.ObjectReference{Kind: "DaemonSet", Namespace: "shop", Name: "agent"}, Type: corev1.EventTypeNormal,
			Reason: "Phase", Message: "Healthy: revision 1 on every node", Count: 1, LastTimestamp: at},
	)
}

// podOfSet is pod name of a set: labelled app=app and with its revision,
// on node, controlled by the set of UID owner.
func podOfSet(name, app, revision, node string, owner types.UID, ready bool) *corev1.Pod {
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
		Labels:          map[string]string{"app": app, appsv1.ControllerRevisionHashLabelKey: revision},
		Annotations:     map[string]string{"note": planted},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: app, UID: owner, Controller: &yes}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: app, Image: app + ":v1",
			Env: []corev1.EnvVar{{Name: "T", Value: planted}}}}}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return pod
}

// between is the part of body from the first start on to the first end
// after it, "" when body has no start.
func between(body, start, end string) string {
	i := strings.Index(body, start)
	if i < 0 {
		return ""
	}
	rest := body[i:]
	if j := strings.Index(rest, end); j >= 0 {
		return rest[:j+len(end)]
	}
	return rest
}

// TestSetsListed lists a StatefulSet and a DaemonSet that a sync applied
// beside the Deployment workloads, each with its kind, strategy, phase,
// canary step, revision, commit and message, linked to its own page; a
// StatefulSet no sync applied is not a workload.
func TestSetsListed(t *testing.T) {
	_, base := serveFake(t, append(canaryObjects(), setObjects()...)...)
	body := fetch(t, base+"/workloads")
	rows := map[string][]string{
		`<tr data-workload="shop/db" data-kind="StatefulSet">`: {`data-value="StatefulSet">StatefulSet</td>`, `data-field="strategy">canary`,
			`phase-paused">Paused</span> <span class="muted">step 1/3</span>`, `data-field="revision">3`, `href="/statefulsets/shop/db"`,
			`href="https://github.com/acme/platform/commit/3333333ccccccccccccccccccccccccccccccccc"`, "waiting for promote"},
		`<tr data-workload="shop/agent" data-kind="DaemonSet">`: {`data-value="DaemonSet">DaemonSet</td>`, `data-field="strategy">rolling`,
			`phase-healthy">Healthy</span>`, `data-field="revision">1`, `href="/daemonsets/shop/agent"`, "2/2 updated and available"},
		`<tr data-workload="shop/api">`: {`data-value="">Deployment</td>`, `href="/workloads/shop/api"`},
	}
	for start, wants := range rows {
		row := between(body, start, "</tr>")
		if row == "" {
			t.Errorf("the workloads page has no row %s:\n%s", start, body)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(row, want) {
				t.Errorf("the row %s lacks %q:\n%s", start, want, row)
			}
		}
	}
	if strings.Contains(body, "shop/cache") {
		t.Errorf("the workloads page lists a StatefulSet no sync applied:\n%s", body)
	}
	if syncs := fetch(t, base+"/"); !strings.Contains(syncs, `<a href="/workloads">3</a>, <strong>2 not Healthy</strong>`) {
		t.Errorf("the sync's card does not count its three workloads (a Deployment's, a StatefulSet, a DaemonSet):\n%s", syncs)
	}
}

// TestSetPages shows a StatefulSet's and a DaemonSet's pages: the counts,
// update strategy and partition, the pods the set owns with their
// revision and node, a StatefulSet's Service's ready endpoints, and the
// Events about the set, not about a Deployment of the same name; nothing
// of the planted value.
func TestSetPages(t *testing.T) {
	_, base := serveFake(t, append(canaryObjects(), setObjects()...)...)
	sts := fetch(t, base+"/statefulsets/shop/db")
	for _, want := range []string{`data-field="step">step 1/3`, `data-field="desired">3`, `data-field="ready">2`, `data-field="updated">1`,
		`data-field="available">2`, `data-field="update-strategy">RollingUpdate`, `data-field="partition">2: pods from ordinal 2 up are updated`,
		"current <code>db-5c7f9</code>, update <code>db-8d4e1</code>", "Pods <span class=\"muted\">· 2/3 ready",
		`<p data-service="db">2 ready now: db-0, db-1.</p>`, "Paused: canary step 1/3", `data-live="/live/statefulsets/shop/db"`} {
		if !strings.Contains(sts, want) {
			t.Errorf("the StatefulSet's page lacks %q", want)
		}
	}
	pods := map[string][]string{
		"db-0": {`<span class="ok">ready</span>`, `<code>db-5c7f9</code> <span class="muted">(current)</span>`, `data-field="node">node-a`, "db:v1"},
		"db-1": {`<code>db-5c7f9</code> <span class="muted">(current)</span>`, `data-field="node">node-b`},
		"db-2": {`<span class="bad">not ready</span>`, `<code>db-8d4e1</code> <span class="muted">(update)</span>`, `data-field="node">node-c`},
	}
	checkPods(t, "the StatefulSet's page", sts, pods)
	for _, not := range []string{"db-stray", "db-released", "about a Deployment named db", planted} {
		if strings.Contains(sts, not) {
			t.Errorf("the StatefulSet's page shows %q", not)
		}
	}

	ds := fetch(t, base+"/daemonsets/shop/agent")
	for _, want := range []string{`data-field="desired">2`, `data-field="update-strategy">RollingUpdate`, "Healthy: revision 1 on every node"} {
		if !strings.Contains(ds, want) {
			t.Errorf("the DaemonSet's page lacks %q", want)
		}
	}
	checkPods(t, "the DaemonSet's page", ds, map[string][]string{
		"agent-x1": {`<code>6f7d8c9b5</code></td>`, `data-field="node">node-a`, "agent:v1"},
		"agent-x2": {`<code>6f7d8c9b5</code></td>`, `data-field="node">node-b`},
	})
	for _, not := range []string{`data-field="partition"`, "Ready endpoints", planted} {
		if strings.Contains(ds, not) {
			t.Errorf("the DaemonSet's page shows %q", not)
		}
	}

	for _, path := range []string{"/statefulsets/shop/agent", "/daemonsets/shop/db", "/statefulsets/shop/cache", "/statefulsets/shop/api"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// checkPods checks that page has a row for each pod, showing what wants
// says, and no other pod.
func checkPods(t *testing.T, name, page string, pods map[string][]string) {
	t.Helper()
	for pod, wants := range pods {
		row := between(page, `<tr data-pod="`+pod+`">`, "</tr>")
		if row == "" {
			t.Errorf("%s has no row of pod %s", name, pod)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(row, want) {
				t.Errorf("%s: the row of pod %s lacks %q:\n%s", name, pod, want, row)
			}
		}
	}
	if n := strings.Count(page, "<tr data-pod="); n != len(pods) {
		t.Errorf("%s lists %d pods, want %d", name, n, len(pods))
	}
}

// TestSetsDenied serves a reader who may not list StatefulSets: the pages
// still come, with the DaemonSet, and say what is not shown.
func TestSetsDenied(t *testing.T) {
	client := fake.NewClientset(append(canaryObjects(), setObjects()...)...)
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		allowed := review.Spec.ResourceAttributes.Resource != "statefulsets"
		return true, &authorizationv1.SelfSubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: allowed}}, nil
	})
	_, base := serve(t, Config{Client: client})
	body := fetch(t, base+"/workloads")
	for _, want := range []string{"StatefulSets in every namespace: you may not list them", `data-workload="shop/agent"`, `data-workload="shop/api"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the workloads page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, `data-workload="shop/db"`) {
		t.Errorf("the workloads page lists a StatefulSet the reader may not list")
	}
	fetch(t, base+"/daemonsets/shop/agent")
}

// TestSetLive follows a StatefulSet's page: a promote's status write
// comes as the next event, with the new step, and its timeline keeps the
// status before it.
func TestSetLive(t *testing.T) {
	client, base := serveFake(t, setObjects()...)
	resp, err := http.Get(base + "/live/statefulsets/shop/db")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	if first := nextEvent(t, events); !strings.Contains(first, `data-field="step">step 1/3`) {
		t.Fatalf("first event:\n%s", first)
	}
	sts, err := client.AppsV1().StatefulSets("shop").Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sts.Annotations[contract.AnnotationStep] = "3"
	sts.Annotations[contract.AnnotationPhase] = contract.PhaseProgressing
	if _, err := client.AppsV1().StatefulSets("shop").Update(context.Background(), sts, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if next := nextEvent(t, events); !strings.Contains(next, `data-field="step">step 3/3`) || !strings.Contains(next, "Status changes seen (2)") {
		t.Fatalf("the event after the promote:\n%s", next)
	}
}
