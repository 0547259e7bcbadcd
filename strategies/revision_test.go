package strategies

import "testing"

func TestDecideRevision(t *testing.T) {
	const (
		h3 = "5d9f01c2aa" // revision 3
		h4 = "7c4e1a2b9f" // revision 4, fails
		h5 = "0b3e66d1c8" // the fix
	)
	tests := []struct {
		name     string
		recorded Status
		desired  string
		want     RevisionDecision
	}{
		{
			name:     "first rollout: 0 -> 1",
			recorded: Status{},
			desired:  h3,
			want:     RevisionDecision{Action: RevisionNew, Revision: 1},
		},
		{
			name:     "same hash (replicas or metadata changed): stays at 3",
			recorded: Status{Revision: 3, Hash: h3, Phase: PhaseHealthy},
			desired:  h3,
			want:     RevisionDecision{Action: RevisionSame, Revision: 3},
		},
		{
			name:     "new hash: 3 -> 4",
			recorded: Status{Revision: 3, Hash: h3, Phase: PhaseHealthy},
			desired:  h4,
			want:     RevisionDecision{Action: RevisionNew, Revision: 4},
		},
		{
			name:     "failed hash is refused, even though it is the recorded hash",
			recorded: Status{Revision: 4, Hash: h4, FailedHash: h4, Phase: PhaseDegraded},
			desired:  h4,
			want:     RevisionDecision{Action: RevisionRefused, Revision: 4},
		},
		{
			name:     "Git goes back to a template that failed earlier: refused, revision 5 stays",
			recorded: Status{Revision: 5, Hash: h5, FailedHash: h4, Phase: PhaseHealthy},
			desired:  h4,
			want:     RevisionDecision{Action: RevisionRefused, Revision: 5},
		},
		{
			name:     "a fix after a failure: 4 -> 5",
			recorded: Status{Revision: 4, Hash: h4, FailedHash: h4, Phase: PhaseDegraded},
			desired:  h5,
			want:     RevisionDecision{Action: RevisionNew, Revision: 5},
		},
		{
			name:     "retry clears the failed hash: revision 4 again",
			recorded: Retry(Status{Revision: 4, Hash: h4, FailedHash: h4, Phase: PhaseDegraded}),
			desired:  h4,
			want:     RevisionDecision{Action: RevisionSame, Revision: 4},
		},
		{
			name:     "retry after Git moved back to the failed template: a new revision",
			recorded: Retry(Status{Revision: 5, Hash: h5, FailedHash: h4, Phase: PhaseHealthy}),
			desired:  h4,
			want:     RevisionDecision{Action: RevisionNew, Revision: 6},
		},
		{
			name:     "hash recorded without a revision: same template counts as 1",
			recorded: Status{Hash: h3},
			desired:  h3,
			want:     RevisionDecision{Action: RevisionSame, Revision: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideRevision(tt.recorded, tt.desired); got != tt.want {
				t.Errorf("DecideRevision = {%s %d}, want {%s %d}", got.Action, got.Revision, tt.want.Action, tt.want.Revision)
			}
		})
	}
}

// TestRevisionCommit: the commit recorded is that of the revision. At
// revision 3 (hash h3) from commit a1b2c3d, a commit that keeps h3 keeps
// a1b2c3d; one that brings a new template records itself; the failed
// template keeps what was recorded; a status without a commit takes it.
func TestRevisionCommit(t *testing.T) {
	recorded := Status{Revision: 3, Hash: "h3", FailedHash: "h9", Commit: "a1b2c3d"}
	tests := []struct {
		name     string
		recorded Status
		hash     string
		want     string
	}{
		{"same template", recorded, "h3", "a1b2c3d"},
		{"new template", recorded, "h4", "e4f5a6b"},
		{"failed template", recorded, "h9", "a1b2c3d"},
		{"nothing recorded", Status{Revision: 3, Hash: "h3"}, "h3", "e4f5a6b"},
	}
	for _, tt := range tests {
		if got := RevisionCommit(tt.recorded, tt.hash, "e4f5a6b"); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
		if st, _ := TakeRevision(tt.recorded, tt.hash, "e4f5a6b"); st.Commit != tt.want {
			t.Errorf("%s: TakeRevision records commit %s, want %s", tt.name, st.Commit, tt.want)
		}
	}
}
