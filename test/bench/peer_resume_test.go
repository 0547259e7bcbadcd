//go:build bench

package bench

import "testing"

// TestResumeKeepsSameVersions checks what a resumed comparison keeps: the
// runs of the size asked that the tools made at their present versions.
// A run of plimsoll built from another commit is dropped, and so is every
// run at that size when the comparison is not resumed; another size is
// left alone.
func TestResumeKeepsSameVersions(t *testing.T) {
	now := map[string]string{toolPlimsoll: "plimsoll b", toolArgo: "Argo Rollouts v1", toolFlux: "flux v1"}
	fill := func() *peerResults {
		return &peerResults{
			Rollout: []rolloutRecord{
				{Label: toolPlimsoll, Binary: "plimsoll a", N: 100, Run: 1},
				{Label: toolPlimsoll, Binary: "plimsoll b", N: 100, Run: 2},
				{Label: toolArgo, Binary: "Argo Rollouts v1", N: 100, Run: 1},
				{Label: toolPlimsoll, Binary: "plimsoll a", N: 300, Run: 1},
			},
			Peers: []peerRecord{
				{Part: "sync", Tool: toolFlux, Version: "flux v1", N: 1000, Run: 1},
				{Part: "sync", Tool: toolPlimsoll, Version: "plimsoll a", N: 1000, Run: 1},
				{Part: "scale", Tool: toolFlux, Version: "flux v1", N: 1000, Run: 1},
			},
		}
	}

	r := fill()
	r.dropRollout(100, now)
	r.drop("sync", 1000, now)
	for _, c := range []struct {
		name string
		got  bool
		want bool
	}{
		{"plimsoll's run 1 at N=100, another commit", r.hasRollout(toolPlimsoll, 100, 1), false},
		{"plimsoll's run 2 at N=100, this commit", r.hasRollout(toolPlimsoll, 100, 2), true},
		{"Argo's run 1 at N=100, same version", r.hasRollout(toolArgo, 100, 1), true},
		{"plimsoll's run 1 at N=300, not asked", r.hasRollout(toolPlimsoll, 300, 1), true},
		{"Flux's sync run 1, same version", r.has("sync", toolFlux, 1000, 1), true},
		{"plimsoll's sync run 1, another commit", r.has("sync", toolPlimsoll, 1000, 1), false},
		{"Flux's scale run 1, another part", r.has("scale", toolFlux, 1000, 1), true},
	} {
		if c.got != c.want {
			t.Errorf("resumed: %s recorded = %v, want %v", c.name, c.got, c.want)
		}
	}

	r = fill()
	r.dropRollout(100, nil)
	r.drop("sync", 1000, nil)
	if r.hasRollout(toolPlimsoll, 100, 2) || r.hasRollout(toolArgo, 100, 1) || r.has("sync", toolFlux, 1000, 1) {
		t.Errorf("not resumed: runs at the sizes asked survived: %+v %+v", r.Rollout, r.Peers)
	}
	if !r.hasRollout(toolPlimsoll, 300, 1) || !r.has("scale", toolFlux, 1000, 1) {
		t.Errorf("not resumed: runs at other sizes or parts were dropped: %+v %+v", r.Rollout, r.Peers)
	}
}
