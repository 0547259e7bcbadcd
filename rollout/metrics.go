package rollout

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// phases are the values of the phase label, each reported as 0 or 1 for
// every workload (the kube-state-metrics way: a query can sum them).
var phases = []strategies.Phase{strategies.PhaseProgressing, strategies.PhasePaused, strategies.PhaseHealthy, strategies.PhaseDegraded}

// Metrics are the rollout controller's Prometheus metrics. A nil *Metrics
// records nothing.
type Metrics struct {
	phase     *prometheus.GaugeVec
	duration  *prometheus.HistogramVec
	rollbacks *prometheus.CounterVec
	commands  *prometheus.CounterVec
	measures  *prometheus.CounterVec
	verdicts  *prometheus.CounterVec
	refusals  *prometheus.CounterVec
	writes    *prometheus.CounterVec

	mu sync.Mutex
	// started holds when each workload's revision in flight started, by
	// "namespace/name"; it is kept in memory only, so a rollout a restarted
	// daemon takes over is not timed.
	started map[string]revisionStart
}

// revisionStart is when a revision of a workload was first seen going out.
type revisionStart struct {
	revision int64
	at       time.Time
}

// NewMetrics creates the rollout metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plimsoll_rollout_phase",
			Help: "Phase of each workload: 1 for the phase it is in, 0 for the others.",
		}, []string{"namespace", "workload", "strategy", "phase"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plimsoll_rollout_duration_seconds",
			Help:    "Time from a revision going out to Healthy or Degraded, by strategy and outcome.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1s to about 4.5h
		}, []string{"strategy", "outcome"}),
		rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_rollout_auto_rollbacks_total",
			Help: "Revisions that failed and were rolled back automatically, by strategy.",
		}, []string{"strategy"}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_rollout_commands_total",
			Help: "Commands acted on (promote, abort, retry, pause, resume, or unknown).",
		}, []string{"command"}),
		measures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_analysis_measurements_total",
			Help: "Measurements of the analyses' metrics, by namespace, metric (<analysis>/<metric>) and outcome.",
		}, []string{"namespace", "metric", "outcome"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_analysis_runs_total",
			Help: "Analysis runs that reached a verdict (Successful, Failed, Inconclusive).",
		}, []string{"verdict"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_rollout_selector_refusals_total",
			Help: "Service selector writes refused because the new selector would select fewer ready pods than the strategy keeps.",
		}, []string{"namespace", "service"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_rollout_write_refusals_total",
			Help: "Writes of a workload's rollout that the API server refused (forbidden, or not admitted), from the tenth refusal in a row on, by namespace and workload.",
		}, []string{"namespace", "workload"}),
		started: map[string]revisionStart{},
	}
	reg.MustRegister(m.phase, m.duration, m.rollbacks, m.commands, m.measures, m.verdicts, m.refusals, m.writes)
	return m
}

// observe records a workload's status: its phase, and the duration of a
// revision that just ended (Healthy or Degraded after going out).
func (m *Metrics) observe(ns, name, strategy string, status strategies.Status, now time.Time) {
	if m == nil || status.Phase == "" {
		return
	}
	for _, p := range phases {
		v := 0.0
		if p == status.Phase {
			v = 1
		}
		m.phase.WithLabelValues(ns, name, strategy, string(p)).Set(v)
	}
	key := ns + "/" + name
	m.mu.Lock()
	defer m.mu.Unlock()
	start, known := m.started[key]
	switch status.Phase {
	case strategies.PhaseProgressing, strategies.PhasePaused:
		if !known || start.revision != status.Revision {
			m.started[key] = revisionStart{revision: status.Revision, at: now}
		}
	case strategies.PhaseHealthy, strategies.PhaseDegraded:
		if known && start.revision == status.Revision {
			m.duration.WithLabelValues(strategy, string(status.Phase)).Observe(now.Sub(start.at).Seconds())
		}
		delete(m.started, key)
	}
}

// refused counts a write of workload key ("namespace/name") that the API
// server refused.
func (m *Metrics) refused(key string) {
	if m == nil {
		return
	}
	ns, name, _ := strings.Cut(key, "/")
	m.writes.WithLabelValues(ns, name).Inc()
}

// rolledBack counts an automatic rollback.
func (m *Metrics) rolledBack(strategy string) {
	if m != nil {
		m.rollbacks.WithLabelValues(strategy).Inc()
	}
}

// command counts a command acted on.
func (m *Metrics) command(name string) {
	if m == nil {
		return
	}
	switch name {
	case contract.CommandPromote, contract.CommandAbort, contract.CommandRetry, contract.CommandPause, contract.CommandResume:
	default:
		name = "unknown"
	}
	m.commands.WithLabelValues(name).Inc()
}

// measured counts one measurement of an analysis metric.
func (m *Metrics) measured(ns string, x strategies.Measurement) {
	if m == nil {
		return
	}
	m.measures.WithLabelValues(ns, x.Metric, string(x.Outcome)).Inc()
}

// judged counts an analysis run that reached verdict.
func (m *Metrics) judged(verdict strategies.Verdict) {
	if m == nil || verdict == strategies.VerdictRunning {
		return
	}
	m.verdicts.WithLabelValues(string(verdict)).Inc()
}

// selectorRefused counts a selector write refused on Service ns/service
// (see Controller.steer).
func (m *Metrics) selectorRefused(ns, service string) {
	if m == nil {
		return
	}
	m.refusals.WithLabelValues(ns, service).Inc()
}
