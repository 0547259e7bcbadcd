package sync

import (
	"slices"
	"testing"

	"plimsoll.dev/plimsoll/sync/inventory"
)

// TestWritable: a sync limited to namespaces plans (and so prunes) only the
// inventory entries in them; the others, a cluster-scoped one included,
// are left alone.
func TestWritable(t *testing.T) {
	inv := inventory.Inventory{}
	for _, e := range []inventory.Entry{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "a"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-b", Name: "b"},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-c", Name: "c"},
		{APIVersion: "v1", Kind: "Namespace", Name: "team-a"},
	} {
		inv[e.Key()] = e
	}
	tests := []struct {
		name       string
		namespaces []string
		want       []string
	}{
		{name: "unlimited", want: []string{"ConfigMap team-a/a", "ConfigMap team-b/b", "ConfigMap team-c/c", "Namespace team-a"}},
		{name: "limited", namespaces: []string{"team-a", "team-b"}, want: []string{"ConfigMap team-a/a", "ConfigMap team-b/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{Namespaces: tt.namespaces})
			var got []string
			for key := range s.writable(inv) {
				got = append(got, key.String())
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("writable entries %v, want %v", got, tt.want)
			}
		})
	}
}
