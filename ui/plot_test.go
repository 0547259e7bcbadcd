package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"plimsoll.dev/plimsoll/strategies"
)

// TestThresholdOf finds the number a simple condition compares result
// with, either way round, and none in anything else.
func TestThresholdOf(t *testing.T) {
	tests := []struct {
		cond string
		want float64
		ok   bool
	}{
		{"result < 0.01", 0.01, true},
		{" result >= 0.05 ", 0.05, true},
		{"0.5 <= result", 0.5, true},
		{"result == 1e-3", 0.001, true},
		{"result == true", 0, false},
		{"all(result, {# < 0.01})", 0, false},
		{"result < 0.01 && result > 0", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		if got, ok := thresholdOf(tt.cond); got != tt.want || ok != tt.ok {
			t.Errorf("thresholdOf(%q) = %v, %v; want %v, %v", tt.cond, got, ok, tt.want, tt.ok)
		}
	}
}

// TestMeasurementsPlot draws three measurements of an error ratio against
// "result < 0.01" and "result >= 0.05": the failure line above the
// success line, a successful point below the success line, a failed one
// above the failure line, and an error with no value at the bottom.
func TestMeasurementsPlot(t *testing.T) {
	start := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	points := []measurement{
		{At: start.Add(10 * time.Second), Value: "0.004", Outcome: strategies.OutcomeSuccessful},
		{At: start.Add(20 * time.Second), Outcome: strategies.OutcomeError, Message: "query returned no data"},
		{At: start.Add(30 * time.Second), Value: "0.08", Outcome: strategies.OutcomeFailed},
	}
	p := measurementsPlot("run step 1/x", "error-rate/ratio", points, "result < 0.01", "result >= 0.05", start)
	if p.Empty || len(p.Marks) != 3 || len(p.Rules) != 2 || p.ID != "run-step-1-x" {
		t.Fatalf("plot %+v, want 3 marks, 2 rules and an id of letters, digits and hyphens", p)
	}
	success, failure := p.Rules[0], p.Rules[1]
	if success.Class != "rule-success" || failure.Class != "rule-failure" || !(failure.Y < success.Y) {
		t.Errorf("rules %+v: want the failure line (0.05) above the success line (0.01)", p.Rules)
	}
	ok, errored, failed := p.Marks[0], p.Marks[1], p.Marks[2]
	if !(ok.Y > success.Y) || !(failed.Y < failure.Y) || errored.Y != plotHeight-plotBottom {
		t.Errorf("marks %+v: want the successful point under the success line, the failed one over the failure line, the error at the bottom", p.Marks)
	}
	if !(ok.X < errored.X && errored.X < failed.X) || ok.X < plotLeft || failed.X > plotWidth-plotRight {
		t.Errorf("marks %+v: want them in time order inside the frame", p.Marks)
	}
	if ok.Class != "outcome-successful" || !strings.Contains(failed.Title, "Failed: 0.08") || !strings.Contains(p.Desc, "result >= 0.05") {
		t.Errorf("marks %+v, desc %q", p.Marks, p.Desc)
	}
	if empty := measurementsPlot("x", "m", nil, "result < 1", "", start); !empty.Empty {
		t.Error("a plot without measurements is not empty")
	}
}

// TestEndpointsPlot draws the steps of a canary's Service: 4 stable, then
// 3 stable and 1 canary; each group's line holds its count until the next
// sample, and the total stays at 4.
func TestEndpointsPlot(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 2, 0, 0, time.UTC)
	samples := []endpointSample{
		{At: now.Add(-2 * time.Minute), Groups: []groupCount{{"stable", 4}}},
		{At: now.Add(-time.Minute), Groups: []groupCount{{"canary", 1}, {"stable", 3}}},
	}
	p := endpointsPlot("endpoints-api", "api", samples, now)
	lines := map[string]string{}
	for _, l := range p.Lines {
		lines[l.Label] = l.Points
	}
	f := frame{from: samples[0].At, to: now, lo: 0, hi: 4}
	// steps is the line of a group at before, then after from the second
	// sample to now.
	steps := func(before, after float64) string {
		x0, x1, x2 := f.x(samples[0].At), f.x(samples[1].At), f.x(now)
		return fmt.Sprintf("%g,%g %g,%g %g,%g %g,%g", x0, f.y(before), x1, f.y(before), x1, f.y(after), x2, f.y(after))
	}
	want := map[string]string{"total": steps(4, 4), "stable": steps(4, 3), "canary": steps(0, 1)}
	for g, pts := range want {
		if lines[g] != pts {
			t.Errorf("line %s = %q, want %q", g, lines[g], pts)
		}
	}
	if !strings.Contains(p.Desc, "now 4 ready (1 canary, 3 stable)") {
		t.Errorf("desc %q", p.Desc)
	}
}
