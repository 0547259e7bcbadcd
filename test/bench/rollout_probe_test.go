//go:build bench

package bench

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// requestCounts are API requests by verb (see kit.RequestCounts).
type requestCounts = kit.RequestCounts

// apiProxy counts the requests of one tool (see kit.APIProxy).
type apiProxy = kit.APIProxy

// startProxyDir starts a proxy to the API server of cfg (see
// kit.StartAPIProxy) and writes a kubeconfig that reaches it into a new
// directory, for a controller's other files too; it returns the proxy,
// the directory and the kubeconfig's path.
func startProxyDir(t *testing.T, cfg *rest.Config) (p *apiProxy, dir, kubeconfig string) {
	p = kit.StartAPIProxy(t, cfg, nil)
	dir = t.TempDir()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	p.WriteKubeconfig(t, kubeconfig)
	return p, dir, kubeconfig
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
		verb := cmp.Or(apiserverVerbs[l["verb"]], l["verb"])
		counts.Verbs[verb] += int64(v)
		code, _ := strconv.Atoi(l["code"])
		if code >= 400 {
			counts.Errors += int64(v)
		}
		if code == http.StatusConflict {
			counts.Conflicts += int64(v)
		}
		if l["resource"] == "pods" && l["subresource"] == "" && verb == "CREATE" {
			counts.PodCreates += int64(v)
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
