package strategies

import (
	"strings"
	"testing"
)

// TestApplyCommand applies every command to a rollout held at revision 4,
// Degraded with its template failed and a verification inconclusive, on a
// rolling workload and on a progressive one: the same rules for both, but
// promote and abort, which a progressive planner decides at its stage and
// a rolling workload decides on its verification at once.
func TestApplyCommand(t *testing.T) {
	failed := Status{Phase: PhaseDegraded, Revision: 4, Hash: h4, FailedHash: h4, Commit: commitV4, Message: "revision 4 failed"}
	inconclusive := &AnalysisRun{Stage: StagePostPromotion, Hash: h4, Verdict: VerdictInconclusive,
		Metrics: []MetricRun{{Name: "errors", Verdict: VerdictInconclusive}}}
	held := Held{Status: failed, Paused: false, Run: inconclusive}

	tests := []struct {
		command     string
		progressive bool
		paused      bool
		failedHash  string // after the command
		verdict     Verdict
		promote     bool
		abort       bool
		did         string // a part of Describe("")
	}{
		{"pause", false, true, h4, VerdictInconclusive, false, false, "paused"},
		{"pause", true, true, h4, VerdictInconclusive, false, false, "paused"},
		{" resume\n", true, false, h4, VerdictInconclusive, false, false, "nothing to resume: the rollout is not paused"},
		{"retry", false, false, "", "", false, false, "the Git template goes out again"},
		{"retry", true, false, "", "", false, false, "the Git template goes out again"},
		{"promote", false, false, h4, VerdictSuccessful, false, false, "accepted the verification of revision 4"},
		{"abort", false, false, h4, VerdictFailed, false, false, "failed the verification of revision 4"},
		{"promote", true, false, h4, VerdictInconclusive, true, false, "nothing to promote"},
		{"abort", true, false, h4, VerdictInconclusive, false, true, "nothing to abort"},
		{"rollback", true, false, h4, VerdictInconclusive, false, false, `ignored unknown command "rollback"`},
		{"rollback", false, false, h4, VerdictInconclusive, false, false, `ignored unknown command "rollback"`},
	}
	for _, tt := range tests {
		name := strings.TrimSpace(tt.command)
		if tt.progressive {
			name += ", progressive"
		}
		t.Run(name, func(t *testing.T) {
			got := ApplyCommand(tt.command, held, tt.progressive)
			if got.Name != strings.TrimSpace(tt.command) {
				t.Errorf("name %q, want it trimmed", got.Name)
			}
			if got.Held.Paused != tt.paused || got.Held.Status.FailedHash != tt.failedHash {
				t.Errorf("paused %v, failed hash %q; want %v, %q", got.Held.Paused, got.Held.Status.FailedHash, tt.paused, tt.failedHash)
			}
			var verdict Verdict
			if got.Held.Run != nil {
				verdict = got.Held.Run.Verdict
			}
			if verdict != tt.verdict {
				t.Errorf("run verdict %q, want %q", verdict, tt.verdict)
			}
			if got.Promote != tt.promote || got.Abort != tt.abort {
				t.Errorf("for the planner: promote %v, abort %v; want %v, %v", got.Promote, got.Abort, tt.promote, tt.abort)
			}
			if d := got.Describe(""); !strings.Contains(d, tt.did) {
				t.Errorf("Describe = %q, want it to say %q", d, tt.did)
			}
			if held.Run.Verdict != VerdictInconclusive || held.Status.FailedHash != h4 {
				t.Error("the command changed what it was given")
			}
		})
	}

	// A planner's account of a promote is the Event's.
	if d := ApplyCommand("promote", held, true).Describe("promoted fully"); d != "promoted fully" {
		t.Errorf("Describe = %q, want the planner's account", d)
	}
	// No command does nothing.
	if got := ApplyCommand("", held, true); got.Name != "" || got.Held != held || got.Describe("") != "" {
		t.Errorf("no command gave %+v", got)
	}
	// A decided run is not decided again: nothing to promote on rolling.
	decided := Held{Status: failed, Run: &AnalysisRun{Hash: h4, Verdict: VerdictSuccessful}}
	if d := ApplyCommand("promote", decided, false).Describe(""); !strings.Contains(d, "nothing to promote") {
		t.Errorf("Describe = %q, want nothing to promote", d)
	}
}

// TestDescribe: the Event of a command says what ApplyCommand did, else
// what the planner did; a pause the planner went through (a canary's
// hand-over) says both, a promote that lifted a pause says so first.
func TestDescribe(t *testing.T) {
	healthy := Held{Status: Status{Phase: PhaseHealthy, Revision: 4, Hash: h4}}
	paused := healthy
	paused.Paused = true
	tests := []struct {
		command string
		held    Held
		acted   string
		want    string
	}{
		{"pause", healthy, "revision 4 is being promoted: its hand-over finishes first",
			"paused; revision 4 is being promoted: its hand-over finishes first"},
		{"pause", healthy, "", "paused"},
		{"resume", paused, "revision 4 is being promoted: its hand-over finishes first", "resumed"},
		{"promote", paused, "moved on from step 2/5", "lifted the pause; moved on from step 2/5"},
		{"promote", healthy, "", "nothing to promote"},
		{"abort", healthy, "aborted revision 4", "aborted revision 4"},
	}
	for _, tt := range tests {
		if got := ApplyCommand(tt.command, tt.held, true).Describe(tt.acted); got != tt.want {
			t.Errorf("%s (paused %v), the planner having %q: %q, want %q", tt.command, tt.held.Paused, tt.acted, got, tt.want)
		}
	}
}
