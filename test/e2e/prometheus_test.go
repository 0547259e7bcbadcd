//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	gosync "sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Settings of the suite's Prometheus.
const (
	// promScrapeInterval is Prometheus' scrape and rule evaluation interval:
	// a rate over 5s already holds five samples per series.
	promScrapeInterval = time.Second
	// promStartTimeout bounds the wait for /-/ready after a start, which
	// includes replaying the write-ahead log after a restart.
	promStartTimeout = 60 * time.Second
	// promStopTimeout is how long a stop waits after SIGTERM before SIGKILL.
	promStopTimeout = 10 * time.Second
	// promLogTail is how many lines of Prometheus' log a failed test shows.
	promLogTail = 40
)

// Metrics of the exporter, with the labels of every series.
const (
	metricRequests = "plimsoll_e2e_requests_total"
	metricErrors   = "plimsoll_e2e_errors_total"
	// metricLoad is a gauge, the load of a simulated workload, which the
	// metrics adapter serves to HorizontalPodAutoscalers (see setLoad).
	metricLoad = "plimsoll_e2e_load"
)

var (
	exporterLabels = []string{"namespace", "workload", "hash"}
	loadLabels     = []string{"namespace", "workload"}
)

// prom is the suite's one Prometheus, started by the first test that asks
// for it and stopped after the last test (see suiteCleanups).
var prom struct {
	once   gosync.Once
	server *promServer
	err    error
}

// promServer is a Prometheus process that scrapes the suite's exporter every
// promScrapeInterval and answers queries at url.
type promServer struct {
	dir      string // config, data and log
	addr     string // host:port it listens on
	url      string // http://addr
	exporter *promExporter
	proc     *serverProcess
}

// startPrometheus returns the suite's Prometheus, starting it and its
// exporter on first use: the binary comes from `hack/cluster prometheus`,
// which builds it once. A test that fails gets the tail of Prometheus' log.
func startPrometheus(t *testing.T) *promServer {
	t.Helper()
	prom.once.Do(func() { prom.server, prom.err = launchPrometheus() })
	if prom.err != nil {
		t.Fatalf("start Prometheus: %v", prom.err)
	}
	prom.server.proc.logOnFailure(t, promLogTail)
	return prom.server
}

// launchPrometheus builds (or finds) Prometheus, starts the exporter and
// Prometheus, and registers their stop as a suite cleanup.
func launchPrometheus() (p *promServer, err error) {
	bin, err := clusterTool("prometheus")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "plimsoll-e2e-prometheus-")
	if err != nil {
		return nil, err
	}
	exp, err := startExporter()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p = &promServer{dir: dir, exporter: exp, proc: &serverProcess{
		name: "prometheus",
		bin:  bin,
		log:  filepath.Join(dir, "prometheus.log"),
	}}
	stopAll := func() {
		if err := p.proc.halt(promStopTimeout); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
		}
		exp.close()
		os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: Prometheus log:\n%s\n", p.proc.logTail(promLogTail))
			stopAll()
		}
	}()

	if p.addr, err = freeAddr(); err != nil {
		return nil, err
	}
	p.url = "http://" + p.addr
	config := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
scrape_configs:
- job_name: plimsoll-e2e
  static_configs:
  - targets: [%[2]q]
