package strategies

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

func TestRollbackTarget(t *testing.T) {
	live := deployment(v4)
	rs9 := replicaSet("web-99999", "9", v1, "", "")
	rs10 := replicaSet("web-10101", "10", v3, "", "")
	noRevision := replicaSet("web-00000", "", v5, "", "")
	other := replicaSet("other-55555", "11", v5, "", "")
	other.OwnerReferences[0].UID = "another-deployment"
	deleting := replicaSet("web-88888", "12", v5, "", "")
	deleting.DeletionTimestamp = &live.CreationTimestamp
	sameRevisionA := replicaSet("web-aaaaa", "7", v1, "", "")
	sameRevisionB := replicaSet("web-bbbbb", "7", v3, "", "")

	// rs1Again is revision 1's template restored after an older failure:
	// the Deployment controller gave it a newer revision than rs9.
	rs1Again := replicaSet("web-11112", "11", v1, "", "")

	tests := []struct {
		name        string
		replicaSets []*appsv1.ReplicaSet
		stable      string
		exclude     []string
		want        *appsv1.ReplicaSet
	}{
		{"revisions compare as numbers: 10 is newer than 9", []*appsv1.ReplicaSet{rs10, rs9, rs4}, "", []string{h4}, rs10},
		{"the failing template is skipped", []*appsv1.ReplicaSet{rs9, rs4}, "", []string{h4}, rs9},
		{"every excluded hash is skipped", []*appsv1.ReplicaSet{rs9, rs10, rs4}, "", []string{h4, h3}, rs9},
		{"an empty exclusion excludes nothing", []*appsv1.ReplicaSet{rs9, rs4}, "", []string{h4, ""}, rs9},
		{"a ReplicaSet without a revision counts as the oldest", []*appsv1.ReplicaSet{noRevision, rs9}, "", []string{h4}, rs9},
		{"only a ReplicaSet without a revision", []*appsv1.ReplicaSet{noRevision}, "", []string{h4}, noRevision},
		{"ReplicaSets of another Deployment are ignored", []*appsv1.ReplicaSet{other, rs9}, "", []string{h4}, rs9},
		{"ReplicaSets being deleted are ignored", []*appsv1.ReplicaSet{deleting, rs9}, "", []string{h4}, rs9},
		{"equal revisions: the greater name, whatever the order", []*appsv1.ReplicaSet{sameRevisionB, sameRevisionA}, "", []string{h4}, sameRevisionB},
		{"nothing left", []*appsv1.ReplicaSet{rs4}, "", []string{h4}, nil},
		{"no ReplicaSets", nil, "", []string{h4}, nil},
		// Revision 3 (rs10) was replaced before it was ever Healthy.
		{"the stable template before a newer one", []*appsv1.ReplicaSet{rs10, rs9, rs4}, h1, []string{h4}, rs9},
		{"the stable template at its newest ReplicaSet", []*appsv1.ReplicaSet{rs9, rs1Again, rs10, rs4}, h1, []string{h4}, rs1Again},
		{"a stable template without a ReplicaSet: the newest", []*appsv1.ReplicaSet{rs10, rs4}, h1, []string{h4}, rs10},
		{"a stable template excluded as failed: the newest other", []*appsv1.ReplicaSet{rs9, rs10, rs4}, h1, []string{h4, h1}, rs10},
		{"the stable ReplicaSet being deleted: the newest other", []*appsv1.ReplicaSet{deleting, rs9}, h5, []string{h4}, rs9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rollbackTarget(live, tt.replicaSets, tt.stable, tt.exclude...)
			if got != tt.want {
				name := func(rs *appsv1.ReplicaSet) string {
					if rs == nil {
						return "none"
					}
					return rs.Name
				}
				t.Errorf("rollbackTarget = %s, want %s", name(got), name(tt.want))
			}
		})
	}
}
