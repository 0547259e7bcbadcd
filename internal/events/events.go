// Package events is the one writer of plimsoll's Kubernetes Events, for
// the sync and the rollout controller alike: one naming, one way repeats
// are counted, and a choice of whether a caller waits for the write.
//
// The same Event again (same object, type, reason and message) raises the
// count and last timestamp of the one already written instead of adding
// another, as the kubelet's and kube-controller-manager's recorders do:
// 300 failed syncs of one commit leave one SyncFailed Event of count 300,
// not 300 Events.
package events

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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"

	"plimsoll.dev/plimsoll/internal/redact"
)

// writeTimeout bounds the write of one Event a caller waits for.
const writeTimeout = 10 * time.Second

// Mode says whether a caller of Recorder.Event waits for the write.
type Mode int

const (
	// Wait writes each Event before Event returns: a one-shot run has
	// recorded its Events when it exits, and a sync's Events are in the
	// order of its commits.
	Wait Mode = iota
	// Background hands each Event to client-go's broadcaster, which
	// counts repeats the same way and writes in the background: a
	// reconcile never waits on the API server for an Event.
	Background
)

// Recorder records Events from one source component.
type Recorder struct {
	client kubernetes.Interface
	clock  clock.PassiveClock
	log    *slog.Logger
	source corev1.EventSource
	bc     record.EventBroadcaster // Background only
	rec    record.EventRecorder    // Background only
}

// New returns a Recorder writing Events of source component with client,
// in mode.
func New(client kubernetes.Interface, clk clock.PassiveClock, log *slog.Logger, component string, mode Mode) *Recorder {
	r := &Recorder{client: client, clock: clk, log: log, source: corev1.EventSource{Component: component}}
	if mode == Background {
		r.bc = record.NewBroadcaster()
		r.bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		r.rec = r.bc.NewRecorder(scheme.Scheme, r.source)
	}
	return r
}

// Event records an Event about obj (an object, or a
// *corev1.ObjectReference to one), its message with the credentials of
// its URLs redacted: anyone who may list Events reads it. Failing to
// record it is logged, not returned: an Event is a courtesy, and the
// status annotations and records hold the same message.
func (r *Recorder) Event(ctx context.Context, obj runtime.Object, eventType, reason, message string) {
	message = redact.Text(message)
	if r.rec != nil {
		r.rec.Event(obj, eventType, reason, message)
		return
	}
	if err := r.write(ctx, obj, eventType, reason, message); err != nil {
		r.log.Warn("record event", "reason", reason, "err", err)
	}
}

// Shutdown delivers what the broadcaster holds, as far as it can, and
// stops it; in Wait mode there is nothing held.
func (r *Recorder) Shutdown() {
	if r.bc != nil {
		r.bc.Shutdown()
	}
}

// write creates the Event named for its object, type, reason and message
// (see Name), or counts one more of it when it exists.
func (r *Recorder) write(ctx context.Context, obj runtime.Object, eventType, reason, message string) error {
	ref, err := reference.GetReference(scheme.Scheme, obj)
	if err != nil {
		return fmt.Errorf("refer to the object of a %s event: %w", reason, err)
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	now := metav1.NewTime(r.clock.Now())
	name := Name(ref, eventType, reason, message)
	events := r.client.CoreV1().Events(ref.Namespace)
	_, err = events.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ref.Namespace},
		InvolvedObject: *ref,
		Type:           eventType,
		Reason:         reason,
		Message:        message,
		Source:         r.source,
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}, metav1.CreateOptions{})
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

// Name is the name of the Event of type eventType, reason and message
// about ref: the object's name and 16 hex digits of a hash of what makes
// two Events the same one. The object's kind and uid are in the hash, so
// Deployment web and Service web with the same message are two Events.
func Name(ref *corev1.ObjectReference, eventType, reason, message string) string {
	sum := sha256.Sum256([]byte(ref.Kind + "\x00" + string(ref.UID) + "\x00" + eventType + "\x00" + reason + "\x00" + message))
	return ref.Name + "." + hex.EncodeToString(sum[:8])
}
