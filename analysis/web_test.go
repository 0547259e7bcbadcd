package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"plimsoll.dev/plimsoll/strategies"
)

// webToken is the credential of the Secret "checker" in namespace shop.
const webToken = "s3cr3t-web-token-4217"

// fakeWeb is the server web metrics ask in the tests.
func fakeWeb(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"status": {"ratio": 0.004, "state": "ok"}, "pods": [{"ready": true}, {"ready": false}]}`)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/post", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_ = json.NewEncoder(w).Encode(map[string]string{"method": r.Method, "type": r.Header.Get("Content-Type"), "body": string(body)})
	})
	mux.HandleFunc("/secure", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+webToken || r.Header.Get("X-Plain") != "yes" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `"welcome"`)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(r.Header)
	})
	mux.HandleFunc("/fail-echo", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "cannot serve %s", r.Header.Get("Authorization"))
	})
	mux.HandleFunc("/down", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/status", http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// checkerSecret is the Secret the web headers read.
func checkerSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "checker", Namespace: "shop"},
		Data:       map[string][]byte{"token": []byte("Bearer " + webToken)},
	}
}

func TestWeb(t *testing.T) {
	srv := fakeWeb(t)
	m := NewMeasurer(Config{Client: fake.NewClientset(checkerSecret())})
	const auth = "    headers:\n    - name: Authorization\n      valueFrom: {secretKeyRef: {name: checker, key: token}}\n    - {name: X-Plain, value: yes}\n"
	tests := []struct {
		name    string
		web     string // the web provider's fields, indented by 4
		cond    string
		outcome strategies.Outcome
		value   string
		message string // a part of the message
	}{
		{"GET, the whole JSON body", "    url: URL/status\n", "result.status.ratio < 0.01", strategies.OutcomeSuccessful,
			`{"pods":[{"ready":true},{"ready":false}],"status":{"ratio":0.004,"state":"ok"}}`, ""},
		{"jsonPath to a number", "    url: URL/status\n    jsonPath: '{.status.ratio}'\n", "result < 0.01", strategies.OutcomeSuccessful, "0.004", ""},
		{"jsonPath to a string", "    url: URL/status\n    jsonPath: .status.state\n", `result == "ok"`, strategies.OutcomeSuccessful, "ok", ""},
		{"jsonPath to several", "    url: URL/status\n    jsonPath: '{.pods[*].ready}'\n", "all(result, {#})", strategies.OutcomeFailed, "[true,false]", ""},
		{"jsonPath finds nothing", "    url: URL/status\n    jsonPath: '{.status.missing}'\n", "result < 1", strategies.OutcomeError, "", "jsonPath {.status.missing}"},
		{"POST with a body", "    url: URL/post\n    method: POST\n    body: '{\"probe\": true}'\n",
			`result.method == "POST" && result.type == "application/json" && result.body == "{\"probe\": true}"`, strategies.OutcomeSuccessful, "", ""},
		{"a Secret header", "    url: URL/secure\n" + auth, `result == "welcome"`, strategies.OutcomeSuccessful, "welcome", ""},
		{"not JSON", "    url: URL/text\n", `result == "ok"`, strategies.OutcomeSuccessful, "ok", ""},
		{"not JSON with a jsonPath", "    url: URL/text\n    jsonPath: '{.a}'\n", `result == "ok"`, strategies.OutcomeError, "", "the answer is not JSON"},
		{"non-2xx", "    url: URL/down\n", "result == 1", strategies.OutcomeError, "", "GET URL/down: status 503 Service Unavailable: maintenance"},
		{"a redirect", "    url: URL/moved\n", "result == 1", strategies.OutcomeError, "", "status 302 Found (redirects are not followed)"},
		{"timeout", "    url: URL/slow\n", "result == 1", strategies.OutcomeError, "", "context deadline exceeded (timeout 200ms)"},
		{"a Secret that is not there", "    url: URL/secure\n    headers:\n    - name: A\n      valueFrom: {secretKeyRef: {name: nope, key: token}}\n",
			"result == 1", strategies.OutcomeError, "", `header A: read Secret shop/nope: secrets "nope" not found`},
		{"a key that is not there", "    url: URL/secure\n    headers:\n    - name: A\n      valueFrom: {secretKeyRef: {name: checker, key: nope}}\n",
			"result == 1", strategies.OutcomeError, "", `header A: read Secret shop/checker: no key "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := "metrics:\n- name: m\n  timeout: 200ms\n  successCondition: '" + strings.ReplaceAll(tc.cond, "'", "''") + "'\n  web:\n" + strings.ReplaceAll(tc.web, "URL", srv.URL)
			got := m.Measure(context.Background(), bindOne(t, "smoke", doc, nil), testRun(0))
			message := strings.ReplaceAll(tc.message, "URL", srv.URL)
			if got.Outcome != tc.outcome || (tc.value != "" && got.Value != tc.value) || !strings.Contains(got.Message, message) {
				t.Errorf("Measure = %s %q %q, want %s %q with %q", got.Outcome, got.Value, got.Message, tc.outcome, tc.value, message)
			}
		})
	}
}

