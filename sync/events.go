package sync

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
)

// Component is the source of the Events plimsoll's sync records.
const Component = "plimsoll"

// EventRecorder records Kubernetes Events about the sync: the sync's
// record, or an object it names. internal/events writes them, for the
// rollout controller too; a sync waits for each (events.Wait), so a
// one-shot sync has recorded them when it exits.
type EventRecorder interface {
	Event(ctx context.Context, obj runtime.Object, eventType, reason, message string)
}
