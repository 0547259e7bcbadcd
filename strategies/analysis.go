package strategies

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Outcome is what one measurement of a metric says.
type Outcome string

// The outcomes of a measurement.
const (
	// OutcomeSuccessful: the success condition held (or the failure
	// condition did not, when only that is given).
	OutcomeSuccessful Outcome = "Successful"
	// OutcomeFailed: the failure condition held (or the success condition
	// did not, when only that is given).
	OutcomeFailed Outcome = "Failed"
	// OutcomeInconclusive: neither of the two given conditions held.
	OutcomeInconclusive Outcome = "Inconclusive"
	// OutcomeError: no value to judge: the provider could not be reached,
	// answered an error, returned no data or NaN, or a condition could not
	// be evaluated on the value.
	OutcomeError Outcome = "Error"
	// OutcomePending: the measurement was started and has no result yet
	// (a Job that still runs); it is looked at again shortly.
	OutcomePending Outcome = "Pending"
)

// Verdict is where an analysis run, or one metric of it, stands.
type Verdict string

// The verdicts of an analysis run.
const (
	VerdictRunning      Verdict = "Running"
	VerdictSuccessful   Verdict = "Successful"
	VerdictFailed       Verdict = "Failed"
	VerdictInconclusive Verdict = "Inconclusive"
)

// pendingPoll is how soon a metric whose measurement is pending is looked
// at again.
const pendingPoll = 2 * time.Second

// MetricSpec is the timing and the limits of one metric of an analysis, as
// the analysis document gives them (defaults applied).
type MetricSpec struct {
	// Name is "<analysis>/<metric>", unique within a workload.
	Name string
	// InitialDelay is how long after the run starts the first measurement
	// is taken; Interval is the time between two measurements.
	InitialDelay, Interval time.Duration
	// Count is how many conclusive measurements (successful, failed or
	// inconclusive) the metric takes; errors do not count.
	Count int
	// FailureLimit, InconclusiveLimit and ConsecutiveErrorLimit are how
	// many failed, inconclusive and consecutive error measurements are
	// tolerated: one more decides the metric.
	FailureLimit, InconclusiveLimit, ConsecutiveErrorLimit int
}

// Measurement is one measurement of a metric, taken by a provider.
type Measurement struct {
	Metric  string
	Outcome Outcome
	// Value is what was measured, as shown to users: "0.0132",
	// "[0.01 0.2]", "job web-smoke-3 succeeded".
	Value string
	// Message says why an error or a failure is one.
	Message string
	At      time.Time
}

// MetricRun is the tally of one metric in a run.
type MetricRun struct {
	Name              string  `json:"name"`
	Verdict           Verdict `json:"verdict"`
	Successful        int     `json:"successful,omitempty"`
	Failed            int     `json:"failed,omitempty"`
	Inconclusive      int     `json:"inconclusive,omitempty"`
	Errors            int     `json:"errors,omitempty"`
	ConsecutiveErrors int     `json:"consecutiveErrors,omitempty"`
	// Pending is true while the last measurement has no result yet.
	Pending bool `json:"pending,omitempty"`
	// Value, Outcome, Message and At describe the last measurement.
	Value   string    `json:"value,omitempty"`
	Outcome Outcome   `json:"outcome,omitempty"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at,omitzero"`
}

// conclusive is how many measurements of m count toward its Count.
func (m MetricRun) conclusive() int { return m.Successful + m.Failed + m.Inconclusive }

// Taken is how many measurements of m were started, errors included: the
// number of the next one, from 0, so that a provider names what it starts
// for it (a Job) the same way after a restart.
func (m MetricRun) Taken() int { return m.conclusive() + m.Errors }

// AnalysisRun is one run of a workload's analyses: for one revision (Hash)
// at one stage of its rollout. It is recorded on the workload's Deployments
// (plimsoll.dev/analysis-run), so a restarted controller resumes it with
// its counts.
type AnalysisRun struct {
	// Stage names where in the rollout the run judges the revision:
	// "step 1", "pre-promotion", "post-promotion", "verification".
	Stage   string      `json:"stage"`
	Hash    string      `json:"hash"`
	Started time.Time   `json:"started"`
	Verdict Verdict     `json:"verdict"`
	Metrics []MetricRun `json:"metrics"`
}

