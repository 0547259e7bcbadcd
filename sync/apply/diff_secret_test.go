package apply

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plimsoll.dev/plimsoll/sync/manifest"
)

func secretObj(ann string, data map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "namespace": "app"},
		"data":     data,
	}}
	if ann != "" {
		obj.SetAnnotations(map[string]string{lastApplied: ann})
	}
	return obj
}

func TestDiffObjectsHidesSecretValues(t *testing.T) {
	key := manifest.Key{Kind: "Secret", Namespace: "app", Name: "db"}
	before := secretObj(`{"data":{"password":"b2xkLXZhbHVl"}}`, map[string]any{"password": "b2xkLXZhbHVl", "user": "YXBw", "gone": "Z29uZS12YWx1ZQ=="})
	after := secretObj("", map[string]any{"password": "bmV3LXZhbHVl", "user": "YXBw", "added": "YWRkZWQtdmFsdWU="})
	d, err := DiffObjects(key, before, after)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"b2xkLXZhbHVl", "bmV3LXZhbHVl", "YXBw", "Z29uZS12YWx1ZQ==", "YWRkZWQtdmFsdWU="} {
		if strings.Contains(d, secret) {
			t.Errorf("the diff shows the value %s:\n%s", secret, d)
		}
	}
	for _, want := range []string{
		"-  password: '" + SecretValueBefore + "'",
		"+  password: '" + SecretValueAfter + "'",
		"   user: '" + SecretValueMarker + "'",
		"-  gone: '" + SecretValueBefore + "'",
		"+  added: '" + SecretValueAfter + "'",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("the diff lacks %q:\n%s", want, d)
		}
	}
	if before.Object["data"].(map[string]any)["password"] != "b2xkLXZhbHVl" {
		t.Error("the diff changed the object it was given")
	}
	// The same values: no diff at all.
	same, err := DiffObjects(key, secretObj("", map[string]any{"a": "eA=="}), secretObj("", map[string]any{"a": "eA=="}))
	if err != nil || same != "" {
		t.Errorf("same Secret diffed to %q, %v", same, err)
	}
	// A Secret created or pruned shows its keys, not its values.
	created, err := DiffObjects(key, nil, after)
	if err != nil || strings.Contains(created, "bmV3LXZhbHVl") || !strings.Contains(created, "+  password: '"+SecretValueAfter+"'") {
		t.Errorf("created Secret diffed to %q, %v", created, err)
	}
	// Other kinds keep their values.
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"k": "shown"}}}
	shown, err := DiffObjects(manifest.Key{Kind: "ConfigMap", Name: "c"}, nil, cm)
	if err != nil || !strings.Contains(shown, "k: shown") {
		t.Errorf("ConfigMap diffed to %q, %v", shown, err)
	}
}
