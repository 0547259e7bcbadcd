package webhook

import (
	"bytes"
	"io"
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

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestHandlerBodyLimits: a request without credentials is refused before a
// byte of its body is read, whatever its size; a signed body over the
// limit gets 413 with no more than the limit read; one at the limit is
// checked as usual.
func TestHandlerBodyLimits(t *testing.T) {
	secret := []byte("s3cret-hook")
	big := bytes.Repeat([]byte("x"), 2*MaxBodyBytes)
	atLimit := bytes.Repeat([]byte("y"), MaxBodyBytes)
	tests := []struct {
		name       string
		body       []byte
		headers    map[string]string
		wantStatus int
		maxRead    int
	}{
		{"unsigned, 2 MiB", big, nil, http.StatusUnauthorized, 0},
		{"wrong gitlab token, 2 MiB", big, map[string]string{HeaderGitLabToken: "nope"}, http.StatusUnauthorized, 0},
		{"signed, 2 MiB", big, map[string]string{HeaderGitHubSignature: Sign(secret, big)}, http.StatusRequestEntityTooLarge, MaxBodyBytes + 1},
		{"signed, exactly 1 MiB", atLimit, map[string]string{HeaderGitHubSignature: Sign(secret, atLimit)}, http.StatusAccepted, MaxBodyBytes},
		{"wrongly signed, exactly 1 MiB", atLimit, map[string]string{HeaderGitHubSignature: Sign([]byte("other"), atLimit)}, http.StatusUnauthorized, MaxBodyBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := &countingReader{r: bytes.NewReader(tt.body)}
			req := httptest.NewRequest(http.MethodPost, "/hook", body)
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			Handler(secret, func() {}).ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d (%q), want %d", rec.Code, strings.TrimSpace(rec.Body.String()), tt.wantStatus)
			}
			// Readers may fill a buffer ahead: allow one read's worth.
			if body.n > tt.maxRead+bytes.MinRead {
				t.Errorf("read %d bytes of the body, want at most %d", body.n, tt.maxRead)
			}
		})
	}
}

// TestHandlerConcurrency: with MaxConcurrent signed requests still sending
// their bodies, one more is answered 503 at once; once they finish, a
// request is served again.
func TestHandlerConcurrency(t *testing.T) {
	secret := []byte("s3cret-hook")
	h := Handler(secret, func() {})
	var writers []*io.PipeWriter
	done := make(chan int, MaxConcurrent)
	for range MaxConcurrent {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		req := httptest.NewRequest(http.MethodPost, "/hook", pr)
		req.Header.Set(HeaderGitHubSignature, Sign(secret, []byte("{}")))
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			done <- rec.Code
		}()
	}
	// Each stuck request holds its slot once it starts reading.
	for _, pw := range writers {
		if _, err := pw.Write([]byte("{")); err != nil {
			t.Fatal(err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader("{}"))
	req.Header.Set(HeaderGitHubSignature, Sign(secret, []byte("{}")))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("request %d: status %d, Retry-After %q; want 503 with Retry-After", MaxConcurrent+1, rec.Code, rec.Header().Get("Retry-After"))
	}
	for _, pw := range writers {
		_, _ = pw.Write([]byte("}"))
		_ = pw.Close()
	}
	for range MaxConcurrent {
		if code := <-done; code != http.StatusAccepted {
			t.Errorf("a held request ended with %d, want 202", code)
		}
	}
	req = httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader("{}"))
	req.Header.Set(HeaderGitHubSignature, Sign(secret, []byte("{}")))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		t.Errorf("after the held requests: status %d, want 202", rec.Code)
	}
}
