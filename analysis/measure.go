package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/internal/redact"
	"plimsoll.dev/plimsoll/strategies"
)

// Config is what a Measurer measures with.
type Config struct {
	// PrometheusURL is the Prometheus that prometheus metrics query
	// (--prometheus-url); empty: every prometheus measurement is an error.
	PrometheusURL string
	// PrometheusBearerToken is sent to Prometheus as a bearer token when
	// not empty; the caller reads it from its file. It never appears in a
	// measurement.
	PrometheusBearerToken string
	// HTTPClient makes the requests to Prometheus and of web metrics. Nil:
	// a client with sane timeouts that does not follow redirects (a
	// redirect could carry a header's credentials to another host).
	HTTPClient *http.Client
	// Client creates the Jobs of job metrics and reads the Secrets of web
	// headers.
	Client kubernetes.Interface
}

// Measurer takes measurements of bound metrics. It is safe for concurrent
// use.
type Measurer struct {
	cfg  Config
	http *http.Client
	// prom is the Prometheus API, nil when no address is configured or it
	// is not a URL (promErr says why).
	prom    promv1.API
	promErr error
}

// NewMeasurer is a Measurer of cfg. A Prometheus address that is not an
// http(s) URL makes every prometheus measurement an error that says so.
func NewMeasurer(cfg Config) *Measurer {
	m := &Measurer{cfg: cfg, http: cfg.HTTPClient}
	if m.http == nil {
		m.http = defaultHTTPClient()
	}
	switch {
	case cfg.PrometheusURL == "":
		m.promErr = errors.New("no Prometheus address: set --prometheus-url")
	case checkURL(cfg.PrometheusURL) != nil:
		m.promErr = fmt.Errorf("--prometheus-url: %w", checkURL(cfg.PrometheusURL))
	default:
		client := *m.http
		client.Transport = bearer{token: cfg.PrometheusBearerToken, next: transportOf(m.http)}
		c, err := promapi.NewClient(promapi.Config{Address: cfg.PrometheusURL, Client: &client})
		if err != nil {
			m.promErr = fmt.Errorf("configure Prometheus: %w", err)
			break
		}
		m.prom = promv1.NewAPI(c)
	}
	return m
}

// Run is where a measurement is taken.
type Run struct {
	// Namespace and Workload are the workload's; the Job of a job metric
	// and the Secrets of a web metric are in Namespace.
	Namespace, Workload string
	// Stage is the stage of the analysis run (strategies.AnalysisRun.Stage)
	// and Started when the run started (its Started): with them, two runs
	// of the same revision name their Jobs apart.
	Stage   string
	Started time.Time
	// Index is the number of the measurement in the run, from 0: the
	// metric's strategies.MetricRun.Taken(). A Job is named from it, so a
	// restarted controller finds the Job it started.
	Index int
	// Owner, when not nil, owns the Jobs created (the workload's
	// Deployment), so that they go with it.
	Owner *metav1.OwnerReference
	// Now is the time of the measurement.
	Now time.Time
}

// Measure takes one measurement of b. It always returns one, with an
// Outcome: what the provider could not do is an Error measurement with the
// cause in its Message. It takes at most b.Timeout. Secrets (the Prometheus
// token, the values of Secret headers, the credentials of any URL) never
// appear in the Value or the Message.
func (m *Measurer) Measure(ctx context.Context, b Bound, run Run) (out strategies.Measurement) {
	out = strategies.Measurement{Metric: b.Spec.Name, At: run.Now}
	r := &redactor{}
	defer func() {
		if p := recover(); p != nil {
			out.Outcome, out.Value, out.Message = strategies.OutcomeError, "", fmt.Sprintf("measure: internal error: %v", p)
		}
		out.Value = clip(redact.Text(r.redact(out.Value)), maxValue)
		out.Message = clip(redact.Text(r.redact(out.Message)), maxMessage)
	}()
	if m == nil {
		out.Outcome, out.Message = strategies.OutcomeError, "no measurer configured"
		return out
	}
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var result any
	var err error
	switch {
	case b.Prometheus != nil:
		r.add(m.cfg.PrometheusBearerToken)
		result, err = m.query(ctx, b.Prometheus.Query)
	case b.Web != nil:
		result, err = m.request(ctx, b.Web, run.Namespace, r)
	case b.Job != nil:
		out.Outcome, out.Value, out.Message = m.job(ctx, b, run)
		return out
	default:
		out.Outcome, out.Message = strategies.OutcomeError, "the metric has no provider"
		return out
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("%w (timeout %s)", err, timeout)
		}
		out.Outcome, out.Message = strategies.OutcomeError, err.Error()
		return out
	}
	out.Value = formatValue(result)
	out.Outcome, out.Message = judge(b, result)
	return out
}

// formatValue is a result as users read it: numbers compactly (0.0132,
// 1.235e+06, +Inf), lists of numbers as [0.01 0.2], strings as they are,
// anything else as compact JSON.
func formatValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', 4, 64)
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = formatValue(f)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case string:
		return x
	case nil:
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "..."
	cut := n - len(mark)
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// isRuneStart reports whether b starts a UTF-8 sequence.
func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// redactor removes secret values from text bound for a measurement.
// Servers may echo what they were sent, and errors may quote it.
type redactor struct {
	values []string // longest first, so a value inside another goes second
}

// add makes r remove secret, as it is and as JSON quotes it, and the
// credential of an "Authorization" style value ("Bearer TOKEN": also TOKEN
// alone).
func (r *redactor) add(secret string) {
	for _, v := range []string{secret, lastField(secret)} {
		quoted, _ := json.Marshal(v)
		for _, form := range []string{v, strings.Trim(string(quoted), `"`)} {
			if len(form) >= minSecretLen && !slices.Contains(r.values, form) {
				r.values = append(r.values, form)
			}
		}
	}
	slices.SortFunc(r.values, func(a, b string) int { return len(b) - len(a) })
}

// redact is s with every secret value replaced.
func (r *redactor) redact(s string) string {
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, redacted)
	}
	return s
}

// lastField is the last space-separated field of s, or "" when s has one.
func lastField(s string) string {
	f := strings.Fields(s)
	if len(f) < 2 {
		return ""
	}
	return f[len(f)-1]
}

// defaultHTTPClient is the HTTP client of a Measurer configured without
// one.
func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive}).DialContext
	t.TLSHandshakeTimeout = tlsHandshakeTimeout
	t.IdleConnTimeout = idleConnTimeout
	return &http.Client{
		Transport: t,
		Timeout:   clientTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// transportOf is the round tripper of c.
func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// bearer adds a bearer token to each request, when it has one.
type bearer struct {
	token string
	next  http.RoundTripper
}

// RoundTrip sends req with the token.
func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.token == "" {
		return b.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}
