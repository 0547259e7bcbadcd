package sync

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"plimsoll.dev/plimsoll/sync/apply"
)

// Outcomes of a sync, the values of the "outcome" label.
const (
	outcomeSynced = "synced"
	outcomeFailed = "failed"
	outcomeHeld   = "held"
)

// Metrics are the sync's Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	syncs    *prometheus.CounterVec
	duration prometheus.Histogram
	writes   *prometheus.CounterVec
	quiet    prometheus.Counter
}

// NewMetrics creates the sync metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_sync_total",
			Help: "Syncs attempted, by outcome (synced, failed, held).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "plimsoll_sync_duration_seconds",
			Help:    "Time one sync took, from fetch to status.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_sync_object_writes_total",
			Help: "Objects written or deleted by syncs, by action (create, update, restore, none, delete).",
		}, []string{"action"}),
		quiet: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plimsoll_sync_quiet_polls_total",
			Help: "Polls that found the applied commit still at the branch head and nothing the sync wrote changed since, and so read and wrote nothing. They count in plimsoll_sync_total as synced too.",
		}),
	}
	reg.MustRegister(m.syncs, m.duration, m.writes, m.quiet)
	return m
}

func (m *Metrics) observe(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.syncs.WithLabelValues(outcome).Inc()
	m.duration.Observe(d.Seconds())
}

// quietPoll counts a poll that had nothing to do (see Syncer.quietPoll).
func (m *Metrics) quietPoll(d time.Duration) {
	if m == nil {
		return
	}
	m.quiet.Inc()
	m.observe(outcomeSynced, d)
}

func (m *Metrics) objects(changes []apply.Change, pruned apply.PruneResult) {
	if m == nil {
		return
	}
	for _, c := range changes {
		m.writes.WithLabelValues(string(c.Action)).Inc()
	}
	if n := len(pruned.Deleted); n > 0 {
		m.writes.WithLabelValues(string(apply.ActionDelete)).Add(float64(n))
	}
}