`, promScrapeInterval, exp.addr)
	if err := os.WriteFile(p.configPath(), []byte(config), 0o644); err != nil {
		return nil, err
	}
	p.proc.args = []string{
		"--config.file=" + p.configPath(),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + p.addr,
	}
	if err := p.proc.launch(promStartTimeout, p.ready); err != nil {
		return nil, err
	}
	suiteCleanups = append(suiteCleanups, stopAll)
	return p, nil
}

func (p *promServer) configPath() string { return filepath.Join(p.dir, "prometheus.yml") }

// ready reports whether Prometheus answers /-/ready with 200.
func (p *promServer) ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/-/ready", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stop stops Prometheus, for tests of what plimsoll does when it cannot
// reach its metrics provider. It stays down until start, or until the test
// ends: the next test gets it running again.
func (p *promServer) stop(t *testing.T) {
	t.Helper()
	if err := p.proc.halt(promStopTimeout); err != nil {
		t.Log(err)
	}
	t.Cleanup(func() {
		if !p.proc.running() {
			p.start(t)
		}
	})
}

// start starts a stopped Prometheus again, on the same address and with the
// same data, and waits until it is ready.
func (p *promServer) start(t *testing.T) {
	t.Helper()
	if p.proc.running() {
		return
	}
	if err := p.proc.launch(promStartTimeout, p.ready); err != nil {
		t.Fatalf("restart Prometheus: %v", err)
	}
}

// sample is one element of an instant vector.
type sample struct {
	labels map[string]string
	value  float64
}

func (s sample) String() string { return fmt.Sprintf("%v %g", s.labels, s.value) }

// query evaluates expr now with the HTTP API's /api/v1/query and returns
// the instant vector it yields, failing the test on any error.
func (p *promServer) query(t *testing.T, expr string) []sample {
	t.Helper()
	v, err := p.instantQuery(context.Background(), expr)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (p *promServer) instantQuery(ctx context.Context, expr string) ([]sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		p.url+"/api/v1/query?"+url.Values{"query": {expr}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("query %s: read the answer: %w", expr, err)
	}
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"` // [unix time, "value"]
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("query %s: HTTP %d: %s", expr, resp.StatusCode, bytes.TrimSpace(body))
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", expr, answer.Error)
	}
	if answer.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result is a %s, want a vector", expr, answer.Data.ResultType)
	}
	samples := make([]sample, 0, len(answer.Data.Result))
	for _, r := range answer.Data.Result {
		text, ok := r.Value[1].(string)
		if !ok {
			return nil, fmt.Errorf("query %s: value %v is not a string", expr, r.Value[1])
		}
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", expr, err)
		}
		samples = append(samples, sample{labels: r.Metric, value: v})
	}
	return samples, nil
}

// waitForValue polls expr until cond holds for the vector it yields,
// failing the test after defaultTimeout with the last vector seen.
func (p *promServer) waitForValue(t *testing.T, expr string, cond func([]sample) bool) {
	t.Helper()
	p.waitForValueWithin(t, expr, defaultTimeout, cond)
}

// waitForValueWithin is waitForValue with a timeout of its own.
func (p *promServer) waitForValueWithin(t *testing.T, expr string, timeout time.Duration, cond func([]sample) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last []sample
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		last, lastErr = p.instantQuery(ctx, expr)
		return lastErr == nil && cond(last), nil
	})
	if err != nil {
		t.Fatalf("wait for %s: %v (last vector: %v, last error: %v)", expr, err, last, lastErr)
	}
}

// valueBetween is a waitForValue condition: one sample, within [lo, hi].
func valueBetween(lo, hi float64) func([]sample) bool {
	return func(v []sample) bool { return len(v) == 1 && v[0].value >= lo && v[0].value <= hi }
}

// noValue is a waitForValue condition: an empty vector.
func noValue(v []sample) bool { return len(v) == 0 }

// promExporter serves /metrics on a loopback port, publishing per
// (namespace, workload, hash) the counters metricRequests and metricErrors
// of a simulated service, growing at the rates a test sets. Values are
// computed at scrape time from the wall clock.
type promExporter struct {
	addr string
	srv  *http.Server

	mu     gosync.Mutex
	series map[exporterKey]*exporterSeries
	loads  map[loadKey]float64
}

type exporterKey struct{ namespace, workload, hash string }

type loadKey struct{ namespace, workload string }

// exporterSeries is the traffic of one label set: the counters as they
// stood at since, and how fast they have grown from then on.
type exporterSeries struct {
	since      time.Time
	requests   float64
	errors     float64
	perSecond  float64
	errorRatio float64
}

// at returns the counters at now: the value at since plus the integral of
// the rates. At 10 requests/s with 10% errors, 30s after since, they have
// grown by 300 and 30, so rate() over any window in between gives 10 and 1.
func (s *exporterSeries) at(now time.Time) (requests, errors float64) {
	d := now.Sub(s.since).Seconds()
	return s.requests + s.perSecond*d, s.errors + s.perSecond*s.errorRatio*d
}

func startExporter() (*promExporter, error) {
	e := &promExporter{series: map[exporterKey]*exporterSeries{}, loads: map[loadKey]float64{}}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(exporterCollector{e}); err != nil {
		return nil, fmt.Errorf("register the exporter's collector: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the exporter: %w", err)
	}
	e.addr = ln.Addr().String()
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

func (e *promExporter) close() { _ = e.srv.Close() }

// set makes the series of (ns, workload, hash) grow from now on at
// requestsPerSecond, errorRatio of them errors. A series that exists keeps
// its values so far, so the counters never go down; a new one starts at 0.
func (e *promExporter) set(ns, workload, hash string, requestsPerSecond, errorRatio float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	s := &exporterSeries{since: now, perSecond: requestsPerSecond, errorRatio: errorRatio}
	if old, ok := e.series[exporterKey{ns, workload, hash}]; ok {
		s.requests, s.errors = old.at(now)
	}
	e.series[exporterKey{ns, workload, hash}] = s
}

// stop removes the series of (ns, workload, hash) from the exporter;
// Prometheus marks it stale at its next scrape.
func (e *promExporter) stop(ns, workload, hash string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.series, exporterKey{ns, workload, hash})
}

