package apply

import (
	"testing"

	"sigs.k8s.io/yaml"
)

func TestInSync(t *testing.T) {
	tests := []struct {
		name    string
		live    string
		desired string
		want    bool
	}{
		{
			name:    "live has every desired field plus defaults",
			live:    "kind: Service\nspec:\n  ports:\n  - port: 80\n    protocol: TCP\n  type: ClusterIP\n",
			desired: "kind: Service\nspec:\n  ports:\n  - port: 80\n",
			want:    true,
		},
		{
			name:    "a value changed by hand",
			live:    "kind: ConfigMap\ndata:\n  color: red\n",
			desired: "kind: ConfigMap\ndata:\n  color: blue\n",
			want:    false,
		},
		{
			name:    "a desired key removed by hand",
			live:    "kind: ConfigMap\ndata:\n  a: \"1\"\n",
			desired: "kind: ConfigMap\ndata:\n  a: \"1\"\n  b: \"2\"\n",
			want:    false,
		},
		{
			name:    "an extra label added by hand is not drift",
			live:    "metadata:\n  labels:\n    app: web\n    team: x\n",
			desired: "metadata:\n  labels:\n    app: web\n",
			want:    true,
		},
		{
			name:    "a list element added by hand",
			live:    "spec:\n  ports:\n  - port: 80\n  - port: 81\n",
			desired: "spec:\n  ports:\n  - port: 80\n",
			want:    false,
		},
		{
			name:    "integer and float of the same value",
			live:    "spec:\n  replicas: 3\n",
			desired: "spec:\n  replicas: 3.0\n",
			want:    true,
		},
		{
			name:    "number against string",
			live:    "spec:\n  port: \"80\"\n",
			desired: "spec:\n  port: 80\n",
			want:    false,
		},
		{
			name:    "desired null matches a missing field",
			live:    "metadata:\n  name: x\n",
			desired: "metadata:\n  name: x\n  creationTimestamp: null\n",
			want:    true,
		},
		{
			name:    "a DaemonSet's minReadySeconds: 0, which the server does not store",
			live:    "kind: DaemonSet\nspec:\n  revisionHistoryLimit: 10\n",
			desired: "kind: DaemonSet\nspec:\n  minReadySeconds: 0\n",
			want:    true,
		},
		{
			name:    "an empty annotation removed by hand",
			live:    "metadata:\n  annotations:\n    a: x\n",
			desired: "metadata:\n  annotations:\n    a: x\n    b: \"\"\n",
			want:    false,
		},
		{
			name:    "status is never drift",
			live:    "status:\n  phase: Active\n",
			desired: "status:\n  phase: Terminating\n",
			want:    true,
		},
		{
			name:    "a map replaced by a scalar",
			live:    "data: oops\n",
			desired: "data:\n  a: b\n",
			want:    false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := InSync(decode(t, tt.live), decode(t, tt.desired)); got != tt.want {
				t.Errorf("InSync(live, desired) = %v, want %v\nlive:\n%s\ndesired:\n%s", got, tt.want, tt.live, tt.desired)
			}
		})
	}
}

func TestHashIgnoresKeyOrder(t *testing.T) {
	a := decode(t, "kind: ConfigMap\nmetadata:\n  name: x\n  namespace: y\ndata:\n  k: v\n")
	b := decode(t, "data:\n  k: v\nmetadata:\n  namespace: y\n  name: x\nkind: ConfigMap\n")
	c := decode(t, "kind: ConfigMap\nmetadata:\n  name: x\n  namespace: y\ndata:\n  k: w\n")
	ha, hb, hc := mustHash(t, a), mustHash(t, b), mustHash(t, c)
	if ha != hb {
		t.Errorf("same object in another key order: hash %s, then %s", ha, hb)
	}
	if ha == hc {
		t.Errorf("changed data gave the same hash %s", ha)
	}
	if len(ha) != 2*hashBytes {
		t.Errorf("hash %q has %d characters, want %d", ha, len(ha), 2*hashBytes)
	}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return m
}

func mustHash(t *testing.T, obj map[string]any) string {
	t.Helper()
	h, err := Hash(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestStateDigest compares a DaemonSet as the plan listed it (no status,
// no managed fields, resourceVersion 7) with what an apply returns: the
// same once its controller has only reported its pods (resourceVersion
// 9, a status, a managed-fields entry for it), another once the apply
// changed a label or the spec.
func TestStateDigest(t *testing.T) {
	listed := map[string]any{
		"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": map[string]any{"name": "agent", "namespace": "web", "resourceVersion": "7", "generation": int64(1),
			"labels": map[string]any{"app": "agent"}},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "agent"}}},
	}
	applied := func(edit func(obj map[string]any)) map[string]any {
		obj := map[string]any{
			"apiVersion": "apps/v1", "kind": "DaemonSet",
			"metadata": map[string]any{"name": "agent", "namespace": "web", "resourceVersion": "9", "generation": int64(1),
				"labels":        map[string]any{"app": "agent"},
				"managedFields": []any{map[string]any{"manager": "kube-controller-manager", "subresource": "status"}}},
			"spec":   map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "agent"}}},
			"status": map[string]any{"numberReady": int64(3)},
		}
		if edit != nil {
			edit(obj)
		}
		return obj
	}
	want := stateDigest(listed)
	if want == "" {
		t.Fatal("no digest of the listed DaemonSet")
	}
	for _, tt := range []struct {
		name string
		edit func(obj map[string]any)
		same bool
	}{
		{name: "status reported", same: true},
		{name: "label changed", edit: func(obj map[string]any) {
			obj["metadata"].(map[string]any)["labels"] = map[string]any{"app": "agent", "tier": "node"}
		}},
		{name: "spec changed", edit: func(obj map[string]any) {
			obj["metadata"].(map[string]any)["generation"] = int64(2)
			obj["spec"].(map[string]any)["minReadySeconds"] = int64(5)
		}},
	} {
		obj := applied(tt.edit)
		if got := stateDigest(obj) == want; got != tt.same {
			t.Errorf("%s: same state = %v, want %v", tt.name, got, tt.same)
		}
		if _, ok := obj["status"]; !ok {
			t.Errorf("%s: stateDigest dropped the status of the object it was given", tt.name)
		}
	}
}
