package strategies

import "testing"

// TestPodOf tells the pods of Deployment web from those of web-blue and
// web-canary, whose names start with "web-" too.
func TestPodOf(t *testing.T) {
	tests := []struct {
		name, pod, deploy string
		want              bool
	}{
		{"pod of web", "web-7d9c556656-w9rcx", "web", true},
		{"pod of web-blue is not web's", "web-blue-7d9c556656-w9rcx", "web", false},
		{"pod of web-canary is not web's", "web-canary-64d88b9c4c-2x69t", "web", false},
		{"pod of web-blue", "web-blue-7d9c556656-w9rcx", "web-blue", true},
		{"pod of another workload", "webshop-7d9c556656-w9rcx", "web", false},
		{"no suffix", "web-7d9c556656", "web", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodOf(tt.pod, tt.deploy); got != tt.want {
				t.Errorf("PodOf(%q, %q) = %v, want %v", tt.pod, tt.deploy, got, tt.want)
			}
		})
	}
}
