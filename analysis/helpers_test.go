package analysis

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// configMap is an analysis ConfigMap named name holding doc.
func configMap(name, doc string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{contract.LabelAnalysis: "true"}},
		Data:       map[string]string{contract.AnalysisKey: doc},
	}
}

// mustParse parses doc as the analysis name, failing the test on an error.
func mustParse(t *testing.T, name, doc string) *Template {
	t.Helper()
	tpl, err := Parse(configMap(name, doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tpl
}

// bindOne parses doc as the analysis name and binds its first metric with
// given and the builtins of a revision "abc123def0" of workload web in
// namespace shop.
func bindOne(t *testing.T, name, doc string, given map[string]string) Bound {
	t.Helper()
	bs, err := Bind([]*Template{mustParse(t, name, doc)}, given, testBuiltins)
	if err != nil {
		t.Fatalf("Bind: %v", err)
	}
	return bs[0]
}

// testBuiltins are the built-ins of the tests' revision.
var testBuiltins = Builtins{
	Workload: "web", Namespace: "shop", Service: "web-svc",
	Revision: 7, Hash: "abc123def0", StableHash: "0fedcba987",
}

// testRun is where the tests measure.
func testRun(index int) Run {
	return Run{
		Namespace: "shop", Workload: "web", Stage: "step 1", Index: index,
		Started: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Now:     time.Date(2026, 5, 1, 12, 0, 30, 0, time.UTC),
	}
}
