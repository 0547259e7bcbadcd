package webhook

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	secret := []byte("s3cret-hook")
	body := `{"ref":"refs/heads/main"}`
	tests := []struct {
		name        string
		method      string
		headers     map[string]string
		wantStatus  int
		wantTrigger bool
	}{
		{name: "github signature", method: "POST", headers: map[string]string{HeaderGitHubSignature: Sign(secret, []byte(body))},
			wantStatus: http.StatusAccepted, wantTrigger: true},
		{name: "github signature with another secret", method: "POST", headers: map[string]string{HeaderGitHubSignature: Sign([]byte("other"), []byte(body))},
			wantStatus: http.StatusUnauthorized},
		{name: "github signature of another body", method: "POST", headers: map[string]string{HeaderGitHubSignature: Sign(secret, []byte("{}"))},
			wantStatus: http.StatusUnauthorized},
		{name: "github signature without prefix", method: "POST", headers: map[string]string{HeaderGitHubSignature: strings.TrimPrefix(Sign(secret, []byte(body)), "sha256=")},
			wantStatus: http.StatusUnauthorized},
		{name: "github signature not hex", method: "POST", headers: map[string]string{HeaderGitHubSignature: "sha256=zz"},
			wantStatus: http.StatusUnauthorized},
		{name: "gitlab token", method: "POST", headers: map[string]string{HeaderGitLabToken: "s3cret-hook"},
			wantStatus: http.StatusAccepted, wantTrigger: true},
		{name: "gitlab wrong token", method: "POST", headers: map[string]string{HeaderGitLabToken: "s3cret-hoo"},
			wantStatus: http.StatusUnauthorized},
		{name: "no credentials", method: "POST", wantStatus: http.StatusUnauthorized},
		{name: "GET", method: "GET", headers: map[string]string{HeaderGitLabToken: "s3cret-hook"}, wantStatus: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			triggered := 0
			h := Handler(secret, func() { triggered++ })
			req := httptest.NewRequest(tt.method, "/hook", strings.NewReader(body))
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if (triggered == 1) != tt.wantTrigger || triggered > 1 {
				t.Errorf("triggered %d times, want trigger=%v", triggered, tt.wantTrigger)
			}
		})
	}
}

func TestEmptySecretNeverAuthenticates(t *testing.T) {
	h := http.Header{}
	h.Set(HeaderGitLabToken, "")
	h.Set(HeaderGitHubSignature, Sign(nil, []byte("x")))
	if Authentic(nil, h, []byte("x")) {
		t.Error("an empty secret authenticated a request")
	}
}
