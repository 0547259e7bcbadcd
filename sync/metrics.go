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

// Metrics are the sync's Prometheus metrics, each labelled with the
// sync's name: one registration serves every sync of the daemon (see
// For). A nil *Metrics records nothing.
type Metrics struct {
	syncs    *prometheus.CounterVec
	duration prometheus.ObserverVec
	writes   *prometheus.CounterVec
	quiet    *prometheus.CounterVec
}

// labelSync is the label that names the sync.
const labelSync = "sync"

// NewMetrics creates the sync metrics and registers them with reg. Give
// each sync its own view of them with For.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_sync_total",
			Help: "Syncs attempted, by sync and outcome (synced, failed, held).",
		}, []string{labelSync, "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plimsoll_sync_duration_seconds",
			Help:    "Time one sync took, from fetch to status, by sync.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{labelSync}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_sync_object_writes_total",
			Help: "Objects written or deleted by syncs, by sync and action (create, update, restore, none, delete).",
		}, []string{labelSync, "action"}),
		quiet: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_sync_quiet_polls_total",
			Help: "Polls that found the applied commit still at the branch head and nothing the sync wrote changed since, and so read and wrote nothing, by sync. They count in plimsoll_sync_total as synced too.",
		}, []string{labelSync}),
	}
	reg.MustRegister(m.syncs, m.duration, m.writes, m.quiet)
	return m
}

// For returns the metrics of sync name: the same series, with the sync
// label set. For of a nil *Metrics is nil.
func (m *Metrics) For(name string) *Metrics {
	if m == nil {
		return nil
	}
	l := prometheus.Labels{labelSync: name}
	return &Metrics{syncs: m.syncs.MustCurryWith(l), duration: m.duration.MustCurryWith(l),
		writes: m.writes.MustCurryWith(l), quiet: m.quiet.MustCurryWith(l)}
}

// Forget drops the series of sync name, whose declaration is gone.
func (m *Metrics) Forget(name string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{labelSync: name}
	m.syncs.DeletePartialMatch(l)
	m.duration.(*prometheus.HistogramVec).DeletePartialMatch(l)
	m.writes.DeletePartialMatch(l)
	m.quiet.DeletePartialMatch(l)
}

func (m *Metrics) observe(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.syncs.WithLabelValues(outcome).Inc()
	m.duration.WithLabelValues().Observe(d.Seconds())
}

// quietPoll counts a poll that had nothing to do (see Syncer.quietPoll).
func (m *Metrics) quietPoll(d time.Duration) {
	if m == nil {
		return
	}
	m.quiet.WithLabelValues().Inc()
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
