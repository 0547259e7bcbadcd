package sync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Component is the source of the Events plimsoll records.
const Component = "plimsoll"

// EventRecorder records Kubernetes Events about the sync.
type EventRecorder interface {
	Event(ctx context.Context, about *corev1.ObjectReference, eventType, reason, message string)
}

// Events writes Events synchronously, so a one-shot sync has recorded them
// when it exits. The same event again (object, type, reason and message)
// increments the count of the existing Event instead of adding one, as the
// kubelet's recorder does; the Event's name is derived from those fields.
type Events struct {
	client kubernetes.Interface
	clock  clock.PassiveClock
	log    *slog.Logger
}

// NewEvents returns an Events writing with client.
func NewEvents(client kubernetes.Interface, clk clock.PassiveClock, log *slog.Logger) *Events {
	return &Events{client: client, clock: clk, log: log}
}

// Event records one event. Failing to record it is logged, not returned:
// an Event is a courtesy, and the sync status holds the same message.
func (e *Events) Event(ctx context.Context, about *corev1.ObjectReference, eventType, reason, message string) {
	if err := e.record(ctx, about, eventType, reason, message); err != nil {
		e.log.Warn("record event", "reason", reason, "err", err)
	}
}

func (e *Events) record(ctx context.Context, about *corev1.ObjectReference, eventType, reason, message string) error {
	now := metav1.NewTime(e.clock.Now())
	sum := sha256.Sum256([]byte(eventType + "\x00" + reason + "\x00" + message))
	name := fmt.Sprintf("%s.%s", about.Name, hex.EncodeToString(sum[:8]))
	events := e.client.CoreV1().Events(about.Namespace)
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: about.Namespace},
		InvolvedObject: *about,
		Type:           eventType,
		Reason:         reason,
		Message:        message,
		Source:         corev1.EventSource{Component: Component},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	_, err := events.Create(ctx, ev, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create event %s: %w", name, err)
		}
		return nil
	}
	existing, err := events.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read event %s: %w", name, err)
	}
	patch := fmt.Sprintf(`{"count":%d,"lastTimestamp":%q}`, existing.Count+1, now.UTC().Format(time.RFC3339))
	if _, err := events.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("count event %s: %w", name, err)
	}
	return nil
}
