package strategies

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestReadyPods(t *testing.T) {
	yes, no := true, false
	endpoint := func(kind, name string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{TargetRef: &corev1.ObjectReference{Kind: kind, Name: name}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	}
	tests := []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
		want   []string
	}{
		{name: "no slice"},
		{name: "ready, not ready and no condition", slices: []*discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{
			endpoint("Pod", "web-b", &yes), endpoint("Pod", "web-c", &no), endpoint("Pod", "web-a", nil)}}},
			want: []string{"web-a", "web-b"}},
		{name: "a pod in two slices counts once, sorted", slices: []*discoveryv1.EndpointSlice{
			{Endpoints: []discoveryv1.Endpoint{endpoint("Pod", "web-b", &yes)}},
			{Endpoints: []discoveryv1.Endpoint{endpoint("Pod", "web-a", &yes), endpoint("Pod", "web-b", &yes)}}},
			want: []string{"web-a", "web-b"}},
		{name: "not a pod, or no target", slices: []*discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{
			endpoint("Node", "n1", &yes), {Conditions: discoveryv1.EndpointConditions{Ready: &yes}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReadyPods(tt.slices); !slices.Equal(got, tt.want) {
				t.Errorf("ReadyPods = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestUnneeded: web-blue's pods may go once the endpoints hold none of
// them, or hold keep (4) pods of another Deployment beside them.
func TestUnneeded(t *testing.T) {
	blue := []string{"web-blue-7d9c5-a", "web-blue-7d9c5-b", "web-blue-7d9c5-c", "web-blue-7d9c5-d"}
	web := []string{"web-6f8b4-a", "web-6f8b4-b", "web-6f8b4-c", "web-6f8b4-d"}
	for _, tc := range []struct {
		name  string
		ready []string
		want  bool
	}{
		{"only web-blue's pods: needed", blue, false},
		{"web-blue's and 3 of web's: needed", append(slices.Clone(blue), web[:3]...), false},
		{"web-blue's and web's 4: unneeded", append(slices.Clone(blue), web...), true},
		{"web's alone: unneeded", web, true},
		{"no endpoints: unneeded", nil, true},
	} {
		if got := Unneeded(tc.ready, "web-blue", 4); got != tc.want {
			t.Errorf("%s: Unneeded = %v, want %v", tc.name, got, tc.want)
		}
	}
}
