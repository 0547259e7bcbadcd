package sync

import "plimsoll.dev/plimsoll/sync/inventory"

// Notifier hears of the status of every sync attempt (see
// Config.Notifier). Notify is called before the status is written: it
// must return at once, and picks for itself what is worth passing on.
type Notifier interface {
	Notify(StatusReport)
}

// StatusReport is the outcome of one sync attempt: the sync, the status
// its record held before, and the status it holds now.
type StatusReport struct {
	// Sync is the sync's name; Namespace is where its record lives.
	Sync, Namespace  string
	Previous, Status inventory.Status
}
