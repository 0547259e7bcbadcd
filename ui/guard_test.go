package ui

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestGuard refuses what the view must not answer: any method but GET, a
// Host that is not the view's (DNS rebinding), another origin; and sets
// the Content-Security-Policy on every answer, refusals included.
func TestGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := guard([]string{"plimsoll.example"}, ok)
	tests := []struct {
		name, method, host string
		headers            map[string]string
		want               int
	}{
		{"a GET on the loopback address", http.MethodGet, "127.0.0.1:8081", nil, http.StatusTeapot},
		{"a GET through kubectl port-forward", http.MethodGet, "localhost:8081", nil, http.StatusTeapot},
		{"a GET on an IPv6 address", http.MethodGet, "[::1]:8081", nil, http.StatusTeapot},
		{"a GET on a host given with --ui-host", http.MethodGet, "Plimsoll.Example", nil, http.StatusTeapot},
		{"the page's own live stream", http.MethodGet, "127.0.0.1:8081", map[string]string{"Origin": "http://127.0.0.1:8081"}, http.StatusTeapot},
		{"a link followed from another site", http.MethodGet, "127.0.0.1:8081",
			map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, http.StatusTeapot},
		{"POST", http.MethodPost, "127.0.0.1:8081", nil, http.StatusMethodNotAllowed},
		{"PUT", http.MethodPut, "127.0.0.1:8081", nil, http.StatusMethodNotAllowed},
		{"DELETE", http.MethodDelete, "127.0.0.1:8081", nil, http.StatusMethodNotAllowed},
		{"PATCH", http.MethodPatch, "127.0.0.1:8081", nil, http.StatusMethodNotAllowed},
		{"HEAD", http.MethodHead, "127.0.0.1:8081", nil, http.StatusMethodNotAllowed},
		{"OPTIONS (a CORS preflight)", http.MethodOptions, "127.0.0.1:8081", map[string]string{"Origin": "http://evil.example"}, http.StatusMethodNotAllowed},
		{"a name pointed at the loopback address", http.MethodGet, "evil.example:8081", nil, http.StatusMisdirectedRequest},
		{"another origin's EventSource", http.MethodGet, "127.0.0.1:8081", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"another port's page", http.MethodGet, "127.0.0.1:8081", map[string]string{"Origin": "http://127.0.0.1:9999"}, http.StatusForbidden},
		{"an opaque origin", http.MethodGet, "127.0.0.1:8081", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"another site's fetch without Origin", http.MethodGet, "127.0.0.1:8081",
			map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "http://"+tt.host+"/live/", nil)
			r.Host = tt.host
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("status %d, want %d (%s)", w.Code, tt.want, w.Body.String())
			}
			if got := w.Header().Get("Content-Security-Policy"); got != contentSecurityPolicy {
				t.Errorf("Content-Security-Policy %q", got)
			}
			if got := w.Header().Get("X-Frame-Options"); got != "DENY" {
				t.Errorf("X-Frame-Options %q", got)
			}
		})
	}
}