// StartRun starts a run of specs at stage for the revision of hash.
func StartRun(stage, hash string, specs []MetricSpec, now time.Time) AnalysisRun {
	r := AnalysisRun{Stage: stage, Hash: hash, Started: now, Verdict: VerdictRunning}
	for _, s := range specs {
		r.Metrics = append(r.Metrics, MetricRun{Name: s.Name, Verdict: VerdictRunning})
	}
	return r
}

// Running reports whether r is a run without a verdict yet; a nil r is
// not.
func (r *AnalysisRun) Running() bool { return r != nil && r.Verdict == VerdictRunning }

// Decide is r decided by a person: accepted (Successful) on a promote,
// failed on an abort, when r is the run of the revision of hash and has
// no verdict or an inconclusive one; else r itself. An abort's failure
// names itself in the run's last metric.
func (r *AnalysisRun) Decide(hash string, promote bool) *AnalysisRun {
	if r == nil || r.Hash != hash || (r.Verdict != VerdictRunning && r.Verdict != VerdictInconclusive) {
		return r
	}
	out := *r
	out.Metrics = append([]MetricRun(nil), r.Metrics...)
	if promote {
		out.Verdict = VerdictSuccessful
		return &out
	}
	out.Verdict = VerdictFailed
	if m := out.Deciding(); m != nil {
		m.Verdict, m.Message = VerdictFailed, "aborted by a command"
	}
	return &out
}

// Of reports whether r is the run of stage for the revision of hash.
func (r *AnalysisRun) Of(stage, hash string) bool {
	return r != nil && r.Stage == stage && r.Hash == hash
}

// Due names the metrics of r that are to be measured at now, and how long
// until the next one is due when none is (zero when r is decided). With
// initial delay 10s, interval 30s and a run started at 12:00:00: the first
// measurement is due at 12:00:10, the second at 12:00:40 (30s after the
// first was taken); a pending one is looked at again every 2s.
func (r AnalysisRun) Due(specs []MetricSpec, now time.Time) (due []string, wait time.Duration) {
	if r.Verdict != VerdictRunning {
		return nil, 0
	}
	for _, m := range r.Metrics {
		s, ok := specOf(specs, m.Name)
		if !ok || m.Verdict != VerdictRunning {
			continue
		}
		at := r.Started.Add(s.InitialDelay)
		switch {
		case m.Pending:
			at = m.At.Add(pendingPoll)
		case !m.At.IsZero():
			at = m.At.Add(s.Interval)
		}
		if !now.Before(at) {
			due = append(due, m.Name)
		} else {
			wait = sooner(wait, at.Sub(now))
		}
	}
	return due, wait
}

// Record folds measurements into r and decides the metrics and the run:
// a metric fails with one failed measurement more than its FailureLimit
// or one consecutive error more than its ConsecutiveErrorLimit, is
// inconclusive with one inconclusive measurement more than its
// InconclusiveLimit, and succeeds once it has Count conclusive
// measurements. The run fails as soon as one metric fails; otherwise it
// runs while one metric runs, and is then inconclusive if one metric is,
// else successful. With FailureLimit 0, ConsecutiveErrorLimit 4 and
// Count 3: one failed measurement fails the metric; five errors in a row
// fail it; three successful ones pass it, whatever errors came between.
func (r AnalysisRun) Record(specs []MetricSpec, ms []Measurement) AnalysisRun {
	out := r
	out.Metrics = append([]MetricRun(nil), r.Metrics...)
	for _, x := range ms {
		for i := range out.Metrics {
			m := &out.Metrics[i]
			s, ok := specOf(specs, m.Name)
			if m.Name != x.Metric || !ok || m.Verdict != VerdictRunning {
				continue
			}
			m.fold(x)
			m.Verdict = m.decide(s)
		}
	}
	out.Verdict = out.decide()
	return out
}

