package sync

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// analysisDoc is an analysis ConfigMap in namespace shop holding body.
func analysisDoc(name, body string) string {
	return `apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + name + `
  namespace: shop
  labels: {plimsoll.dev/analysis: "true"}
data:
  analysis.yaml: |
` + indent(body, "    ")
}

// analysedDeployment is Deployment api in namespace ns with annotations.
func analysedDeployment(ns string, annotations map[string]string) string {
	var b strings.Builder
	b.WriteString("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n  namespace: " + ns + "\n  annotations:\n")
	for k, v := range annotations {
		b.WriteString("    " + k + ": \"" + v + "\"\n")
	}
	return b.String()
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// objectsOf parses docs, each the document of a file named after its
// index.
func objectsOf(t *testing.T, docs ...string) []manifest.Object {
	t.Helper()
	var objs []manifest.Object
	files := []string{"analysis.yaml", "deploy.yaml", "other.yaml"}
	for i, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("parse document %d: %v", i, err)
		}
		objs = append(objs, manifest.Object{Origin: manifest.Origin{File: files[i], Doc: 1}, Obj: u})
	}
	return objs
}

const goodAnalysis = `args:
- name: threshold
metrics:
- name: ratio
  successCondition: result < {{args.threshold}}
  prometheus:
    query: sum(rate(errors_total{hash="{{args.hash}}"}[1m]))
`

func TestCheckAnalyses(t *testing.T) {
	tests := []struct {
		name  string
		docs  []string
		words []string // in the error; none: no error
	}{
		{
			name: "a good analysis and a reference with its argument",
			docs: []string{analysisDoc("error-rate", goodAnalysis),
				analysedDeployment("shop", map[string]string{"plimsoll.dev/analysis": "error-rate", "plimsoll.dev/analysis-args": "threshold=0.01"})},
		},
		{
			name:  "a condition that does not compile: file, document and field",
			docs:  []string{analysisDoc("error-rate", strings.Replace(goodAnalysis, "result < {{args.threshold}}", "result <", 1))},
			words: []string{"analysis.yaml, document 1", "analysis error-rate", "metrics[0].successCondition"},
		},
		{
			name:  "a query that does not parse",
			docs:  []string{analysisDoc("error-rate", strings.Replace(goodAnalysis, "[1m]))", "[1m]", 1))},
			words: []string{"analysis.yaml, document 1", "metrics[0].prometheus.query"},
		},
		{
			name:  "an unknown provider",
			docs:  []string{analysisDoc("error-rate", strings.Replace(goodAnalysis, "prometheus:", "datadog:", 1))},
			words: []string{"analysis.yaml, document 1", "datadog"},
		},
		{
			name: "a reference to an analysis the commit does not hold",
			docs: []string{analysisDoc("error-rate", goodAnalysis),
				analysedDeployment("shop", map[string]string{"plimsoll.dev/analysis": "latency"})},
			words: []string{"deploy.yaml, document 1", `metadata.annotations["plimsoll.dev/analysis"]`, "latency"},
		},
		{
			name: "an analysis of another namespace does not count",
			docs: []string{analysisDoc("error-rate", goodAnalysis),
				analysedDeployment("web", map[string]string{"plimsoll.dev/analysis": "error-rate", "plimsoll.dev/analysis-args": "threshold=0.01"})},
			words: []string{"deploy.yaml, document 1", "error-rate"},
		},
		{
			name: "a required argument left out",
			docs: []string{analysisDoc("error-rate", goodAnalysis),
				analysedDeployment("shop", map[string]string{"plimsoll.dev/analysis": "error-rate"})},
			words: []string{"deploy.yaml, document 1", "threshold"},
		},
		{
			name: "an argument no analysis declares",
			docs: []string{analysisDoc("error-rate", goodAnalysis),
				analysedDeployment("shop", map[string]string{"plimsoll.dev/analysis": "error-rate", "plimsoll.dev/analysis-args": "threshold=0.01, treshold=2"})},
			words: []string{"deploy.yaml, document 1", `metadata.annotations["plimsoll.dev/analysis-args"]`, "treshold"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkAnalyses(objectsOf(t, tt.docs...))
			if len(tt.words) == 0 {
				if err != nil {
					t.Fatalf("checkAnalyses: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("checkAnalyses accepted the commit")
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
