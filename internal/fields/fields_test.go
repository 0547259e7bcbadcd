package fields

import "testing"

// TestHold: a missing field holds a nil or zero want, as the API server
// leaves out the zero values it omits; a present field is compared.
func TestHold(t *testing.T) {
	live := map[string]any{
		"spec":     map[string]any{"revisionHistoryLimit": int64(10), "paused": true, "template": map[string]any{"labels": map[string]any{"app": "web"}}},
		"metadata": map[string]any{"annotations": map[string]any{}},
		"list":     []any{map[string]any{"port": int64(80)}},
	}
	for _, c := range []struct {
		name string
		want map[string]any
		hold bool
	}{
		{"minReadySeconds 0, omitted by the server", map[string]any{"spec": map[string]any{"minReadySeconds": int64(0)}}, true},
		{"0.0 as JSON decodes it", map[string]any{"spec": map[string]any{"minReadySeconds": float64(0)}}, true},
		{"false, empty string, {} and []", map[string]any{"spec": map[string]any{"x": false, "y": "", "z": map[string]any{}, "w": []any{}}}, true},
		{"null", map[string]any{"spec": map[string]any{"x": nil}}, true},
		{"a value the server keeps", map[string]any{"spec": map[string]any{"revisionHistoryLimit": 10}}, true},
		{"a missing non-zero value", map[string]any{"spec": map[string]any{"minReadySeconds": int64(5)}}, false},
		{"a present field set to zero", map[string]any{"spec": map[string]any{"revisionHistoryLimit": int64(0)}}, false},
		{"a present true set to false", map[string]any{"spec": map[string]any{"paused": false}}, false},
		{"a zero inside a missing map", map[string]any{"spec": map[string]any{"strategy": map[string]any{"type": "RollingUpdate"}}}, false},
		{"an empty label, which the server keeps", map[string]any{"spec": map[string]any{"template": map[string]any{"labels": map[string]any{"app": "web", "tier": ""}}}}, false},
		{"an empty annotation", map[string]any{"metadata": map[string]any{"annotations": map[string]any{"note": ""}}}, false},
		{"a zero field of a list's element", map[string]any{"list": []any{map[string]any{"port": int64(80), "hostPort": int64(0)}}}, true},
	} {
		if got := Hold(live, c.want); got != c.hold {
			t.Errorf("%s: Hold = %v, want %v", c.name, got, c.hold)
		}
	}
}
