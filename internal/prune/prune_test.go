package prune

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAllowed lets a prune delete only what still carries its sync's
// label and is not marked plimsoll.dev/prune: disabled.
func TestAllowed(t *testing.T) {
	for _, tt := range []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		want        bool
	}{
		{"the sync's", map[string]string{"plimsoll.dev/sync": "apps"}, nil, true},
		{"another sync's", map[string]string{"plimsoll.dev/sync": "infra"}, nil, false},
		{"no sync's", nil, nil, false},
		{"prune disabled", map[string]string{"plimsoll.dev/sync": "apps"}, map[string]string{"plimsoll.dev/prune": "disabled"}, false},
		{"prune enabled", map[string]string{"plimsoll.dev/sync": "apps"}, map[string]string{"plimsoll.dev/prune": "enabled"}, true},
	} {
		live := &metav1.ObjectMeta{Labels: tt.labels, Annotations: tt.annotations}
		if got := Allowed(live, "apps"); got != tt.want {
			t.Errorf("%s: Allowed = %v, want %v", tt.name, got, tt.want)
		}
	}
}
