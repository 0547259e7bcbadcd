package analysis

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/strategies"
)

// exampleDoc is the document of docs/analysis.md and of the issue, with
// one of each provider.
const exampleDoc = `
args:
- name: threshold          # declared argument; no value = required from each Deployment
  value: "0.01"            # optional default
- name: vus
metrics:
- name: error-rate
  initialDelay: 10s
  interval: 5s
  count: 3
  failureLimit: 0
  inconclusiveLimit: 0
  consecutiveErrorLimit: 4
  timeout: 10s
  successCondition: result < {{args.threshold}}
  failureCondition: result >= 0.05
  prometheus:
    query: |
      sum(rate(http_errors_total{namespace="{{args.namespace}}",hash="{{args.hash}}"}[30s]))
      / sum(rate(http_requests_total{namespace="{{args.namespace}}",hash="{{args.hash}}"}[30s]))
- name: smoke
  web:
    url: http://{{args.service}}.{{args.namespace}}:8080/healthz
    method: POST
    body: '{"x": 1}'
    headers:
    - name: Authorization
      valueFrom: {secretKeyRef: {name: checker, key: token}}
    - name: X-Plain
      value: yes
    jsonPath: '{.status.ratio}'
  successCondition: result == "ok"
- name: load-test
  job:
    template:
      spec:
        restartPolicy: Never
        containers: [{name: k6, image: grafana/k6, args: ["run", "--vus", "{{args.vus}}"]}]
`

func TestParseExample(t *testing.T) {
	tpl := mustParse(t, "checks", exampleDoc)
	if tpl.Name != "checks" || len(tpl.Metrics) != 3 {
		t.Fatalf("template %q with %d metrics, want checks with 3", tpl.Name, len(tpl.Metrics))
	}
	wantArgs := []Arg{{Name: "threshold", Value: "0.01"}, {Name: "vus", Required: true}}
	for i, a := range wantArgs {
		if tpl.Args[i] != a {
			t.Errorf("args[%d] = %+v, want %+v", i, tpl.Args[i], a)
		}
	}
	rate := tpl.Metrics[0]
	wantSpec := strategies.MetricSpec{
		Name: "checks/error-rate", InitialDelay: 10 * time.Second, Interval: 5 * time.Second,
		Count: 3, ConsecutiveErrorLimit: 4,
	}
	if rate.Spec != wantSpec {
		t.Errorf("error-rate spec = %+v, want %+v", rate.Spec, wantSpec)
	}
	if rate.Prometheus == nil || !strings.Contains(rate.Prometheus.Query, `{{args.hash}}`) {
		t.Errorf("error-rate query = %+v, want the query as written", rate.Prometheus)
	}
	smoke := tpl.Metrics[1]
	// The defaults: interval 30s, count 1, consecutiveErrorLimit 4,
	// timeout 10s.
	wantSmoke := strategies.MetricSpec{Name: "checks/smoke", Interval: 30 * time.Second, Count: 1, ConsecutiveErrorLimit: 4}
	if smoke.Spec != wantSmoke || smoke.Timeout != 10*time.Second {
		t.Errorf("smoke spec = %+v, timeout %s; want %+v, timeout 10s", smoke.Spec, smoke.Timeout, wantSmoke)
	}
	w := smoke.Web
	if w == nil || w.Method != "POST" || w.Body != `{"x": 1}` || w.JSONPath != "{.status.ratio}" {
		t.Fatalf("smoke web = %+v", w)
	}
	// `value: yes` is the word yes (YAML 1.2), not true.
	if len(w.Headers) != 2 || *w.Headers[0].Secret != (SecretKeyRef{Name: "checker", Key: "token"}) || w.Headers[1].Value != "yes" {
		t.Errorf("smoke headers = %+v", w.Headers)
	}
	job := tpl.Metrics[2].Job
	if job == nil || job.Template.Spec.Containers[0].Args[2] != "{{args.vus}}" {
		t.Errorf("load-test job = %+v", job)
	}
}

