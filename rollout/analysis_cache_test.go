package rollout

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/analysis"
	"plimsoll.dev/plimsoll/contract"
)

// TestJudgeReadsAnAnalysisTheCacheLacks: an analysis ConfigMap applied by
// the same commit as the workload that names it may not be in the cache
// when the workload is reconciled; it is read from the API server, not
// taken for a missing one. One that is missing there too, or not
// labelled as an analysis, is still an input error.
func TestJudgeReadsAnAnalysisTheCacheLacks(t *testing.T) {
	analysisCM := func(name string, labelled bool) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Data: map[string]string{"analysis.yaml": "metrics:\n- name: ok\n  web: {url: \"http://127.0.0.1:1/ok\", jsonPath: \"{$.ok}\"}\n  successCondition: result == true\n"}}
		if labelled {
			cm.Labels = map[string]string{contract.LabelAnalysis: "true"}
		}
		return cm
	}
	client := fake.NewClientset(analysisCM("fresh", true), analysisCM("plain", false))
	c := New(Config{Client: client})
	empty := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	c.views = map[string]view{"shop": {analyses: corelisters.NewConfigMapLister(empty)}}
	primary := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}}
	for _, tt := range []struct {
		name  string
		input bool
	}{{"fresh", false}, {"plain", true}, {"gone", true}} {
		_, err := c.judge(context.Background(), primary, map[string]string{contract.AnnotationAnalysis: tt.name}, nil, analysis.Builtins{Hash: "abc"})
		var in *inputError
		if got := errors.As(err, &in); got != tt.input {
			t.Errorf("analysis %s: error %v; want an input error %v", tt.name, err, tt.input)
		}
	}
}
