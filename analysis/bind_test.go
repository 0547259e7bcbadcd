package analysis

import (
	"strings"
	"testing"
)

const bindDoc = `
args:
- name: threshold
  value: "0.01"
- name: path
- name: vus
  value: "10"
metrics:
- name: ratio
  successCondition: result < {{args.threshold}}
  prometheus:
    query: 'sum(rate(errors{namespace="{{args.namespace}}",hash="{{args.hash}}",stable="{{args.stable-hash}}"}[1m]))'
- name: smoke
  successCondition: result == "{{args.workload}}-{{ args.revision }}"
  web:
    url: http://{{args.service}}.{{args.namespace}}:8080{{args.path}}
    method: POST
    body: '{"hash": "{{args.hash}}"}'
    headers:
    - {name: X-Revision, value: "{{args.revision}}"}
    - name: Authorization
      valueFrom: {secretKeyRef: {name: checker, key: token}}
- name: load
  job:
    template:
      metadata:
        labels: {run: "{{args.workload}}"}
      spec:
        containers:
        - name: k6
          image: grafana/k6
          args: [run, --vus, "{{args.vus}}", "http://{{args.service}}{{args.path}}"]
          env: [{name: HASH, value: "{{args.hash}}"}]
`

func TestBind(t *testing.T) {
	tpl := mustParse(t, "checks", bindDoc)
	tests := []struct {
		name  string
		given map[string]string
		check func(t *testing.T, bs []Bound)
	}{
		{"defaults and built-ins", map[string]string{"path": "/healthz"}, func(t *testing.T, bs []Bound) {
			want := `sum(rate(errors{namespace="shop",hash="abc123def0",stable="0fedcba987"}[1m]))`
			if got := bs[0].Prometheus.Query; got != want {
				t.Errorf("query = %s, want %s", got, want)
			}
			if got := bs[0].SuccessCondition; got != "result < 0.01" {
				t.Errorf("successCondition = %q, want the default threshold", got)
			}
			w := bs[1].Web
			if w.URL != "http://web-svc.shop:8080/healthz" || w.Body != `{"hash": "abc123def0"}` || w.Headers[0].Value != "7" {
				t.Errorf("web = %+v", w)
			}
			if *w.Headers[1].Secret != (SecretKeyRef{Name: "checker", Key: "token"}) {
				t.Errorf("secret header = %+v", w.Headers[1])
			}
			if got := bs[1].SuccessCondition; got != `result == "web-7"` {
				t.Errorf("successCondition = %q", got)
			}
			c := bs[2].Job.Template.Spec.Containers[0]
			if strings.Join(c.Args, " ") != "run --vus 10 http://web-svc/healthz" || c.Env[0].Value != "abc123def0" {
				t.Errorf("job container = %+v", c)
			}
			if got := bs[2].Job.Template.Labels["run"]; got != "web" {
				t.Errorf("job template label run = %q, want web", got)
			}
		}},
		{"given over defaults", map[string]string{"path": "/ready", "threshold": "0.05", "vus": "50"}, func(t *testing.T, bs []Bound) {
			if got := bs[0].SuccessCondition; got != "result < 0.05" {
				t.Errorf("successCondition = %q, want the given threshold", got)
			}
			if got := bs[2].Job.Template.Spec.Containers[0].Args[2]; got != "50" {
				t.Errorf("job --vus %s, want 50", got)
			}
		}},
		{"built-ins over given", map[string]string{"path": "/", "namespace": "other"}, func(t *testing.T, bs []Bound) {
			if !strings.Contains(bs[0].Prometheus.Query, `namespace="shop"`) {
				t.Errorf("query = %s, want the built-in namespace", bs[0].Prometheus.Query)
			}
		}},
		{"names, hash and order", map[string]string{"path": "/"}, func(t *testing.T, bs []Bound) {
			var names []string
			for _, b := range bs {
				names = append(names, b.Spec.Name)
				if b.Analysis != "checks" || b.Hash != "abc123def0" {
					t.Errorf("%s: analysis %q, hash %q", b.Spec.Name, b.Analysis, b.Hash)
				}
			}
			if got := strings.Join(names, " "); got != "checks/ratio checks/smoke checks/load" {
				t.Errorf("bound %s", got)
			}
			if bs[0].success == nil || bs[1].success == nil || bs[0].failure != nil {
				t.Error("conditions not compiled as given")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs, err := Bind([]*Template{tpl}, tc.given, testBuiltins)
			if err != nil {
				t.Fatalf("Bind: %v", err)
			}
			if len(bs) != 3 {
				t.Fatalf("%d bound metrics, want 3", len(bs))
			}
			tc.check(t, bs)
		})
	}
	// The template keeps its placeholders.
	if got := tpl.Metrics[2].Job.Template.Spec.Containers[0].Args[2]; got != "{{args.vus}}" {
		t.Errorf("Bind changed the template: job arg %q", got)
	}
	if got := tpl.Metrics[1].Web.Headers[0].Value; got != "{{args.revision}}" {
		t.Errorf("Bind changed the template: header %q", got)
	}
}

func TestBindRefusals(t *testing.T) {
	tpl := mustParse(t, "checks", bindDoc)
	tests := []struct {
		name  string
		given map[string]string
		b     Builtins
		want  string
	}{
		{"required not given", nil, testBuiltins, `analysis checks: argument "path" is required and not given`},
		{"a value that breaks the condition", map[string]string{"path": "/", "threshold": "low"}, testBuiltins,
			`analysis checks: metrics[0].successCondition: parse "result < low": unknown name low`},
		{"a value that breaks the URL", map[string]string{"path": "@:x"}, testBuiltins,
			`analysis checks: metrics[1].web.url: parse "http://[redacted]@:x": invalid port`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Bind([]*Template{tpl}, tc.given, tc.b)
			checkErr(t, err, tc.want)
		})
	}
}
