package strategies

import (
	"strings"
	"testing"
	"time"
)

// errorRate is a metric of 3 measurements 10s apart after 5s, no failure
// tolerated, 4 errors in a row tolerated, one inconclusive tolerated.
var errorRate = MetricSpec{Name: "error-rate/ratio", InitialDelay: 5 * time.Second, Interval: 10 * time.Second,
	Count: 3, ConsecutiveErrorLimit: 4, InconclusiveLimit: 1}

// measurement is one of errorRate at t0+d.
func measurement(outcome Outcome, value string, d time.Duration) Measurement {
	return Measurement{Metric: errorRate.Name, Outcome: outcome, Value: value, At: at(d)}
}

func TestRecord(t *testing.T) {
	s, f, e, i := OutcomeSuccessful, OutcomeFailed, OutcomeError, OutcomeInconclusive
	tests := []struct {
		name     string
		outcomes []Outcome
		want     Verdict
		// counts are successful, failed, inconclusive, errors,
		// consecutive errors.
		counts [5]int
	}{
		{"no measurement yet: running", nil, VerdictRunning, [5]int{}},
		{"two successes of 3: running", []Outcome{s, s}, VerdictRunning, [5]int{2, 0, 0, 0, 0}},
		{"three successes: successful", []Outcome{s, s, s}, VerdictSuccessful, [5]int{3, 0, 0, 0, 0}},
		{"one failure, failure limit 0: failed at once", []Outcome{s, f}, VerdictFailed, [5]int{1, 1, 0, 0, 0}},
		{"errors do not count toward count", []Outcome{s, e, s, e, s}, VerdictSuccessful, [5]int{3, 0, 0, 2, 0}},
		{"four errors in a row are tolerated", []Outcome{e, e, e, e}, VerdictRunning, [5]int{0, 0, 0, 4, 4}},
		{"the fifth error in a row fails", []Outcome{e, e, e, e, e}, VerdictFailed, [5]int{0, 0, 0, 5, 5}},
		{"a success resets the errors in a row", []Outcome{e, e, e, e, s, e, e}, VerdictRunning, [5]int{1, 0, 0, 6, 2}},
		{"one inconclusive is tolerated", []Outcome{i, s, s}, VerdictSuccessful, [5]int{2, 0, 1, 0, 0}},
		{"the second inconclusive decides", []Outcome{i, i}, VerdictInconclusive, [5]int{0, 0, 2, 0, 0}},
		{"measurements after the verdict are ignored", []Outcome{f, s, s, s}, VerdictFailed, [5]int{0, 1, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			specs := []MetricSpec{errorRate}
			r := StartRun("step 1", h4, specs, t0)
			for n, o := range tt.outcomes {
				r = r.Record(specs, []Measurement{measurement(o, "0.1", time.Duration(n)*time.Second)})
			}
			m := r.Metrics[0]
			got := [5]int{m.Successful, m.Failed, m.Inconclusive, m.Errors, m.ConsecutiveErrors}
			if r.Verdict != tt.want || m.Verdict != tt.want || got != tt.counts {
				t.Errorf("verdict %s (metric %s), counts %v; want %s, %v", r.Verdict, m.Verdict, got, tt.want, tt.counts)
			}
		})
	}
}