// setLoad sets the gauge metricLoad of (ns, workload) to load, from the
// next scrape on.
func (e *promExporter) setLoad(ns, workload string, load float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.loads[loadKey{ns, workload}] = load
}

// stopLoad removes the gauge metricLoad of (ns, workload) from the exporter;
// Prometheus marks it stale at its next scrape.
func (e *promExporter) stopLoad(ns, workload string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.loads, loadKey{ns, workload})
}

// exporterCollector computes the exporter's counters at each scrape.
type exporterCollector struct{ e *promExporter }

var (
	requestsDesc = prometheus.NewDesc(metricRequests, "Requests served by a simulated workload revision.", exporterLabels, nil)
	errorsDesc   = prometheus.NewDesc(metricErrors, "Requests of a simulated workload revision that failed.", exporterLabels, nil)
	loadDesc     = prometheus.NewDesc(metricLoad, "Load of a simulated workload, which HorizontalPodAutoscalers scale on.", loadLabels, nil)
)

func (c exporterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- requestsDesc
	ch <- errorsDesc
	ch <- loadDesc
}

func (c exporterCollector) Collect(ch chan<- prometheus.Metric) {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	now := time.Now()
	for k, s := range c.e.series {
		requests, errs := s.at(now)
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, requests, k.namespace, k.workload, k.hash)
		ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, errs, k.namespace, k.workload, k.hash)
	}
	for k, load := range c.e.loads {
		ch <- prometheus.MustNewConstMetric(loadDesc, prometheus.GaugeValue, load, k.namespace, k.workload)
	}
}

// freeAddr returns a loopback address with a port that was free just now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// TestPrometheusHarness checks the harness the analysis tests stand on: the
// exporter's counters, scraped every second, give back through rate() the
// error ratio a test set, follow a change of it, and leave queries once the
// series is stopped; and Prometheus, stopped and started again, keeps its
// samples.
func TestPrometheusHarness(t *testing.T) {
	p := startPrometheus(t)
	ns, workload, hash := t.Name(), "web", "5d8f7c9b4"
	sel := fmt.Sprintf(`{namespace=%q, workload=%q, hash=%q}`, ns, workload, hash)
	requestRate := fmt.Sprintf(`sum(rate(%s%s[5s]))`, metricRequests, sel)
	errorRatio := fmt.Sprintf(`sum(rate(%s%s[5s])) / %s`, metricErrors, sel, requestRate)

	p.exporter.set(ns, workload, hash, 10, 0.1)
	t.Cleanup(func() { p.exporter.stop(ns, workload, hash) })
	p.waitForValue(t, requestRate, valueBetween(9, 11))
	p.waitForValue(t, errorRatio, valueBetween(0.08, 0.12))

	changed := time.Now()
	p.exporter.set(ns, workload, hash, 10, 0.001)
	p.waitForValue(t, errorRatio, valueBetween(0, 0.005))
	t.Logf("error ratio below 0.005 %s after it was set to 0.001", time.Since(changed).Round(100*time.Millisecond))
	// The change of rate left the counters monotonic: no reset.
	resets := fmt.Sprintf(`resets(%s%s[1m]) + resets(%s%s[1m])`, metricRequests, sel, metricErrors, sel)
	if v := p.query(t, resets); len(v) != 1 || v[0].value != 0 {
		t.Errorf("%s = %v, want one sample of 0", resets, v)
	}

	stopped := time.Now()
	p.exporter.stop(ns, workload, hash)
	p.waitForValueWithin(t, errorRatio, 15*time.Second, noValue)
	t.Logf("series gone from queries %s after it was stopped", time.Since(stopped).Round(100*time.Millisecond))

	// An outage: queries fail while Prometheus is stopped, and it comes back
	// on the same address with the samples it had.
	scraped := fmt.Sprintf(`count_over_time(%s%s[10m])`, metricRequests, sel)
	before := p.query(t, scraped)
	if len(before) != 1 {
		t.Fatalf("%s = %v before the outage, want one sample", scraped, before)
	}
	p.stop(t)
	if v, err := p.instantQuery(context.Background(), scraped); err == nil {
		t.Fatalf("query while Prometheus is stopped answered %v", v)
	}
	p.start(t)
	p.waitForValue(t, scraped, valueBetween(before[0].value, before[0].value))
}
