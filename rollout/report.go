package rollout

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/revision"
	"plimsoll.dev/plimsoll/strategies"
)

// outcome is what a reconcile did that its report tells: the command it
// acted on (and what the planner said it did), and whether it rolled a
// failed revision back on its own.
type outcome struct {
	cmd        strategies.Commanded
	acted      string
	rolledBack bool
}

// report tells of a status written for a workload of strategy: a log line
// when it changed, the metrics, an Event for a command acted on, and one
// Event for the change itself: RolledBack for an automatic rollback,
// RolloutFailed (Warning) for a newly failed revision, PhaseChanged for any
// other change of phase; then the notifier, if any, hears of it.
func (c *Controller) report(ctx context.Context, obj *appsv1.Deployment, strategy string, recorded, status strategies.Status, out outcome) {
	name := obj.Labels[contract.LabelWorkload]
	if name == "" {
		name = obj.Name
	}
	key := obj.Namespace + "/" + name
	if status != recorded {
		c.log.Info("workload status", "workload", key, "strategy", strategy, "revision", status.Revision,
			"commit", revision.Short(status.Commit), "phase", string(status.Phase), "message", status.Message)
	}
	c.metrics.observe(obj.Namespace, name, strategy, status, time.Now())
	if out.cmd.Name != "" {
		c.metrics.command(out.cmd.Name)
		c.eventFor(ctx, obj, corev1.EventTypeNormal, ReasonCommand, fmt.Sprintf("%s: %s", out.cmd.Name, out.cmd.Describe(out.acted)))
	}
	switch {
	case out.rolledBack:
		c.metrics.rolledBack(strategy)
		c.eventFor(ctx, obj, corev1.EventTypeWarning, ReasonRolledBack, status.Message)
	case newlyFailed(recorded, status):
		c.eventFor(ctx, obj, corev1.EventTypeWarning, ReasonRolloutFailed, status.Message)
	case status.Phase != recorded.Phase:
		c.eventFor(ctx, obj, corev1.EventTypeNormal, ReasonPhase, fmt.Sprintf("%s: %s", status.Phase, status.Message))
	}
	if c.notifier != nil {
		c.notifier.Notify(StatusReport{Namespace: obj.Namespace, Workload: name, Strategy: strategy,
			Recorded: recorded, Status: status, RolledBack: out.rolledBack})
	}
}

// newlyFailed reports whether status records a failed hash that recorded
// did not.
func newlyFailed(recorded, status strategies.Status) bool {
	return status.FailedHash != "" && status.FailedHash != recorded.FailedHash
}
