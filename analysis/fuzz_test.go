package analysis

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// standInTime is when the fuzzed runs start.
var standInTime = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// FuzzParse feeds Parse the documents a repository could hold: it must
// answer every one with a template or an error, never panic, and a
// template it accepts must bind with the built-ins and give each metric a
// spec the tally can use.
func FuzzParse(f *testing.F) {
	f.Add(`metrics:
- name: ratio
  interval: 5s
  count: 3
  successCondition: result < 0.01
  failureCondition: result >= 0.05
  prometheus:
    query: sum(rate(errors_total{hash="{{args.hash}}"}[1m])) / sum(rate(requests_total[1m]))
`)
	f.Add(`args: [{name: threshold, value: "0.5"}]
metrics:
- name: web
  successCondition: result == true && {{args.threshold}} > 0
  web: {url: "http://{{args.service}}.{{args.namespace}}/x", jsonPath: "{.ok}"}
`)
	f.Add(`metrics:
- name: smoke
  job: {template: {spec: {restartPolicy: Never, containers: [{name: a, image: "b:{{args.hash}}"}]}}}
`)
	f.Add("a: &a [*a, *a]\nmetrics: *a\n")
	f.Add("metrics: [{name: x, count: -1, prometheus: {query: '('}}]")
	f.Fuzz(func(t *testing.T, doc string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Namespace: "shop",
			Labels: map[string]string{contract.LabelAnalysis: "true"}}, Data: map[string]string{contract.AnalysisKey: doc}}
		tmpl, err := Parse(cm)
		if err != nil {
			if tmpl != nil {
				t.Fatalf("Parse returned a template with its error %v", err)
			}
			return
		}
		given := map[string]string{}
		for _, a := range tmpl.Args {
			if a.Required {
				given[a.Name] = "1"
			}
		}
		bound, err := Bind([]*Template{tmpl}, given, standInBuiltins)
		if err != nil {
			return // a value given here may not fit where the document puts it
		}
		specs := Specs(bound)
		run := strategies.StartRun("step 1", "0123456789", specs, standInTime)
		for _, s := range specs {
			if s.Count < 1 || s.Interval <= 0 || s.FailureLimit < 0 || s.ConsecutiveErrorLimit < 0 {
				t.Fatalf("accepted a metric the tally cannot use: %+v", s)
			}
		}
		run.Due(specs, standInTime)
	})
}
