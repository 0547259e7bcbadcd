// Package notify tells people of rollouts and syncs: it posts a
// notification to each configured receiver (a generic JSON webhook or a
// Slack-compatible incoming webhook) when a workload's phase changes and
// when a sync fails, is held, or recovers.
//
// Delivery never holds up the controllers: Send only queues, each receiver
// has a bounded queue of its own and one sender that retries with capped
// exponential backoff, and a receiver that is down or hangs costs its own
// queue and nothing else. Receivers are named in logs and metrics by
// their name, never by their URL, which holds a token.
package notify

import (
	"time"
)

// Kinds, phases, severities, formats and defaults of the notifications.
const (
	// KindRollout is the kind of a notification about a workload's rollout.
	KindRollout Kind = "rollout"
	// KindSync is the kind of a notification about a sync.
	KindSync Kind = "sync"

	// PhaseRolledBack is the phase a rollout notification gives a failed
	// revision that was rolled back on its own; the workload's
	// plimsoll.dev/phase says Degraded.
	PhaseRolledBack = "RolledBack"

	// SeverityInfo is the severity of a rollout going on or done, and of
	// a sync that recovered.
	SeverityInfo Severity = "info"
	// SeverityWarning is the severity of a sync held by a sync window.
	SeverityWarning Severity = "warning"
	// SeverityError is the severity of a failed revision or a failed sync.
	SeverityError Severity = "error"

	// FormatWebhook posts the Notification itself as JSON.
	FormatWebhook Format = "webhook"
	// FormatSlack posts a Slack incoming-webhook message: a complete
	// human line in "text", and an attachment with the colour and the
	// details. Mattermost, Rocket.Chat and Discord's /slack endpoint take
	// the same body.
	FormatSlack Format = "slack"

	// DefaultQueueSize bounds each receiver's queue. A canary of five
	// steps is about 8 notifications (each phase change); 100 hold a dozen
	// rollouts while a receiver is down, and a full queue drops its
	// oldest notification for the newest.
	DefaultQueueSize = 100
	// DefaultTimeout bounds one delivery attempt.
	DefaultTimeout = 10 * time.Second
	// DefaultAttempts is how many times a notification is tried: once and
	// 5 retries, after 1s, 2s, 4s, 8s and 16s (31s of waiting in all).
	DefaultAttempts = 6
	// DefaultBackoff is the wait before the first retry; it doubles with
	// each retry, up to DefaultMaxBackoff, which also caps a receiver's
	// Retry-After.
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = 30 * time.Second
	// DefaultDrain is how long a stopping daemon keeps delivering what is
	// queued before it gives up on the rest.
	DefaultDrain = 5 * time.Second

	// maxResponseRead is how much of a receiver's answer is read (and
	// thrown away) so that the connection can be reused.
	maxResponseRead = 64 << 10

	// Slack attachment colours, in hex: Slack also takes "good" and
	// "danger", but the other Slack-compatible receivers take only hex.
	colorGood    = "#2EB67D"
	colorInfo    = "#1D9BD1"
	colorWarning = "#ECB22E"
	colorDanger  = "#E01E5A"

	// Results of a delivery, the values of the "result" label.
	resultSent   = "sent"
	resultFailed = "failed"
)

// Kind says what a notification is about: KindRollout or KindSync.
type Kind string

// Severity ranks a notification for receivers that route or colour by it:
// SeverityInfo, SeverityWarning or SeverityError.
type Severity string

// Notification is one thing to tell. Its JSON form is the body a generic
// webhook receives (docs/notifications.md); it holds no secret: the
// message is the one already written to the workload's or the sync's
// status annotations.
type Notification struct {
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	// Namespace is the workload's namespace, or the namespace of the
	// sync's record.
	Namespace string `json:"namespace"`
	// Workload and Strategy are set for a rollout; WorkloadKind too, for
	// a StatefulSet's or a DaemonSet's ("" for a workload of Deployments).
	Workload     string `json:"workload,omitempty"`
	WorkloadKind string `json:"workloadKind,omitempty"`
	Strategy     string `json:"strategy,omitempty"`
	// Sync is the sync's name, set for a sync.
	Sync string `json:"sync,omitempty"`
	// Phase is a rollout's new phase: Progressing, Paused, Healthy,
	// Degraded, or PhaseRolledBack.
	Phase string `json:"phase,omitempty"`
	// Status is a sync's status: Failed, Held, or Synced after one of
	// those.
	Status string `json:"status,omitempty"`
	// Revision and TemplateHash are the workload's plimsoll.dev/revision
	// and plimsoll.dev/template-hash.
	Revision     int64  `json:"revision,omitempty"`
	TemplateHash string `json:"templateHash,omitempty"`
	// Commit is the Git commit the rollout's revision came from, or the
	// commit the sync fetched (the one that failed or is held).
	Commit string `json:"commit,omitempty"`
	// Message is the workload's plimsoll.dev/message or the sync's.
	Message string `json:"message"`
	// Time is when the change was seen, in UTC.
	Time time.Time `json:"time"`
}

// subject names what n is about: "<namespace>/<workload>" for a rollout,
// "sync <name>" for a sync.
func (n Notification) subject() string {
	if n.Kind == KindSync {
		return "sync " + n.Sync
	}
	return n.Namespace + "/" + n.Workload
}

// state is n's phase or sync status.
func (n Notification) state() string {
	if n.Kind == KindSync {
		return n.Status
	}
	return n.Phase
}
