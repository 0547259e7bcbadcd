package analysis

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"plimsoll.dev/plimsoll/strategies"
)

// promAnswers are what the fake Prometheus answers to each query: its
// HTTP API's own format (https://prometheus.io/docs/prometheus/latest/querying/api/).
var promAnswers = map[string]struct {
	status int
	body   string
}{
	"scalar":   {200, `{"status":"success","data":{"resultType":"scalar","result":[1714564800.123,"0.0132"]}}`},
	"one":      {200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1714564800,"0.004"]}]}}`},
	"several":  {200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"c"},"value":[1714564800,"0.3"]},{"metric":{"pod":"a"},"value":[1714564800,"0.01"]},{"metric":{"pod":"b"},"value":[1714564800,"0.2"]}]}}`},
	"empty":    {200, `{"status":"success","data":{"resultType":"vector","result":[]}}`},
	"nan":      {200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1714564800,"NaN"]}]}}`},
	"nanscal":  {200, `{"status":"success","data":{"resultType":"scalar","result":[1714564800,"NaN"]}}`},
	"inf":      {200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1714564800,"+Inf"]}]}}`},
	"matrix":   {200, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1714564800,"1"],[1714564815,"2"]]}]}}`},
	"string":   {200, `{"status":"success","data":{"resultType":"string","result":[1714564800,"hello"]}}`},
	"warnings": {200, `{"status":"success","warnings":["PromQL info: metric might not be a counter"],"data":{"resultType":"vector","result":[{"metric":{},"value":[1714564800,"0.001"]}]}}`},
	"bad":      {400, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:5: parse error: unexpected end of input"}`},
	"down":     {503, `Service Unavailable`},
}

// fakePrometheus serves promAnswers at /api/v1/query; "slow" answers after
// a second. It records the Authorization headers it gets.
func fakePrometheus(t *testing.T, auth *[]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		if auth != nil {
			*auth = append(*auth, r.Header.Get("Authorization"))
		}
		q := r.FormValue("query")
		if q == "slow" {
			select {
			case <-time.After(time.Second):
			case <-r.Context().Done():
			}
			q = "scalar"
		}
		if q == "echo" { // an error that quotes the request's credentials
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprintf(w, `{"status":"error","errorType":"execution","error":"denied for %s"}`, r.Header.Get("Authorization"))
			return
		}
		a, ok := promAnswers[q]
		if !ok {
			t.Errorf("unexpected query %q", q)
			a = promAnswers["bad"]
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// promMetric is a bound prometheus metric of query with success condition
// cond and a timeout of 200ms.
func promMetric(t *testing.T, query, cond string) Bound {
	t.Helper()
	b := bindOne(t, "rate", fmt.Sprintf("metrics:\n- name: m\n  timeout: 200ms\n  successCondition: '%s'\n  prometheus: {query: %s}\n", cond, query), nil)
	return b
}

func TestPrometheus(t *testing.T) {
	srv := fakePrometheus(t, nil)
	m := NewMeasurer(Config{PrometheusURL: srv.URL})
	tests := []struct {
		name, query, cond string
		outcome           strategies.Outcome
		value             string
		message           string // a part of the message
	}{
		{"scalar", "scalar", "result < 0.02", strategies.OutcomeSuccessful, "0.0132", ""},
		{"vector of one", "one", "result < 0.01", strategies.OutcomeSuccessful, "0.004", ""},
		{"vector of several, ordered by labels", "several", "result[0] == 0.01 && result[2] == 0.3", strategies.OutcomeSuccessful, "[0.01 0.2 0.3]", ""},
		{"vector of several, judged", "several", "all(result, {# < 0.25})", strategies.OutcomeFailed, "[0.01 0.2 0.3]", "successCondition"},
		{"empty vector", "empty", "result < 0.01", strategies.OutcomeError, "", "query returned no data"},
		{"NaN sample", "nan", "result < 0.01", strategies.OutcomeError, "", "query returned NaN (no data in the window?)"},
		{"NaN scalar", "nanscal", "result < 0.01", strategies.OutcomeError, "", "query returned NaN"},
		{"+Inf judged", "inf", "result < 0.01", strategies.OutcomeFailed, "+Inf", ""},
		{"+Inf with isInf", "inf", "isInf(result)", strategies.OutcomeSuccessful, "+Inf", ""},
		{"matrix", "matrix", "result < 1", strategies.OutcomeError, "", "query returned a range vector (matrix)"},
		// client_golang does not decode Prometheus' string results: an
		// error either way.
		{"string", "string", "result < 1", strategies.OutcomeError, "", "query Prometheus: "},
		{"warnings only", "warnings", "result < 0.01", strategies.OutcomeSuccessful, "0.001", ""},
		{"error status", "bad", "result < 1", strategies.OutcomeError, "", "query Prometheus: bad_data: invalid parameter"},
		{"unavailable", "down", "result < 1", strategies.OutcomeError, "", "query Prometheus: server_error: server error: 503"},
		{"timeout", "slow", "result < 1", strategies.OutcomeError, "", "context deadline exceeded (timeout 200ms)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := m.Measure(context.Background(), promMetric(t, tc.query, tc.cond), testRun(0))
			if got.Outcome != tc.outcome || got.Value != tc.value || !strings.Contains(got.Message, tc.message) {
				t.Errorf("Measure = %s %q %q, want %s %q with %q", got.Outcome, got.Value, got.Message, tc.outcome, tc.value, tc.message)
			}
			if got.Metric != "rate/m" || !got.At.Equal(testRun(0).Now) {
				t.Errorf("Measure = metric %q at %s, want rate/m at the run's now", got.Metric, got.At)
			}
		})
	}
}

func TestPrometheusNotThere(t *testing.T) {
	srv := fakePrometheus(t, nil)
	srv.Close() // nothing listens there now
	tests := []struct {
		name, url, message string
	}{
		{"no address", "", "no Prometheus address: set --prometheus-url"},
		{"not a URL", "prometheus:9090", `--prometheus-url: "prometheus:9090" is not an absolute http or https URL`},
		{"unreachable", srv.URL, "query Prometheus: Post \"" + srv.URL + "/api/v1/query\": dial tcp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMeasurer(Config{PrometheusURL: tc.url})
			got := m.Measure(context.Background(), promMetric(t, "scalar", "result < 1"), testRun(0))
			if got.Outcome != strategies.OutcomeError || !strings.Contains(got.Message, tc.message) {
				t.Errorf("Measure = %s %q, want Error with %q", got.Outcome, got.Message, tc.message)
			}
		})
	}
}

func TestPrometheusToken(t *testing.T) {
	const token = "s3cr3t-prometheus-token"
	var auth []string
	srv := fakePrometheus(t, &auth)
	m := NewMeasurer(Config{PrometheusURL: srv.URL, PrometheusBearerToken: token})
	ok := m.Measure(context.Background(), promMetric(t, "scalar", "result < 1"), testRun(0))
	if ok.Outcome != strategies.OutcomeSuccessful || len(auth) == 0 || auth[0] != "Bearer "+token {
		t.Fatalf("Measure = %s, Authorization %q; want Successful with the bearer token", ok.Outcome, auth)
	}
	echo := m.Measure(context.Background(), promMetric(t, "echo", "result < 1"), testRun(0))
	if echo.Outcome != strategies.OutcomeError || !strings.Contains(echo.Message, "denied for Bearer "+redacted) {
		t.Errorf("Measure = %s %q, want Error with the token redacted", echo.Outcome, echo.Message)
	}
	if strings.Contains(echo.Message+echo.Value, token) {
		t.Errorf("the token leaked into the measurement: %+v", echo)
	}
}
