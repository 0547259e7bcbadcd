package events

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestWaitCountsRepeats(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	r := New(client, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), "plimsoll-test", Wait)

	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "d-1"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "s-1"}}
	record := &corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "plimsoll-sync", Namespace: "shop"}

	r.Event(ctx, web, corev1.EventTypeNormal, "PhaseChanged", "Healthy: revision 2 is out")
	clk.Step(time.Minute)
	r.Event(ctx, web, corev1.EventTypeNormal, "PhaseChanged", "Healthy: revision 2 is out")
	r.Event(ctx, svc, corev1.EventTypeNormal, "PhaseChanged", "Healthy: revision 2 is out")
	r.Event(ctx, record, corev1.EventTypeWarning, "SyncFailed", "apply web.yaml: refused")

	list, err := client.CoreV1().Events("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byObject := map[string]corev1.Event{}
	for _, e := range list.Items {
		byObject[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] = e
	}
	if len(list.Items) != 3 {
		t.Fatalf("%d Events, want 3 (the repeat counted, the Service's apart): %v", len(list.Items), byObject)
	}
	d := byObject["Deployment/web"]
	if d.Count != 2 || d.Source.Component != "plimsoll-test" || d.InvolvedObject.UID != "d-1" {
		t.Errorf("the Deployment's Event: count %d, source %q, uid %q; want 2, plimsoll-test, d-1", d.Count, d.Source.Component, d.InvolvedObject.UID)
	}
	if got, want := d.LastTimestamp.Time, clk.Now(); !got.Equal(want) {
		t.Errorf("the repeat's last timestamp %v, want %v", got, want)
	}
	if s := byObject["Service/web"]; s.Count != 1 {
		t.Errorf("the Service's Event: count %d, want 1", s.Count)
	}
	if c := byObject["ConfigMap/plimsoll-sync"]; c.Type != corev1.EventTypeWarning || c.Reason != "SyncFailed" || c.Message != "apply web.yaml: refused" {
		t.Errorf("the record's Event: %s %s %q", c.Type, c.Reason, c.Message)
	}
}

func TestName(t *testing.T) {
	deploy := &corev1.ObjectReference{Kind: "Deployment", Name: "web", UID: "d-1"}
	svc := &corev1.ObjectReference{Kind: "Service", Name: "web", UID: "s-1"}
	a := Name(deploy, corev1.EventTypeNormal, "PhaseChanged", "Healthy")
	if b := Name(deploy, corev1.EventTypeNormal, "PhaseChanged", "Healthy"); a != b {
		t.Errorf("the same Event named %s and %s", a, b)
	}
	for _, other := range []string{
		Name(svc, corev1.EventTypeNormal, "PhaseChanged", "Healthy"),
		Name(deploy, corev1.EventTypeWarning, "PhaseChanged", "Healthy"),
		Name(deploy, corev1.EventTypeNormal, "Command", "Healthy"),
		Name(deploy, corev1.EventTypeNormal, "PhaseChanged", "Degraded"),
	} {
		if other == a {
			t.Errorf("two different Events both named %s", a)
		}
	}
	if len(a) != len("web.")+16 || a[:4] != "web." {
		t.Errorf("name %q, want web.<16 hex digits>", a)
	}
}

// TestURLCredentialsRedacted records an Event whose message quotes a URL
// with a password and a token: the Event holds neither.
func TestURLCredentialsRedacted(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	r := New(client, clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)), slog.New(slog.NewTextHandler(io.Discard, nil)), "plimsoll-test", Wait)
	record := &corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "plimsoll-sync", Namespace: "shop"}
	r.Event(ctx, record, corev1.EventTypeWarning, "SyncFailed", `render: read index https://ci:hunter22@charts.example/index.yaml?token=tok-9911: 401 Unauthorized`)
	list, err := client.CoreV1().Events("shop").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("Events %v, %v; want one", list, err)
	}
	if got, want := list.Items[0].Message, "render: read index https://[redacted]@charts.example/index.yaml?token=[redacted]: 401 Unauthorized"; got != want {
		t.Errorf("the Event's message %q, want %q", got, want)
	}
}