// fold counts measurement x into m and keeps it as the last one.
func (m *MetricRun) fold(x Measurement) {
	if x.Outcome == OutcomePending {
		if !m.Pending {
			m.At = x.At
		}
		m.Pending, m.Value, m.Outcome, m.Message = true, x.Value, x.Outcome, x.Message
		return
	}
	m.Pending = false
	m.Value, m.Outcome, m.Message, m.At = x.Value, x.Outcome, x.Message, x.At
	switch x.Outcome {
	case OutcomeSuccessful:
		m.Successful++
	case OutcomeFailed:
		m.Failed++
	case OutcomeInconclusive:
		m.Inconclusive++
	default:
		m.Errors++
		m.ConsecutiveErrors++
		return
	}
	m.ConsecutiveErrors = 0
}

// decide is the verdict of m under spec s (see Record).
func (m MetricRun) decide(s MetricSpec) Verdict {
	switch {
	case m.Failed > s.FailureLimit, m.ConsecutiveErrors > s.ConsecutiveErrorLimit:
		return VerdictFailed
	case m.Inconclusive > s.InconclusiveLimit:
		return VerdictInconclusive
	case m.conclusive() >= max(s.Count, 1):
		return VerdictSuccessful
	}
	return VerdictRunning
}

// decide is the verdict of the run from its metrics' (see Record).
func (r AnalysisRun) decide() Verdict {
	running, inconclusive := false, false
	for _, m := range r.Metrics {
		switch m.Verdict {
		case VerdictFailed:
			return VerdictFailed
		case VerdictRunning:
			running = true
		case VerdictInconclusive:
			inconclusive = true
		}
	}
	switch {
	case running:
		return VerdictRunning
	case inconclusive:
		return VerdictInconclusive
	}
	return VerdictSuccessful
}

// Deciding is the metric that decided a failed or inconclusive run, or the
// one measured last while it runs; nil when r has no metric.
func (r AnalysisRun) Deciding() *MetricRun {
	var last *MetricRun
	for i := range r.Metrics {
		m := &r.Metrics[i]
		if r.Verdict != VerdictRunning && r.Verdict != VerdictSuccessful && m.Verdict == r.Verdict {
			return m
		}
		if last == nil || m.At.After(last.At) {
			last = m
		}
	}
	return last
}

// Summary is r in a few words for plimsoll.dev/message: "analysis
// error-rate/ratio failed: 0.1 (result < 0.01)", "analysis running:
// error-rate/ratio 1/3 successful, last 0.001".
func (r AnalysisRun) Summary(specs []MetricSpec) string {
	m := r.Deciding()
	if m == nil {
		return "analysis " + strings.ToLower(string(r.Verdict))
	}
	detail := m.Value
	if m.Message != "" {
		detail = strings.TrimSpace(detail + " (" + m.Message + ")")
	}
	switch r.Verdict {
	case VerdictFailed, VerdictInconclusive:
		if m.Failed <= 0 && m.Inconclusive <= 0 && m.ConsecutiveErrors > 0 {
			return fmt.Sprintf("analysis %s failed: %d errors in a row, last: %s", m.Name, m.ConsecutiveErrors, detail)
		}
		return fmt.Sprintf("analysis %s %s: %s", m.Name, strings.ToLower(string(r.Verdict)), detail)
	case VerdictSuccessful:
		return "analysis successful"
	}
	count := 1
	if s, ok := specOf(specs, m.Name); ok {
		count = max(s.Count, 1)
	}
	if m.At.IsZero() {
		return "analysis running"
	}
	return fmt.Sprintf("analysis running: %s %d/%d, last %s", m.Name, m.conclusive(), count, strings.ToLower(string(m.Outcome)))
}

// specOf finds the spec of the metric named name.
func specOf(specs []MetricSpec, name string) (MetricSpec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return MetricSpec{}, false
}

// EncodeRun is r as the value of plimsoll.dev/analysis-run; "" for no run.
func EncodeRun(r *AnalysisRun) string {
	if r == nil {
		return ""
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "" // a struct of strings, numbers and times always marshals
	}
	return string(b)
}

// DecodeRun reads plimsoll.dev/analysis-run. A value that does not parse
// reads as no run: the stage then starts a new run, which is safe (it
// judges the revision again, from the start).
func DecodeRun(s string) *AnalysisRun {
	if s == "" {
		return nil
	}
	var r AnalysisRun
	if err := json.Unmarshal([]byte(s), &r); err != nil || r.Stage == "" {
		return nil
	}
	return &r
}
