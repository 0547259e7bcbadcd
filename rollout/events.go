package rollout

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"
)

// eventWriteTimeout bounds the write of one Event in once mode.
const eventWriteTimeout = 10 * time.Second

// eventRecorder records the controller's Events: through client-go's
// broadcaster in the daemon, so that a reconcile never waits for one, and
// one write at a time in once mode, so that a one-shot sync has recorded
// them when it exits.
type eventRecorder interface {
	event(obj runtime.Object, eventType, reason, message string)
	// shutdown delivers what is queued, as far as it can, and stops.
	shutdown()
}

func newEventRecorder(client kubernetes.Interface, clk clock.PassiveClock, log *slog.Logger, once bool) eventRecorder {
	if once {
		return &directEvents{client: client, clock: clk, log: log}
	}
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &broadcastEvents{bc: bc, rec: bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: Component})}
}

// broadcastEvents hands Events to client-go's broadcaster, which
// aggregates repeats and writes them in the background.
type broadcastEvents struct {
	bc  record.EventBroadcaster
	rec record.EventRecorder
}

func (b *broadcastEvents) event(obj runtime.Object, eventType, reason, message string) {
	b.rec.Event(obj, eventType, reason, message)
}

func (b *broadcastEvents) shutdown() { b.bc.Shutdown() }

// directEvents writes each Event before it returns.
type directEvents struct {
	client kubernetes.Interface
	clock  clock.PassiveClock
	log    *slog.Logger
}

func (d *directEvents) event(obj runtime.Object, eventType, reason, message string) {
	ref, err := reference.GetReference(scheme.Scheme, obj)
	if err != nil {
		d.log.Warn("record event", "reason", reason, "err", err)
		return
	}
	now := metav1.NewTime(d.clock.Now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()), Namespace: ref.Namespace},
		InvolvedObject: *ref,
		Type:           eventType,
		Reason:         reason,
		Message:        message,
		Source:         corev1.EventSource{Component: Component},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), eventWriteTimeout)
	defer cancel()
	if _, err := d.client.CoreV1().Events(ref.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		d.log.Warn("record event", "reason", reason, "err", err)
	}
}

func (d *directEvents) shutdown() {}
