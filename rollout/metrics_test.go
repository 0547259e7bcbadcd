package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// TestMetricsObserve follows a canary revision: Progressing at 12:00:00,
// Paused at 12:00:10, Healthy at 12:00:45 is one rollout of 45s; the phase
// gauge reads 1 for Healthy only; a status seen first as Healthy (a daemon
// that restarted) is not timed.
func TestMetricsObserve(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	rev2 := func(p strategies.Phase) strategies.Status { return strategies.Status{Phase: p, Revision: 2} }
	m.observe("ns", "api", contract.StrategyCanary, rev2(strategies.PhaseProgressing), t0)
	m.observe("ns", "api", contract.StrategyCanary, rev2(strategies.PhasePaused), t0.Add(10*time.Second))
	m.observe("ns", "api", contract.StrategyCanary, rev2(strategies.PhaseHealthy), t0.Add(45*time.Second))
	m.observe("ns", "web", contract.StrategyRolling, strategies.Status{Phase: strategies.PhaseHealthy, Revision: 7}, t0)

	want := `
# HELP plimsoll_rollout_duration_seconds Time from a revision going out to Healthy or Degraded, by strategy and outcome.
# TYPE plimsoll_rollout_duration_seconds histogram
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="1"} 0
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="2"} 0
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="4"} 0
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="8"} 0
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="16"} 0
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="32"} 0
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="64"} 1
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="128"} 1
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="256"} 1
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="512"} 1
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="1024"} 1
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="2048"} 1
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="4096"} 1
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="8192"} 1
plimsoll_rollout_duration_seconds_bucket{outcome="Healthy",strategy="canary",le="+Inf"} 1
plimsoll_rollout_duration_seconds_sum{outcome="Healthy",strategy="canary"} 45
plimsoll_rollout_duration_seconds_count{outcome="Healthy",strategy="canary"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "plimsoll_rollout_duration_seconds"); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		workload, phase string
		want            float64
	}{
		{"api", "Healthy", 1}, {"api", "Progressing", 0}, {"api", "Paused", 0}, {"web", "Healthy", 1},
	} {
		strategy := map[string]string{"api": contract.StrategyCanary, "web": contract.StrategyRolling}[tc.workload]
		if got := testutil.ToFloat64(m.phase.WithLabelValues("ns", tc.workload, strategy, tc.phase)); got != tc.want {
			t.Errorf("phase %s of %s = %v, want %v", tc.phase, tc.workload, got, tc.want)
		}
	}
	m.command(contract.CommandPromote)
	m.command("restart")
	if got := testutil.ToFloat64(m.commands.WithLabelValues("unknown")); got != 1 {
		t.Errorf("unknown commands = %v, want 1", got)
	}
	var nilMetrics *Metrics
	nilMetrics.observe("ns", "api", contract.StrategyCanary, rev2(strategies.PhaseHealthy), t0) // records nothing, does not panic
}
