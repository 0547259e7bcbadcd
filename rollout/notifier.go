package rollout

import "plimsoll.dev/plimsoll/strategies"

// Notifier hears of every status the controller writes for a workload
// (see Config.Notifier). Notify is called from a reconcile, after the
// write: it must return at once, and picks for itself what is worth
// passing on.
type Notifier interface {
	Notify(StatusReport)
}

// StatusReport is one status written for a workload: what its primary
// Deployment recorded before the write, and what it records now.
type StatusReport struct {
	Namespace, Workload, Strategy string
	// Kind is "" for a workload of Deployments, StatefulSet or DaemonSet
	// for one of those.
	Kind             string
	Recorded, Status strategies.Status
	// RolledBack is set when the write rolled a failed revision back on
	// its own (Status is then Degraded).
	RolledBack bool
}
