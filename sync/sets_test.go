package sync

import (
	"maps"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/sync/manifest"
)

// TestCheckSetStrategies refuses blue-green on a StatefulSet and a
// DaemonSet, naming the file, the document, the annotation and why; the
// other strategies, and blue-green on a Deployment, pass.
func TestCheckSetStrategies(t *testing.T) {
	obj := func(kind, strategy string, doc int) manifest.Object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apps/v1")
		u.SetKind(kind)
		u.SetNamespace("team")
		u.SetName("x")
		if strategy != "" {
			u.SetAnnotations(map[string]string{"plimsoll.dev/strategy": strategy})
		}
		return manifest.Object{Obj: u, Origin: manifest.Origin{File: "apps/" + strings.ToLower(kind) + ".yaml", Doc: doc}}
	}
	if err := checkSetStrategies([]manifest.Object{obj("StatefulSet", "rolling", 1), obj("DaemonSet", "canary", 1), obj("Deployment", "blue-green", 2), obj("StatefulSet", "", 1)}); err != nil {
		t.Fatalf("rolling, canary and a Deployment's blue-green: %v", err)
	}
	late := obj("StatefulSet", "", 3)
	late.Obj.SetAnnotations(map[string]string{"plimsoll.dev/progress-deadline": "ten minutes"})
	err := checkSetStrategies([]manifest.Object{obj("StatefulSet", "blue-green", 2), obj("DaemonSet", "blue-green", 1), late})
	for _, want := range []string{
		`apps/statefulset.yaml, document 2: field metadata.annotations["plimsoll.dev/strategy"]: StatefulSet team/x cannot be rolled out blue-green: a StatefulSet's pods own its ordinals and their volumes`,
		`apps/daemonset.yaml, document 1: field metadata.annotations["plimsoll.dev/strategy"]: DaemonSet team/x cannot be rolled out blue-green: a DaemonSet runs one pod on each node`,
		`apps/statefulset.yaml, document 3: field metadata.annotations["plimsoll.dev/progress-deadline"]: "ten minutes" is not a positive duration`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want %q", err, want)
		}
	}
}

// TestCheckCanarySet refuses a canary StatefulSet whose steps do not
// read, whose update strategy is OnDelete, or whose partition Git sets,
// and a canary DaemonSet at OnDelete, naming the file, the document and
// the field; a canary StatefulSet with steps and a RollingUpdate of its
// own passes.
func TestCheckCanarySet(t *testing.T) {
	obj := func(doc int, annotations map[string]string, strategy map[string]any) manifest.Object {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet",
			"metadata": map[string]any{"namespace": "team", "name": "db"}, "spec": map[string]any{"updateStrategy": strategy}}}
		a := map[string]string{"plimsoll.dev/strategy": "canary"}
		maps.Copy(a, annotations)
		u.SetAnnotations(a)
		return manifest.Object{Obj: u, Origin: manifest.Origin{File: "db.yaml", Doc: doc}}
	}
	ok := obj(1, map[string]string{"plimsoll.dev/steps": "25%, pause, 100%"}, map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": int64(1)}})
	if err := checkSetStrategies([]manifest.Object{ok}); err != nil {
		t.Fatalf("a canary StatefulSet with steps: %v", err)
	}
	agent := obj(5, nil, map[string]any{"type": "OnDelete"})
	agent.Obj.SetKind("DaemonSet")
	err := checkSetStrategies([]manifest.Object{
		obj(2, map[string]string{"plimsoll.dev/steps": "25%, pauze"}, nil),
		obj(3, nil, map[string]any{"type": "OnDelete"}),
		obj(4, nil, map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": int64(2)}}),
		agent,
	})
	for _, want := range []string{
		`db.yaml, document 2: field metadata.annotations["plimsoll.dev/steps"]: step 2 "pauze"`,
		`db.yaml, document 3: field spec.updateStrategy.type: StatefulSet team/db is rolled out by canary, which updates its ordinals by their partition: OnDelete has none`,
		`db.yaml, document 4: field spec.updateStrategy.rollingUpdate.partition: StatefulSet team/db is rolled out by canary, which sets its partition step by step`,
		`db.yaml, document 5: field spec.updateStrategy.type: DaemonSet team/db is rolled out by canary, which holds its nodes at OnDelete itself`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want %q", err, want)
		}
	}
}
