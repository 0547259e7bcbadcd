package ui

import (
	"bufio"
	"context"
	"io"
	"net"
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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"plimsoll.dev/plimsoll/contract"
)

// planted is a value the view must never show: it stands in a ConfigMap
// the sync applied and in a container's environment.
const planted = "planted-4f9a1c"

// canaryObjects are a canary workload api at step 2 of 5 of revision 2,
// its Service with one canary and three stable pods ready, a sync record
// and a ConfigMap the sync applied.
func canaryObjects() []runtime.Object {
	stable := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop", UID: "u-api",
		Labels: map[string]string{contract.LabelWorkload: "api", contract.LabelSync: "platform"},
		Annotations: map[string]string{contract.AnnotationRole: contract.RoleStable, contract.AnnotationPhase: contract.PhasePaused,
			contract.AnnotationRevision: "2", contract.AnnotationTemplateHash: "h2", contract.AnnotationCommit: "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
			contract.AnnotationMessage: "canary step 2/5: 25% (1/4 pods serving); waiting for promote <script>alert(1)</script>",
			contract.AnnotationStep:    "2", contract.AnnotationService: "api", contract.AnnotationSteps: "25%, pause, 50%, pause, 100%"}}}
	stable.Spec.Template.Spec.Containers = []corev1.Container{{Name: "api", Image: "api:v1", Env: []corev1.EnvVar{{Name: "T", Value: planted}}}}
	canary := stable.DeepCopy()
	canary.Name, canary.UID = "api-canary", "u-canary"
	canary.Annotations[contract.AnnotationRole] = contract.RoleCanary
	objs := []runtime.Object{stable, canary}
	yes := true
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "api-x", Namespace: "shop",
		Labels: map[string]string{discoveryv1.LabelServiceName: "api"}}}
	for _, p := range []string{"api-canary-7d9-a", "api-64d-a", "api-64d-b", "api-64d-c"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p, Namespace: "shop", Labels: map[string]string{contract.LabelWorkload: "api", contract.LabelServing: "true"}}}
		if strings.HasPrefix(p, "api-canary") {
			pod.Labels[contract.LabelTrack] = contract.TrackCanary
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		objs = append(objs, pod)
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"},
			Conditions: discoveryv1.EndpointConditions{Ready: &yes}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: p}})
	}
	objs = append(objs, slice,
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "api", contract.LabelServing: "true"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plimsoll-sync-platform", Namespace: "shop", Labels: map[string]string{contract.LabelSync: "platform"},
			Annotations: map[string]string{contract.AnnotationSyncStatus: contract.SyncSynced, contract.AnnotationCommit: "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
				contract.AnnotationFetchedCommit: "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", contract.AnnotationMessage: `applied 2222222 "api v2": 3 objects`}},
			Data: map[string]string{"inventory": "h v1 ConfigMap shop settings\n"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "shop", Labels: map[string]string{contract.LabelSync: "platform"}},
			Data: map[string]string{"password": planted}},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "shop"}, Source: corev1.EventSource{Component: syncComponent},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "shop", Name: "plimsoll-sync-platform"}, Reason: "Synced",
			Message: `applied 2222222 "api v2": 3 objects, 0 created, 1 configured, 0 restored, 0 pruned`, Count: 1,
			LastTimestamp: metav1.NewTime(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))},
	)
	return objs
}

// serveFake serves the view of a fake cluster holding objs, every read
// allowed, on a loopback port until the test ends.
func serveFake(t *testing.T, objs ...runtime.Object) (*fake.Clientset, string) {
	t.Helper()
	client := fake.NewClientset(objs...)
	client.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authorizationv1.SelfSubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}, nil
	})
	_, base := serve(t, Config{Client: client, Repos: map[string]string{"platform": "https://user:s3cret@github.com/acme/platform.git"}})
	return client, base
}

// serve serves a view of cfg on a loopback port until the test ends.
func serve(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, "http://" + ln.Addr().String()
}

// fetch fetches path and returns its body, failing t unless it is 200.
func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}