func TestParseScalars(t *testing.T) {
	// An unquoted number keeps the text it was written with.
	tpl := mustParse(t, "a", `
args:
- {name: threshold, value: 0.010}
- {name: big, value: 1e3}
- {name: on, value: true}
- {name: hex, value: 0x1F}
- {name: inf, value: .inf}
- {name: none, value: ~}
metrics:
- name: m
  successCondition: result < {{args.threshold}}
  prometheus: {query: up}
`)
	for i, want := range []string{"0.010", "1e3", "true", "31", ".inf", ""} {
		if got := tpl.Args[i].Value; got != want {
			t.Errorf("args[%d].value = %q, want %q", i, got, want)
		}
	}
	if !tpl.Args[5].Required {
		t.Errorf("args[5] (value: ~) = %+v, want it required", tpl.Args[5])
	}
}

func TestParseRefusals(t *testing.T) {
	const prom = "  successCondition: result < 1\n  prometheus: {query: up}\n"
	tests := []struct {
		name string
		doc  string
		want string // the error, from its start
	}{
		{"not YAML", "metrics: [", `data["analysis.yaml"]: yaml: line 1: did not find expected node content`},
		{"empty", "", `data["analysis.yaml"]: no YAML document`},
		{"two documents", "metrics: []\n---\nmetrics: []\n", `data["analysis.yaml"]: more than one YAML document`},
		{"unknown field", "metric: []", `data["analysis.yaml"]: unknown field "metric"`},
		{"unknown metric field", "metrics:\n- name: a\n  sucessCondition: result < 1\n  prometheus: {query: up}\n",
			`data["analysis.yaml"]: unknown field "metrics[0].sucessCondition"`},
		{"unknown job field", "metrics:\n- name: a\n  job: {template: {spec: {containers: [{name: c, imag: x}]}}}\n",
			`data["analysis.yaml"]: unknown field "metrics[0].job.template.spec.containers[0].imag"`},
		{"repeated key", "metrics:\n- name: a\n  name: b\n" + prom, `data["analysis.yaml"]: line 3: key "name" given twice`},
		{"wrong type", "metrics:\n- name: a\n  count: [1]\n" + prom, `data["analysis.yaml"]: metrics[0].count: want int, got a list`},
		{"wrong type in a job", "metrics:\n- name: a\n" + prom + "- name: b\n  job: {template: {spec: {containers: [{name: c, image: i, args: [run, 10]}]}}}\n",
			`data["analysis.yaml"]: metrics[1].job.template.spec.containers.args: want string, got a number`},
		{"wrong type of an argument", "args: [{name: a}, {name: b, value: [1]}]\nmetrics:\n- name: a\n" + prom,
			`data["analysis.yaml"]: args[1].value: want string, got a list`},
		{"no metrics", "args: []\n", `data["analysis.yaml"]: metrics: none: an analysis needs at least one metric`},
		{"duplicate metric", "metrics:\n- name: a\n" + prom + "- name: a\n" + prom,
			`data["analysis.yaml"]: metrics[1].name: "a" is also the name of metrics[0]`},
		{"metric without name", "metrics:\n-" + prom[1:], `data["analysis.yaml"]: metrics[0].name: required`},
		{"metric name not a label", "metrics:\n- name: Error_Rate\n" + prom, `data["analysis.yaml"]: metrics[0].name: "Error_Rate" is not a DNS-1123 label`},
		{"unknown provider", "metrics:\n- name: a\n  successCondition: result < 1\n  datadog: {query: up}\n",
			`data["analysis.yaml"]: unknown field "metrics[0].datadog"`},
		{"two providers", "metrics:\n- name: a\n" + prom + "  web: {url: http://x}\n",
			`data["analysis.yaml"]: metrics[0]: exactly one provider of prometheus, web, job`},
		{"no provider", "metrics:\n- name: a\n  successCondition: result < 1\n",
			`data["analysis.yaml"]: metrics[0]: exactly one provider of prometheus, web, job`},
		{"bad duration", "metrics:\n- name: a\n  interval: 5x\n" + prom, `data["analysis.yaml"]: metrics[0].interval: time: unknown unit "x" in duration "5x"`},
		{"negative delay", "metrics:\n- name: a\n  initialDelay: -1s\n" + prom, `data["analysis.yaml"]: metrics[0].initialDelay: -1s must not be negative`},
		{"zero interval", "metrics:\n- name: a\n  interval: 0s\n" + prom, `data["analysis.yaml"]: metrics[0].interval: must be more than 0`},
		{"zero timeout", "metrics:\n- name: a\n  timeout: 0s\n" + prom, `data["analysis.yaml"]: metrics[0].timeout: must be more than 0`},
		{"negative failureLimit", "metrics:\n- name: a\n  failureLimit: -1\n" + prom, `data["analysis.yaml"]: metrics[0].failureLimit: -1 must not be negative`},
		{"negative inconclusiveLimit", "metrics:\n- name: a\n  inconclusiveLimit: -2\n" + prom, `data["analysis.yaml"]: metrics[0].inconclusiveLimit: -2 must not be negative`},
		{"negative consecutiveErrorLimit", "metrics:\n- name: a\n  consecutiveErrorLimit: -1\n" + prom, `data["analysis.yaml"]: metrics[0].consecutiveErrorLimit: -1 must not be negative`},
		{"count 0", "metrics:\n- name: a\n" + prom + "- name: b\n" + prom + "- name: c\n  count: 0\n" + prom,
			`data["analysis.yaml"]: metrics[2].count: must be at least 1`},
		{"prometheus without condition", "metrics:\n- name: a\n  prometheus: {query: up}\n",
			`data["analysis.yaml"]: metrics[0]: a prometheus metric needs successCondition or failureCondition`},
		{"web without condition", "metrics:\n- name: a\n  web: {url: http://x}\n",
			`data["analysis.yaml"]: metrics[0]: a web metric needs successCondition or failureCondition`},
		{"condition does not parse", "metrics:\n- name: a\n  successCondition: result <\n  prometheus: {query: up}\n",
			`data["analysis.yaml"]: metrics[0].successCondition: parse "result <": unexpected token EOF`},
		{"condition is not a bool", "metrics:\n- name: a\n  failureCondition: 1 + 2\n  prometheus: {query: up}\n",
			`data["analysis.yaml"]: metrics[0].failureCondition: parse "1 + 2": its type is int, not bool`},
		{"condition names an unknown variable", "metrics:\n- name: a\n  successCondition: reslt < 1\n  prometheus: {query: up}\n",
			`data["analysis.yaml"]: metrics[0].successCondition: parse "reslt < 1": unknown name reslt`},
		{"condition names no argument", "args: [{name: threshold}]\nmetrics:\n- name: a\n  successCondition: result < {{args.treshold}}\n  prometheus: {query: up}\n",
			`data["analysis.yaml"]: metrics[0].successCondition: {{args.treshold}} is not an argument (declared: threshold; built in: workload, namespace, service, revision, hash, stable-hash)`},
		{"query names no argument", "metrics:\n- name: a\n  successCondition: result < 1\n  prometheus: {query: 'up{job=\"{{args.job}}\"}'}\n",
			`data["analysis.yaml"]: metrics[0].prometheus.query: {{args.job}} is not an argument (declared: none; built in:`},
		{"query does not parse", "metrics:\n- name: a\n  successCondition: result < 1\n  prometheus: {query: 'sum(rate(x[5m])'}\n",
			`data["analysis.yaml"]: metrics[0].prometheus.query: 1:16: parse error: unclosed left parenthesis`},
		{"query empty", "metrics:\n- name: a\n  successCondition: result < 1\n  prometheus: {query: ''}\n",
			`data["analysis.yaml"]: metrics[0].prometheus.query: required`},
		{"url not absolute", "metrics:\n- name: a\n  successCondition: result\n  web: {url: /healthz}\n",
			`data["analysis.yaml"]: metrics[0].web.url: "/healthz" is not an absolute http or https URL`},
		{"url not http", "metrics:\n- name: a\n  successCondition: result\n  web: {url: 'ftp://x/y'}\n",
			`data["analysis.yaml"]: metrics[0].web.url: "ftp://x/y" is not an absolute http or https URL`},
		{"url not absolute after substitution", "args: [{name: base, value: localhost}]\nmetrics:\n- name: a\n  successCondition: result\n  web: {url: '{{args.base}}/healthz'}\n",
			`data["analysis.yaml"]: metrics[0].web.url: "localhost/healthz" is not an absolute http or https URL`},
		{"method", "metrics:\n- name: a\n  successCondition: result\n  web: {url: 'http://x', method: PUT}\n",
			`data["analysis.yaml"]: metrics[0].web.method: "PUT" is neither GET nor POST`},
		{"body on a GET", "metrics:\n- name: a\n  successCondition: result\n  web: {url: 'http://x', body: '{}'}\n",
			`data["analysis.yaml"]: metrics[0].web.body: only a POST sends a body`},
		{"header with value and valueFrom", "metrics:\n- name: a\n  successCondition: result\n  web:\n    url: http://x\n    headers:\n    - {name: A, value: b, valueFrom: {secretKeyRef: {name: s, key: k}}}\n",
			`data["analysis.yaml"]: metrics[0].web.headers[0]: exactly one of value and valueFrom`},
		{"header with neither", "metrics:\n- name: a\n  successCondition: result\n  web:\n    url: http://x\n    headers:\n    - {name: A}\n",
			`data["analysis.yaml"]: metrics[0].web.headers[0]: exactly one of value and valueFrom`},
		{"header name", "metrics:\n- name: a\n  successCondition: result\n  web:\n    url: http://x\n    headers:\n    - {name: 'A B', value: c}\n",
			`data["analysis.yaml"]: metrics[0].web.headers[0].name: "A B" is not an HTTP header name`},
		{"header valueFrom without a Secret", "metrics:\n- name: a\n  successCondition: result\n  web:\n    url: http://x\n    headers:\n    - {name: A, valueFrom: {}}\n",
			`data["analysis.yaml"]: metrics[0].web.headers[0].valueFrom.secretKeyRef: required`},
		{"jsonPath", "metrics:\n- name: a\n  successCondition: result\n  web: {url: 'http://x', jsonPath: '{.a'}\n",
			`data["analysis.yaml"]: metrics[0].web.jsonPath: unclosed action`},
		{"job without containers", "metrics:\n- name: a\n  job: {template: {spec: {restartPolicy: Never}}}\n",
			`data["analysis.yaml"]: metrics[0].job.template.spec.containers: a Job needs at least one container`},
		{"job container without image", "metrics:\n- name: a\n  job: {template: {spec: {containers: [{name: c}]}}}\n",
			`data["analysis.yaml"]: metrics[0].job.template.spec.containers[0].image: required`},
		{"job restarting Always", "metrics:\n- name: a\n  job: {template: {spec: {restartPolicy: Always, containers: [{name: c, image: i}]}}}\n",
			`data["analysis.yaml"]: metrics[0].job.template.spec.restartPolicy: "Always": a Job's pods restart Never or OnFailure`},
		{"job with a condition", "metrics:\n- name: a\n  successCondition: result\n  job: {template: {spec: {containers: [{name: c, image: i}]}}}\n",
			`data["analysis.yaml"]: metrics[0].successCondition: a job metric is judged by its Job succeeding or failing`},
		{"job string names no argument", "metrics:\n- name: a\n  job: {template: {spec: {containers: [{name: c, image: i, args: [run, '{{args.vus}}']}]}}}\n",
			`data["analysis.yaml"]: metrics[0].job.template.spec.containers[0].args[1]: {{args.vus}} is not an argument`},
		{"argument takes a built-in's name", "args: [{name: namespace}]\nmetrics:\n- name: a\n" + prom,
			`data["analysis.yaml"]: args[0].name: "namespace" is built in`},
		{"argument declared twice", "args: [{name: a}, {name: a}]\nmetrics:\n- name: a\n" + prom,
			`data["analysis.yaml"]: args[1].name: "a" is declared twice`},
		{"argument name", "args: [{name: 'a b'}]\nmetrics:\n- name: a\n" + prom,
			`data["analysis.yaml"]: args[0].name: "a b" is not an argument name`},
		{"alias bomb", aliasBomb(), `data["analysis.yaml"]: more than 100000 YAML nodes (aliases expanded)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(configMap("a", tc.doc))
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", tc.doc)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error\n  %s\nwant it to start with\n  %s", err, tc.want)
			}
		})
	}
}

func TestParseMissingKey(t *testing.T) {
	cm := configMap("a", "")
	cm.Data = map[string]string{"other.yaml": "metrics: []"}
	_, err := Parse(cm)
	if want := `data["analysis.yaml"]: missing`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Parse = %v, want %s...", err, want)
	}
	if _, err := Parse((*corev1.ConfigMap)(nil)); err == nil {
		t.Error("Parse(nil) accepted")
	}
}

// aliasBomb is a document of a few lines whose aliases expand to 10^9
// nodes.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	b.WriteString("metrics: *a8\n")
	return b.String()
}
