package rollout

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestNamespaces: a controller limited to namespaces refuses a Deployment
// of any other namespace before anything else; unlimited, it refuses none
// for its namespace.
func TestNamespaces(t *testing.T) {
	git := func(ns string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	}
	tests := []struct {
		name       string
		namespaces []string
		deployment string
		wantErr    string
	}{
		{name: "unlimited", deployment: "team-c"},
		{name: "a listed namespace", namespaces: []string{"team-a", "team-b"}, deployment: "team-b"},
		{name: "another namespace", namespaces: []string{"team-a", "team-b"}, deployment: "team-c",
			wantErr: `namespace "team-c" is not one the rollout controller watches`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{Client: fake.NewClientset(), Namespaces: tt.namespaces})
			if got, want := len(c.factories), 5*max(1, len(tt.namespaces)); got != want {
				t.Errorf("%d informer factories, want %d: five per watched namespace", got, want)
			}
			err := c.checkDeployment(context.Background(), "", git(tt.deployment), nil)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("checkDeployment: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("checkDeployment error %v, want %q", err, tt.wantErr)
			}
			if w := c.observe(tt.deployment, "web", nil); w.deployment("") != nil {
				t.Error("an empty cache holds Deployment web")
			}
		})
	}
}