// TestPages renders the three pages of a canary mid-rollout: the sync
// with its commit linked (without the credentials of the repository's
// address) and its recent commit, the workload in its group, and its page
// with the step, the weight set and served; every value escaped, and
// nothing of the planted value.
func TestPages(t *testing.T) {
	_, base := serveFake(t, canaryObjects()...)
	syncs := fetch(t, base+"/")
	workloads := fetch(t, base+"/workloads")
	detail := fetch(t, base+"/workloads/shop/api")
	for _, want := range []string{`data-sync="shop/platform"`, `href="https://github.com/acme/platform/commit/2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"`,
		`applied 2222222 &#34;api v2&#34;: 3 objects, 0 created, 1 configured`, "Objects applied</dt><dd>1</dd>"} {
		if !strings.Contains(syncs, want) {
			t.Errorf("the syncs page lacks %q", want)
		}
	}
	for _, want := range []string{"Sync platform", `data-workload="shop/api"`, `href="/workloads/shop/api"`, "step 2/5"} {
		if !strings.Contains(workloads, want) {
			t.Errorf("the workloads page lacks %q", want)
		}
	}
	for _, want := range []string{`aria-current="step"`, `data-field="weight">25%`, `data-field="served">25%`,
		"(1 of 4 ready endpoints of Service api on the canary)", "&lt;script&gt;alert(1)&lt;/script&gt;", `data-live="/live/workloads/shop/api"`} {
		if !strings.Contains(detail, want) {
			t.Errorf("the workload's page lacks %q", want)
		}
	}
	for name, body := range map[string]string{"syncs": syncs, "workloads": workloads, "workload": detail} {
		if strings.Contains(body, planted) || strings.Contains(body, "s3cret") || strings.Contains(body, "<script>alert") {
			t.Errorf("the %s page shows what it must not:\n%s", name, body)
		}
	}
	resp, err := http.Get(base + "/workloads/shop/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a workload that does not exist: %d, want 404", resp.StatusCode)
	}
}

// TestLive follows a workload's page: the first event is the page as it
// is, and a promote's status write comes as the next, with the new step.
func TestLive(t *testing.T) {
	client, base := serveFake(t, canaryObjects()...)
	resp, err := http.Get(base + "/live/workloads/shop/api")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := bufio.NewReader(resp.Body)
	if first := nextEvent(t, events); !strings.Contains(first, `data-field="weight">25%`) {
		t.Fatalf("first event:\n%s", first)
	}
	d, err := client.AppsV1().Deployments("shop").Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Annotations[contract.AnnotationStep] = "4"
	d.Annotations[contract.AnnotationMessage] = "canary step 4/5: 50% (2/4 pods serving); waiting for promote"
	if _, err := client.AppsV1().Deployments("shop").Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if next := nextEvent(t, events); !strings.Contains(next, `data-field="weight">50%`) || !strings.Contains(next, "step 4/5") {
		t.Fatalf("the event after the promote:\n%s", next)
	}
}

// nextEvent reads the next "page" event of a stream, its data joined.
func nextEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var data []string
	name := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read the stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		case line == "" && name == "page":
			return strings.Join(data, "\n")
		case line == "":
			name, data = "", nil
		}
	}
}

// TestSendEvent keeps a carriage return in a page from starting a field
// of its own in the stream.
func TestSendEvent(t *testing.T) {
	w := &recorder{header: http.Header{}}
	if err := sendEvent(w, "page", []byte("<p>a\revent: gone\r\ndata: x</p>")); err != nil {
		t.Fatal(err)
	}
	want := "event: page\ndata: <p>a\ndata: event: gone\ndata: data: x</p>\n\n"
	if got := w.body.String(); got != want {
		t.Errorf("sent %q, want %q", got, want)
	}
}

type recorder struct {
	header http.Header
	body   strings.Builder
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(p []byte) (int, error) { return r.body.Write(p) }
func (r *recorder) WriteHeader(int)             {}

// TestIdleStop stops the watches once no page has been open for
// Config.Idle, and starts them again at the next page.
func TestIdleStop(t *testing.T) {
	s, base := serve(t, Config{Client: fake.NewClientset(canaryObjects()...), Idle: 10 * time.Millisecond})
	running := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.view != nil
	}
	if running() {
		t.Fatal("the watches run before any page")
	}
	for range 2 {
		fetch(t, base+"/workloads")
		err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return !running(), nil })
		if err != nil {
			t.Fatal("the watches still run after the page closed and the idle time passed")
		}
	}
}