func TestWebSecretNotLeaked(t *testing.T) {
	srv := fakeWeb(t)
	m := NewMeasurer(Config{Client: fake.NewClientset(checkerSecret())})
	tests := []struct {
		name, path, cond string
	}{
		// The answer is the request's headers: the Value would hold the
		// token.
		{"echoed in the answer", "/echo", `result.Authorization[0] == "nope"`},
		// The condition fails on the map: the message quotes nothing of it.
		{"echoed, condition error", "/echo", `result < 1`},
		// The server fails and quotes the token in its error.
		{"echoed in an error", "/fail-echo", `result == 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := "metrics:\n- name: m\n  successCondition: '" + tc.cond + "'\n  web:\n    url: " + srv.URL + tc.path +
				"\n    headers:\n    - name: Authorization\n      valueFrom: {secretKeyRef: {name: checker, key: token}}\n"
			got := m.Measure(context.Background(), bindOne(t, "smoke", doc, nil), testRun(0))
			all := fmt.Sprintf("%+v", got)
			if strings.Contains(all, webToken) {
				t.Errorf("the token leaked: %s", all)
			}
			if !strings.Contains(all, redacted) {
				t.Errorf("no %s where the token was: %s", redacted, all)
			}
		})
	}
}

// urlSecrets are the credentials the tests write into URLs.
var urlSecrets = []string{"ci:", "url-pass-8812", "url-token-3307", "url-sig-5150"}

// credentialURL is base with a user, a password and query tokens.
func credentialURL(base, path string) string {
	return strings.Replace(base, "://", "://ci:url-pass-8812@", 1) + path + "?token=url-token-3307&region=eu&X-Amz-Signature=url-sig-5150"
}

// TestWebURLCredentialNotShown measures web checks whose URL holds
// credentials and whose endpoint fails: the error names the URL, without
// them, whether net/http forms it (a closed port) or the check does (a
// status 500).
func TestWebURLCredentialNotShown(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	m := NewMeasurer(Config{PrometheusURL: credentialURL(closed.URL, "/")})
	tests := []struct {
		name, provider, message string
	}{
		{"status 500", "web: {url: '" + credentialURL(failing.URL, "/status") + "'}",
			"GET " + redactedURL(failing.URL, "/status") + ": status 500 Internal Server Error: boom"},
		{"a closed port", "web: {url: '" + credentialURL(closed.URL, "/status") + "'}",
			`Get "` + redactedURL(closed.URL, "/status") + `": dial tcp`},
		{"Prometheus at a closed port", "prometheus: {query: up}", "query Prometheus: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := "metrics:\n- name: m\n  timeout: 2s\n  successCondition: result == 1\n  " + tc.provider + "\n"
			got := m.Measure(context.Background(), bindOne(t, "smoke", doc, nil), testRun(0))
			if got.Outcome != strategies.OutcomeError || !strings.Contains(got.Message, tc.message) {
				t.Errorf("Measure = %s %q, want an error with %q", got.Outcome, got.Message, tc.message)
			}
			for _, s := range urlSecrets {
				if strings.Contains(got.Message, s) || strings.Contains(got.Value, s) {
					t.Errorf("the measurement shows %q: %+v", s, got)
				}
			}
		})
	}
}

// redactedURL is credentialURL(base, path) as errors show it.
func redactedURL(base, path string) string {
	return strings.Replace(base, "://", "://[redacted]@", 1) + path + "?token=[redacted]&region=eu&X-Amz-Signature=[redacted]"
}

// TestParseURLCredentialNotShown refuses a URL that is not http(s)
// without repeating its credentials.
func TestParseURLCredentialNotShown(t *testing.T) {
	doc := "metrics:\n- name: m\n  successCondition: result == 1\n  web: {url: 'ftp://ci:url-pass-8812@files.example/x?token=url-token-3307'}\n"
	_, err := Parse(configMap("smoke", doc))
	if err == nil {
		t.Fatal("Parse took an ftp URL")
	}
	for _, s := range urlSecrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("Parse: %v: shows %q", err, s)
		}
	}
	if !strings.Contains(err.Error(), `"ftp://[redacted]@files.example/x?token=[redacted]" is not an absolute http or https URL`) {
		t.Errorf("Parse: %v: want the URL redacted", err)
	}
}
