package sync

import (
	"context"
	"fmt"
	"testing"

	"plimsoll.dev/plimsoll/sync/source"
)

// TestJudgeRewind: with rewinds held, a branch head that descends from
// the applied commit goes on; any other is held until a person accepts
// exactly it, whether the history says it does not descend or cannot
// tell.
func TestJudgeRewind(t *testing.T) {
	const (
		applied = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"
		head    = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
		later   = "2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e"
	)
	unknown := fmt.Errorf("check whether 1a2b3c4 descends from 9f8e7d6: %w: commit 0123456 is not in the local clone", source.ErrAncestryUnknown)
	tests := []struct {
		name     string
		descends bool
		unknown  error
		accept   string
		want     rewindVerdict
	}{
		{name: "a descendant goes on", descends: true, want: rewindVerdict{}},
		{name: "a descendant goes on whatever is accepted", descends: true, accept: later, want: rewindVerdict{}},
		{
			name: "a rewind is held",
			want: rewindVerdict{hold: true, reason: "it does not descend from the applied commit 9f8e7d6 (the branch was rewound or force-pushed)"},
		},
		{name: "a rewind accepted by its full hash goes on", accept: head, want: rewindVerdict{accepted: true}},
		{name: "a rewind accepted by its short hash, in capitals, goes on", accept: " 1A2B3C4 ", want: rewindVerdict{accepted: true}},
		{
			name: "an acceptance shorter than 7 digits accepts nothing", accept: "1a2b3c",
			want: rewindVerdict{hold: true, reason: "it does not descend from the applied commit 9f8e7d6 (the branch was rewound or force-pushed); plimsoll.dev/accept-rewind names 1a2b3c, not this commit"},
		},
		{
			name: "the acceptance of another commit (pushed on since) accepts nothing", accept: later,
			want: rewindVerdict{hold: true, reason: "it does not descend from the applied commit 9f8e7d6 (the branch was rewound or force-pushed); plimsoll.dev/accept-rewind names " + later + ", not this commit"},
		},
		{
			name: "an ancestry that cannot be told is held, saying why", unknown: unknown,
			want: rewindVerdict{hold: true, reason: "cannot tell whether it descends from the applied commit 9f8e7d6: " + unknown.Error()},
		},
		{name: "an ancestry that cannot be told, accepted, goes on", unknown: unknown, accept: head, want: rewindVerdict{accepted: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeRewind(head, applied, tt.descends, tt.unknown, tt.accept); got != tt.want {
				t.Errorf("judgeRewind = %+v\nwant         %+v", got, tt.want)
			}
		})
	}
}

// countingSource answers Descends from a table and counts the questions.
type countingSource struct {
	Source
	descends map[[2]string]bool
	asked    int
}

func (c *countingSource) Descends(_ context.Context, commit, ancestor string) (bool, error) {
	c.asked++
	return c.descends[[2]string{commit, ancestor}], nil
}

// TestDescendsAskedOncePerPair: a held head is judged at every poll, but
// its history is walked once; a new head or a new applied commit is asked
// about again.
func TestDescendsAskedOncePerPair(t *testing.T) {
	src := &countingSource{descends: map[[2]string]bool{{"b", "a"}: true}}
	s := New(Config{Source: src})
	for _, q := range []struct {
		commit, applied string
		want            bool
		asked           int
	}{
		{"c", "a", false, 1},
		{"c", "a", false, 1},
		{"b", "a", true, 2},
		{"b", "a", true, 2},
		{"c", "a", false, 3},
	} {
		got, err := s.descends(context.Background(), q.commit, q.applied)
		if err != nil || got != q.want || src.asked != q.asked {
			t.Fatalf("descends(%s, %s) = %v, %v after %d questions; want %v after %d", q.commit, q.applied, got, err, src.asked, q.want, q.asked)
		}
	}
}