func TestRecordRunVerdict(t *testing.T) {
	one := MetricSpec{Name: "a/one", Count: 1}
	two := MetricSpec{Name: "a/two", Count: 1}
	specs := []MetricSpec{one, two}
	tests := []struct {
		name string
		ms   []Measurement
		want Verdict
	}{
		{"one metric passed, the other runs: running",
			[]Measurement{{Metric: "a/one", Outcome: OutcomeSuccessful}}, VerdictRunning},
		{"one metric failed while the other runs: failed at once",
			[]Measurement{{Metric: "a/two", Outcome: OutcomeFailed}}, VerdictFailed},
		{"one inconclusive, the other runs: running until it ends",
			[]Measurement{{Metric: "a/one", Outcome: OutcomeInconclusive}}, VerdictRunning},
		{"one inconclusive, the other passed: inconclusive",
			[]Measurement{{Metric: "a/one", Outcome: OutcomeInconclusive}, {Metric: "a/two", Outcome: OutcomeSuccessful}}, VerdictInconclusive},
		{"both passed: successful",
			[]Measurement{{Metric: "a/one", Outcome: OutcomeSuccessful}, {Metric: "a/two", Outcome: OutcomeSuccessful}}, VerdictSuccessful},
		{"a measurement of an unknown metric changes nothing",
			[]Measurement{{Metric: "b/one", Outcome: OutcomeFailed}}, VerdictRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StartRun("step 1", h4, specs, t0).Record(specs, tt.ms).Verdict; got != tt.want {
				t.Errorf("verdict %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRecordPending(t *testing.T) {
	specs := []MetricSpec{errorRate}
	r := StartRun("step 1", h4, specs, t0)
	r = r.Record(specs, []Measurement{measurement(OutcomePending, "job web-1 running", 5*time.Second)})
	r = r.Record(specs, []Measurement{measurement(OutcomePending, "job web-1 running", 7*time.Second)})
	m := r.Metrics[0]
	if !m.Pending || !m.At.Equal(at(5*time.Second)) || m.Taken() != 0 {
		t.Fatalf("pending %v at %s taken %d; want pending since t0+5s, none taken", m.Pending, m.At, m.Taken())
	}
	if due, wait := r.Due(specs, at(6*time.Second)); len(due) != 0 || wait != time.Second {
		t.Errorf("at t0+6s: due %v, wait %s; want none due, 1s to wait (2s after t0+5s)", due, wait)
	}
	r = r.Record(specs, []Measurement{measurement(OutcomeSuccessful, "job web-1 succeeded", 9*time.Second)})
	if m := r.Metrics[0]; m.Pending || m.Successful != 1 || m.Taken() != 1 {
		t.Errorf("after the result: pending %v, successful %d, taken %d", m.Pending, m.Successful, m.Taken())
	}
}

func TestDue(t *testing.T) {
	specs := []MetricSpec{errorRate}
	fresh := StartRun("step 1", h4, specs, t0)
	measured := fresh.Record(specs, []Measurement{measurement(OutcomeSuccessful, "0.001", 6*time.Second)})
	tests := []struct {
		name     string
		run      AnalysisRun
		now      time.Duration
		wantDue  bool
		wantWait time.Duration
	}{
		{"before the initial delay: wait for it", fresh, 2 * time.Second, false, 3 * time.Second},
		{"at the initial delay: due", fresh, 5 * time.Second, true, 0},
		{"measured at t0+6s: the next at t0+16s", measured, 10 * time.Second, false, 6 * time.Second},
		{"interval passed: due", measured, 16 * time.Second, true, 0},
		{"a decided run: nothing due, nothing to wait for",
			measured.Record(specs, []Measurement{measurement(OutcomeFailed, "0.1", 16*time.Second)}), time.Hour, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, wait := tt.run.Due(specs, at(tt.now))
			if (len(due) > 0) != tt.wantDue || wait != tt.wantWait {
				t.Errorf("due %v, wait %s; want due %v, wait %s", due, wait, tt.wantDue, tt.wantWait)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	specs := []MetricSpec{errorRate}
	r := StartRun("step 1", h4, specs, t0)
	tests := []struct {
		name  string
		ms    []Measurement
		words []string
	}{
		{"not measured yet", nil, []string{"analysis running"}},
		{"one of three", []Measurement{measurement(OutcomeSuccessful, "0.001", time.Second)}, []string{"analysis running: error-rate/ratio 1/3, last successful"}},
		{"failed, with the value", []Measurement{measurement(OutcomeFailed, "0.1", time.Second)}, []string{"analysis error-rate/ratio failed: 0.1"}},
		{"failed on errors", []Measurement{
			{Metric: errorRate.Name, Outcome: OutcomeError, Message: "query returned no data"},
			{Metric: errorRate.Name, Outcome: OutcomeError, Message: "query returned no data"},
			{Metric: errorRate.Name, Outcome: OutcomeError, Message: "query returned no data"},
			{Metric: errorRate.Name, Outcome: OutcomeError, Message: "query returned no data"},
			{Metric: errorRate.Name, Outcome: OutcomeError, Message: "query returned no data"},
		}, []string{"error-rate/ratio failed: 5 errors in a row", "query returned no data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Record(specs, tt.ms).Summary(specs)
			for _, w := range tt.words {
				if !strings.Contains(got, w) {
					t.Errorf("summary %q lacks %q", got, w)
				}
			}
		})
	}
}

func TestEncodeRun(t *testing.T) {
	specs := []MetricSpec{errorRate}
	r := StartRun("step 2", h4, specs, t0).Record(specs, []Measurement{measurement(OutcomeSuccessful, "0.001", time.Second)})
	back := DecodeRun(EncodeRun(&r))
	if back == nil || !back.Of("step 2", h4) || back.Metrics[0].Successful != 1 || !back.Metrics[0].At.Equal(at(time.Second)) {
		t.Fatalf("round trip of %+v gave %+v", r, back)
	}
	for _, bad := range []string{"", "{", `{"hash":"x"}`, "null"} {
		if got := DecodeRun(bad); got != nil {
			t.Errorf("DecodeRun(%q) = %+v, want nil", bad, got)
		}
	}
	if EncodeRun(nil) != "" {
		t.Error("EncodeRun(nil) is not empty")
	}
}
