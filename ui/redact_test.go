package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/analysis"
	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// The credentials the test writes into URLs.
const (
	urlPassword  = "url-pass-8812"
	urlToken     = "url-token-3307"
	urlSignature = "url-sig-5150"
)

// TestURLCredentialsNotShown is issue 57: a web check whose URL holds a
// password and a token, and whose endpoint on 127.0.0.1 answers 500. The
// measurement error the analysis records names the URL without them, and
// so does the workload's page that shows it. A status message and an
// Event holding a URL with a pre-signed signature, as no part of the
// daemon writes them, are redacted by the view itself.
func TestURLCredentialsNotShown(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	checkURL := strings.Replace(failing.URL, "://", "://ci:"+urlPassword+"@", 1) + "/status?token=" + urlToken + "&region=eu"
	tpl, err := analysis.Parse(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "shop"},
		Data: map[string]string{contract.AnalysisKey: "metrics:\n- name: up\n  successCondition: result == 1\n  web: {url: '" + checkURL + "'}\n"}})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := analysis.Bind([]*analysis.Template{tpl}, nil, analysis.Builtins{Workload: "api", Namespace: "shop", Revision: 2, Hash: "h2"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	m := analysis.NewMeasurer(analysis.Config{}).Measure(context.Background(), bound[0], analysis.Run{Namespace: "shop", Workload: "api", Stage: "step 1", Now: now})
	shown := "GET " + strings.Replace(failing.URL, "://", "://[redacted]@", 1) + "/status?token=[redacted]&region=eu: status 500 Internal Server Error: boom"
	if m.Outcome != strategies.OutcomeError || m.Message != shown {
		t.Fatalf("the analysis records %s %q, want Error %q", m.Outcome, m.Message, shown)
	}
	specs := []strategies.MetricSpec{bound[0].Spec}
	run := strategies.StartRun("step 1", "h2", specs, now).Record(specs, []strategies.Measurement{m})

	objs := canaryObjects()
	stable := objs[0].(*appsv1.Deployment)
	stable.Annotations[contract.AnnotationAnalysisRun] = strategies.EncodeRun(&run)
	stable.Annotations[contract.AnnotationMessage] = "canary step 2/5: chart archive https://cdn.example/api-2.tgz?X-Amz-Signature=" + urlSignature + ": 403 Forbidden"
	objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e2", Namespace: "shop"}, Source: corev1.EventSource{Component: syncComponent},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "shop", Name: "plimsoll-sync-platform"}, Reason: "SyncFailed", Type: corev1.EventTypeWarning,
		Message: "commit 3333333 not applied (render failed): read https://ci:" + urlPassword + "@charts.example/index.yaml: 401 Unauthorized", Count: 1,
		LastTimestamp: metav1.NewTime(now)})
	_, base := serveFake(t, objs...)
	detail := fetch(t, base+"/workloads/shop/api")
	syncs := fetch(t, base+"/")
	for _, want := range []string{"status 500 Internal Server Error: boom", "/status?token=[redacted]&amp;region=eu", "X-Amz-Signature=[redacted]: 403 Forbidden"} {
		if !strings.Contains(detail, want) {
			t.Errorf("the workload's page lacks %q", want)
		}
	}
	if want := "read https://[redacted]@charts.example/index.yaml: 401 Unauthorized"; !strings.Contains(syncs, want) {
		t.Errorf("the syncs page lacks %q", want)
	}
	for name, body := range map[string]string{"workload": detail, "syncs": syncs} {
		for _, secret := range []string{urlPassword, urlToken, urlSignature} {
			if strings.Contains(body, secret) {
				t.Errorf("the %s page shows %q", name, secret)
			}
		}
	}
}
