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
