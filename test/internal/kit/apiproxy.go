package kit

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// RequestCounts are API requests by verb, spelled as the API server's
// apiserver_request_total spells them (GET, LIST, WATCH, CREATE, UPDATE,
// PATCH, APPLY, DELETE, DELETECOLLECTION), how many of them failed, how
// many of those were conflicts, and the pods created (what a rollout
// makes the scheduler, the kubelets and the endpoints controller do).
type RequestCounts struct {
	Verbs      map[string]int64 `json:"verbs"`
	Errors     int64            `json:"errors"`               // answered with a status of 400 or more
	Conflicts  int64            `json:"conflicts,omitempty"`  // answered 409 Conflict
	PodCreates int64            `json:"podCreates,omitempty"` // pods created (POST of pods), answered or not
}

// Total is the number of requests of every verb.
func (c RequestCounts) Total() int64 {
	var n int64
	for _, v := range c.Verbs {
		n += v
	}
	return n
}

// Minus is c - base, verb by verb: the requests made between two readings.
func (c RequestCounts) Minus(base RequestCounts) RequestCounts {
	out := RequestCounts{Verbs: map[string]int64{}, Errors: c.Errors - base.Errors, Conflicts: c.Conflicts - base.Conflicts,
		PodCreates: c.PodCreates - base.PodCreates}
	for verb, v := range c.Verbs {
		if d := v - base.Verbs[verb]; d != 0 {
			out.Verbs[verb] = d
		}
	}
	return out
}

// APIProxy is a TLS reverse proxy in front of the API server that counts
// the requests passing through it. The daemon talks to the API server only
// through it, so its counts are the daemon's own requests, apart from those
// of the controller manager, the scheduler and kwok. The daemon speaks TLS
// and HTTP/2 to it, as it would to the API server.
type APIProxy struct {
	srv    *httptest.Server
	mu     sync.Mutex
	counts RequestCounts
}

// StartAPIProxy starts a proxy to the API server of cfg, which forwards
// every request with cfg's credentials; Close stops it. observe, when not
// nil, is given every answer as it comes back, its request in
// resp.Request; it may read the body of an answer that is not a watch
// with PeekBody.
func StartAPIProxy(t testing.TB, cfg *rest.Config, observe func(resp *http.Response)) *APIProxy {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("parse the API server address %q: %v", cfg.Host, err)
	}
	upstream, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatalf("build the proxy's transport to the API server: %v", err)
	}
	p := &APIProxy{counts: RequestCounts{Verbs: map[string]int64{}}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The client's token is a placeholder (see WriteKubeconfig):
			// the upstream transport adds cfg's credentials only to a
			// request that carries none.
			r.Out.Header.Del("Authorization")
		},
		Transport: upstream,
		// Stream watch events as they come.
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode >= 400 {
				p.mu.Lock()
				p.counts.Errors++
				if resp.StatusCode == http.StatusConflict {
					p.counts.Conflicts++
				}
				p.mu.Unlock()
			}
			if observe != nil {
				observe(resp)
			}
			return nil
		},
		// A watch cut when the daemon stops is no news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb := RequestVerb(r)
		p.mu.Lock()
		p.counts.Verbs[verb]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	p.srv.EnableHTTP2 = true
	p.srv.StartTLS()
	return p
}

// Snapshot returns the counts so far.
func (p *APIProxy) Snapshot() RequestCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.counts
	out.Verbs = maps.Clone(p.counts.Verbs)
	return out
}

// WriteKubeconfig writes a kubeconfig at path that reaches the API server
// through the proxy. It holds no credentials: the proxy adds them. Its
// token is a placeholder the proxy drops, since some clients (Argo
// Rollouts') prompt for a password when a kubeconfig's user has none.
func (p *APIProxy) WriteKubeconfig(t testing.TB, path string) {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: bench
  user: {token: added-by-the-proxy}
contexts:
- name: bench
  context: {cluster: bench, user: bench}
current-context: bench
`, p.srv.URL, base64.StdEncoding.EncodeToString(ca))
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatalf("write the proxy's kubeconfig: %v", err)
	}
}

// Close stops the proxy and cuts the connections still open.
func (p *APIProxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// RequestVerb names the verb of an API request as the API server does in
// apiserver_request_total: a GET is a WATCH with ?watch=true, a LIST on a
// collection, else a GET; a PATCH of server-side apply is an APPLY.
func RequestVerb(r *http.Request) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if w := r.URL.Query().Get("watch"); w == "true" || w == "1" || strings.Contains(r.URL.Path, "/watch/") {
			return "WATCH"
		}
		if isCollection(r.URL.Path) {
			return "LIST"
		}
		return "GET"
	case http.MethodPost:
		return "CREATE"
	case http.MethodPut:
		return "UPDATE"
	case http.MethodPatch:
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			return "APPLY"
		}
		return "PATCH"
	case http.MethodDelete:
		if isCollection(r.URL.Path) {
			return "DELETECOLLECTION"
		}
		return "DELETE"
	}
	return r.Method
}

// isCollection tells whether path names a collection of a resource, such
// as /api/v1/namespaces/ns/pods or /apis/apps/v1/deployments, rather than
// one object (.../pods/web-1, .../pods/web-1/status) or a discovery path.
func isCollection(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return len(parts) == 1
}

// PeekBody reads the whole body of resp and puts it back for the client.
func PeekBody(resp *http.Response) ([]byte, error) {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return body, err
}
