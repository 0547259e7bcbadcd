package analysis

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"plimsoll.dev/plimsoll/contract"
)

func TestNames(t *testing.T) {
	tests := []struct {
		name, value string
		want        []string
		err         string
	}{
		{"absent", "", nil, ""},
		{"one", "error-rate", []string{"error-rate"}, ""},
		{"two, spaced", " error-rate ,latency ", []string{"error-rate", "latency"}, ""},
		{"empty item", "error-rate,,latency", nil, `plimsoll.dev/analysis: item 2 is empty`},
		{"trailing comma", "error-rate,", nil, `plimsoll.dev/analysis: item 2 is empty`},
		{"twice", "a, a", nil, `plimsoll.dev/analysis: "a" is named twice`},
		{"not a name", "Error Rate", nil, `plimsoll.dev/analysis: "Error Rate" is not a ConfigMap name`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Names(map[string]string{contract.AnnotationAnalysis: tc.value})
			checkErr(t, err, tc.err)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Names(%q) = %q, want %q", tc.value, got, tc.want)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name, value string
		want        map[string]string
		err         string
	}{
		{"absent", "", nil, ""},
		{"two", "threshold=0.02, path=/healthz", map[string]string{"threshold": "0.02", "path": "/healthz"}, ""},
		{"a value with =", "q=a=b", map[string]string{"q": "a=b"}, ""},
		{"an empty value", "q=", map[string]string{"q": ""}, ""},
		{"not name=value", "threshold", nil, `plimsoll.dev/analysis-args: item 1 "threshold" is not name=value`},
		{"empty item", "a=1,,b=2", nil, `plimsoll.dev/analysis-args: item 2 "" is not name=value`},
		{"bad name", "1x=2", nil, `plimsoll.dev/analysis-args: item 1: "1x" is not an argument name`},
		{"twice", "a=1, a=2", nil, `plimsoll.dev/analysis-args: "a" is given twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Args(map[string]string{contract.AnnotationAnalysisArgs: tc.value})
			checkErr(t, err, tc.err)
			if !maps.Equal(got, tc.want) {
				t.Errorf("Args(%q) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	analyses := map[string]*Template{
		"error-rate": mustParse(t, "error-rate", `
args:
- name: threshold
- name: window
  value: 1m
metrics:
- name: ratio
  successCondition: result < {{args.threshold}}
  prometheus: {query: 'sum(rate(errors{ns="{{args.namespace}}"}[{{args.window}}]))'}
`),
		"smoke": mustParse(t, "smoke", `
args: [{name: path, value: /healthz}]
metrics:
- name: get
  successCondition: result == "ok"
  web: {url: 'http://{{args.service}}{{args.path}}'}
`),
	}
	find := func(name string) (*Template, bool) {
		tpl, ok := analyses[name]
		return tpl, ok
	}
	tests := []struct {
		name, names, args string
		err               string // the error; "" for none
		annotation        string // the annotation it is about
	}{
		{"no analyses", "", "", "", ""},
		{"all given", "error-rate, smoke", "threshold=0.01", "", ""},
		{"defaults overridden", "error-rate, smoke", "threshold=0.01, window=5m, path=/ready", "", ""},
		{"missing analysis", "error-rate, latency", "threshold=0.01",
			`plimsoll.dev/analysis: no analysis "latency" (a ConfigMap of that name labelled plimsoll.dev/analysis in the Deployment's namespace)`, contract.AnnotationAnalysis},
		{"missing argument", "error-rate", "",
			`plimsoll.dev/analysis-args: analysis error-rate: argument "threshold" is required and not given`, contract.AnnotationAnalysisArgs},
		{"unknown argument", "error-rate", "threshold=0.01, treshold=0.02",
			`plimsoll.dev/analysis-args: "treshold" is declared by no analysis named (error-rate)`, contract.AnnotationAnalysisArgs},
		{"argument of an analysis not named", "smoke", "threshold=0.01",
			`plimsoll.dev/analysis-args: "threshold" is declared by no analysis named (smoke)`, contract.AnnotationAnalysisArgs},
		{"arguments without analyses", "", "threshold=0.01",
			`plimsoll.dev/analysis-args: "threshold" is given, but plimsoll.dev/analysis names no analysis`, contract.AnnotationAnalysisArgs},
		{"a built-in given", "error-rate", "threshold=0.01, namespace=x",
			`plimsoll.dev/analysis-args: "namespace" is built in`, contract.AnnotationAnalysisArgs},
		{"a value that breaks the condition", "error-rate", "threshold=abc",
			`plimsoll.dev/analysis-args: analysis error-rate: metrics[0].successCondition: parse "result < abc": unknown name abc (as written: "result < {{args.threshold}}")`, contract.AnnotationAnalysisArgs},
		{"a value that breaks the query", "error-rate", "threshold=0.01, window=soon",
			`plimsoll.dev/analysis-args: analysis error-rate: metrics[0].prometheus.query: 1:`, contract.AnnotationAnalysisArgs},
		{"malformed names", "a,,b", "", `plimsoll.dev/analysis: item 2 is empty`, contract.AnnotationAnalysis},
		{"malformed args", "error-rate", "threshold", `plimsoll.dev/analysis-args: item 1 "threshold" is not name=value`, contract.AnnotationAnalysisArgs},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(map[string]string{contract.AnnotationAnalysis: tc.names, contract.AnnotationAnalysisArgs: tc.args}, find)
			checkErr(t, err, tc.err)
			var re *RefError
			if err != nil && (!errors.As(err, &re) || re.Annotation != tc.annotation) {
				t.Errorf("Check = %#v, want a RefError about %s", err, tc.annotation)
			}
		})
	}
}

// checkErr checks that err starts with want, or is nil when want is "".
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error %v, want none", err)
	case want != "" && err == nil:
		t.Errorf("no error, want %s", want)
	case want != "" && !strings.HasPrefix(err.Error(), want):
		t.Errorf("error\n  %v\nwant it to start with\n  %s", err, want)
	}
}
