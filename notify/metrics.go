package notify

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the notifications' Prometheus metrics, labelled by the
// receiver's name (never its URL). A nil *Metrics records nothing.
type Metrics struct {
	deliveries *prometheus.CounterVec
	retries    *prometheus.CounterVec
	dropped    *prometheus.CounterVec
	queued     *prometheus.GaugeVec
}

// NewMetrics creates the notification metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_notifications_total",
			Help: "Notifications delivered (sent) or given up on after their last attempt (failed), by receiver.",
		}, []string{"receiver", "result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_notification_retries_total",
			Help: "Delivery attempts that failed and were tried again, by receiver.",
		}, []string{"receiver"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plimsoll_notifications_dropped_total",
			Help: "Notifications dropped undelivered, by receiver: the oldest of a full queue, or what was left at shutdown.",
		}, []string{"receiver"}),
		queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plimsoll_notification_queue_length",
			Help: "Notifications waiting in each receiver's queue.",
		}, []string{"receiver"}),
	}
	reg.MustRegister(m.deliveries, m.retries, m.dropped, m.queued)
	return m
}

// receiver makes r's series show at 0 from the start, so that a rate or
// an alert on them works before the first failure.
func (m *Metrics) receiver(r Receiver) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(r.Name, resultSent)
	m.deliveries.WithLabelValues(r.Name, resultFailed)
	m.retries.WithLabelValues(r.Name)
	m.dropped.WithLabelValues(r.Name)
	m.queued.WithLabelValues(r.Name)
}

func (m *Metrics) delivered(r Receiver, result string) {
	if m != nil {
		m.deliveries.WithLabelValues(r.Name, result).Inc()
	}
}

func (m *Metrics) retried(r Receiver) {
	if m != nil {
		m.retries.WithLabelValues(r.Name).Inc()
	}
}

func (m *Metrics) drop(r Receiver, n int) {
	if m != nil && n > 0 {
		m.dropped.WithLabelValues(r.Name).Add(float64(n))
	}
}

func (m *Metrics) length(r Receiver, n int) {
	if m != nil {
		m.queued.WithLabelValues(r.Name).Set(float64(n))
	}
}
