//go:build bench

package bench

import (
	"cmp"
	"context"
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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// requestCounts are API requests by verb, spelled as the API server's
// apiserver_request_total spells them (GET, LIST, WATCH, CREATE, UPDATE,
// PATCH, APPLY, DELETE, DELETECOLLECTION), and how many of them failed.
type requestCounts struct {
	Verbs  map[string]int64 `json:"verbs"`
	Errors int64            `json:"errors"` // answered with a status of 400 or more
}

// total is the number of requests of every verb.
func (c requestCounts) total() int64 {
	var n int64
	for _, v := range c.Verbs {
		n += v
	}
	return n
}

// minus is c - base, verb by verb: the requests made between two readings.
func (c requestCounts) minus(base requestCounts) requestCounts {
	out := requestCounts{Verbs: map[string]int64{}, Errors: c.Errors - base.Errors}
	for verb, v := range c.Verbs {
		if d := v - base.Verbs[verb]; d != 0 {
			out.Verbs[verb] = d
		}
	}
	return out
}

// apiProxy is a TLS reverse proxy in front of the API server that counts
// the requests passing through it. The daemon talks to the API server only
// through it, so its counts are the daemon's own requests, apart from those
// of the controller manager, the scheduler and kwok. The daemon speaks TLS
// and HTTP/2 to it, as it would to the API server.
type apiProxy struct {
	srv    *httptest.Server
	mu     sync.Mutex
	counts requestCounts
}

// startAPIProxy starts a proxy to the API server of cfg, which forwards
// every request with cfg's credentials; Close stops it.
func startAPIProxy(t *testing.T, cfg *rest.Config) *apiProxy {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("parse the API server address %q: %v", cfg.Host, err)
	}
	upstream, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatalf("build the proxy's transport to the API server: %v", err)
	}
	p := &apiProxy{counts: requestCounts{Verbs: map[string]int64{}}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The client's token is a placeholder (see writeKubeconfig):
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
				p.mu.Unlock()
			}
			return nil
		},
		// A watch cut when the daemon stops is no news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb := requestVerb(r)
		p.mu.Lock()
		p.counts.Verbs[verb]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	p.srv.EnableHTTP2 = true
	p.srv.StartTLS()
	return p
}

// startProxyDir starts a proxy to the API server of cfg (see
// startAPIProxy) and writes a kubeconfig that reaches it into a new
// directory, for a controller's other files too; it returns the proxy,
// the directory and the kubeconfig's path.
func startProxyDir(t *testing.T, cfg *rest.Config) (p *apiProxy, dir, kubeconfig string) {
	p = startAPIProxy(t, cfg)
	dir = t.TempDir()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	p.writeKubeconfig(t, kubeconfig)
	return p, dir, kubeconfig
}

// snapshot returns the counts so far.
func (p *apiProxy) snapshot() requestCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return requestCounts{Verbs: maps.Clone(p.counts.Verbs), Errors: p.counts.Errors}
}

// writeKubeconfig writes a kubeconfig at path that reaches the API server
// through the proxy. It holds no credentials: the proxy adds them. Its
// token is a placeholder the proxy drops, since some clients (Argo
// Rollouts') prompt for a password when a kubeconfig's user has none.
func (p *apiProxy) writeKubeconfig(t *testing.T, path string) {
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
func (p *apiProxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// requestVerb names the verb of an API request as the API server does in
// apiserver_request_total: a GET is a WATCH with ?watch=true, a LIST on a
// collection, else a GET; a PATCH of server-side apply is an APPLY.
func requestVerb(r *http.Request) string {
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

// scrapeRequests reads apiserver_request_total from the API server's
// /metrics and sums it by verb over every client. Leases are left out:
// kwok renews every simulated node's Lease on its own clock, whatever the
// daemon does.
func scrapeRequests(ctx context.Context, client kubernetes.Interface) (requestCounts, error) {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return requestCounts{}, fmt.Errorf("read the API server's metrics: %w", err)
	}
	counts := requestCounts{Verbs: map[string]int64{}}
	for line := range strings.SplitSeq(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return requestCounts{}, fmt.Errorf("parse the API server's metric line %q: %w", line, err)
		}
		l := parseLabels(labels)
		if l["resource"] == "leases" {
			continue
		}
		counts.Verbs[cmp.Or(apiserverVerbs[l["verb"]], l["verb"])] += int64(v)
		if code, _ := strconv.Atoi(l["code"]); code >= 400 {
			counts.Errors += int64(v)
		}
	}
	if len(counts.Verbs) == 0 {
		return requestCounts{}, fmt.Errorf("read the API server's metrics: no apiserver_request_total")
	}
	return counts, nil
}

// apiserverVerbs maps the verbs of apiserver_request_total to the names
// requestVerb gives them: the API server counts a create as POST and an
// update as PUT.
var apiserverVerbs = map[string]string{
	"GET": "GET", "LIST": "LIST", "WATCH": "WATCH", "WATCHLIST": "WATCH",
	"POST": "CREATE", "PUT": "UPDATE", "PATCH": "PATCH", "APPLY": "APPLY",
	"DELETE": "DELETE", "DELETECOLLECTION": "DELETECOLLECTION", "CONNECT": "CONNECT",
}

// parseLabels parses the labels of a Prometheus text line, a="x",b="y".
// The labels read here hold no quote or comma.
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// procCPU returns the CPU seconds (user and system, every thread) that
// process pid has used.
func procCPU(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read the CPU time of process %d: %w", pid, err)
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("read the CPU time of process %d: short stat line %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("read the CPU time of process %d: bad stat line %q", pid, s)
	}
	return float64(utime+stime) / clockTicks, nil
}

// resetPeakRSS sets the peak RSS of process pid back to its current RSS
// (proc(5), clear_refs "5"), so that the next reading is the peak of what
// follows.
func resetPeakRSS(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("reset the peak RSS of process %d: %w", pid, err)
	}
	return nil
}

// loadAverage returns the one-minute load average of the machine.
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return -1
	}
	return v
}
