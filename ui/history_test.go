package ui

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"plimsoll.dev/plimsoll/strategies"
)

// TestKeepRecent drops entries older than the window and beyond the
// count, oldest first, but always keeps the last: it is the state now.
func TestKeepRecent(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(-d) }
	ages := []time.Time{at(3 * time.Hour), at(2 * time.Hour), at(30 * time.Minute), at(20 * time.Minute), at(time.Minute)}
	id := func(t time.Time) time.Time { return t }
	tests := []struct {
		name   string
		window time.Duration
		most   int
		want   int
	}{
		{"an hour", time.Hour, 10, 3},
		{"an hour, at most 2", time.Hour, 2, 2},
		{"a second: the last stays", time.Second, 10, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := keepRecent(append([]time.Time(nil), ages...), now, tt.window, tt.most, id)
			if len(got) != tt.want || !got[len(got)-1].Equal(ages[len(ages)-1]) {
				t.Errorf("kept %v, want the last %d", got, tt.want)
			}
		})
	}
}

// TestNoteRun keeps each measurement once (the run is written again for
// other reasons), a new run beside the old ones, at most runsKept of them
// and pointsPerMetric points a metric.
func TestNoteRun(t *testing.T) {
	start := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	run := func(stage string, at time.Time, value string) strategies.AnalysisRun {
		return strategies.AnalysisRun{Stage: stage, Hash: "h2", Started: start, Verdict: strategies.VerdictRunning,
			Metrics: []strategies.MetricRun{{Name: "error-rate/ratio", Value: value, Outcome: strategies.OutcomeSuccessful, At: at}}}
	}
	var runs []runHistory
	runs = noteRun(runs, run("step 1", time.Time{}, "")) // started, not measured yet
	runs = noteRun(runs, run("step 1", start.Add(time.Second), "0.001"))
	runs = noteRun(runs, run("step 1", start.Add(time.Second), "0.001"))
	runs = noteRun(runs, run("step 1", start.Add(2*time.Second), "0.002"))
	if len(runs) != 1 || len(runs[0].Points["error-rate/ratio"]) != 2 {
		t.Fatalf("runs %+v, want one run of 2 measurements", runs)
	}
	for i := range pointsPerMetric + 5 {
		runs = noteRun(runs, run("step 2", start.Add(time.Duration(i)*time.Second), "0.003"))
	}
	for i := range runsKept - 1 {
		runs = noteRun(runs, run("step "+string(rune('3'+i)), start, "0.004"))
	}
	if len(runs) != runsKept || runs[0].Stage != "step 2" {
		t.Fatalf("kept the runs of %v, want the last %d, from step 2", stages(runs), runsKept)
	}
	if n := len(runs[0].Points["error-rate/ratio"]); n != pointsPerMetric {
		t.Errorf("step 2 kept %d points, want %d", n, pointsPerMetric)
	}
}

func stages(runs []runHistory) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.Stage)
	}
	return out
}

// TestEndpointHistory records a Service's samples only while a workload
// steers it, and only when the counts change; a workload gone takes its
// Services' histories with it.
func TestEndpointHistory(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	h := newHistories(clk)
	four := endpointSample{Groups: []groupCount{{"stable", 4}}}
	h.noteEndpoints("ns/api", four)
	if h.steered("ns/api") || len(h.endpointHistory("ns/api")) != 0 {
		t.Fatal("a Service no workload steers has a history")
	}
	fresh := h.noteWorkload("ns/api", statusEntry{Revision: 1, Phase: "Healthy"}, nil, []string{"ns/api"})
	if len(fresh) != 1 || fresh[0] != "ns/api" {
		t.Fatalf("fresh = %v, want ns/api", fresh)
	}
	h.noteEndpoints("ns/api", four)
	h.noteEndpoints("ns/api", four)
	h.noteEndpoints("ns/api", endpointSample{Groups: []groupCount{{"canary", 1}, {"stable", 3}}})
	if got := h.endpointHistory("ns/api"); len(got) != 2 {
		t.Errorf("samples %+v, want 2 (a repeat is no change)", got)
	}
	if again := h.noteWorkload("ns/api", statusEntry{Revision: 1, Phase: "Healthy"}, nil, []string{"ns/api"}); len(again) != 0 {
		t.Errorf("a steered Service started again: %v", again)
	}
	if statuses, _ := h.workloadHistory("ns/api"); len(statuses) != 1 {
		t.Errorf("statuses %+v, want 1 (the same status again is no change)", statuses)
	}
	h.forgetWorkload("ns/api")
	if h.steered("ns/api") {
		t.Error("the Service of a workload gone is still followed")
	}
}
