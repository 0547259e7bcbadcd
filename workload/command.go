package workload

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"plimsoll.dev/plimsoll/contract"
)

// How SendCommand waits for the controller.
const (
	// commandTimeout is how long SendCommand waits for the controller to
	// clear the command.
	commandTimeout = 30 * time.Second
	// eventGrace is how long, once the command is cleared, SendCommand
	// waits for its Event before saying what the status says instead.
	eventGrace = 5 * time.Second
	// commandPoll is how often SendCommand looks.
	commandPoll = 200 * time.Millisecond
)

// SendCommand sets plimsoll.dev/command on the primary Deployment of
// workload name (or on its StatefulSet or DaemonSet), waits until the
// controller clears it, and returns what the controller said it did (the
// message of its Command Event). A command that cannot apply to the
// workload is refused without being set: promote and abort on a rolling
// workload, promote or abort with nothing going out, retry without a
// failed revision, resume of a workload not paused, pause of a set that
// is not rolled by canary.
func SendCommand(ctx context.Context, client kubernetes.Interface, ns, name, cmd string) (string, error) {
	w, err := find(ctx, client, ns, name)
	if err != nil {
		return "", err
	}
	if err := applies(w, cmd); err != nil {
		return "", err
	}
	sent, seen := time.Now().Add(-time.Second), eventCounts(commandEvents(ctx, client, w))
	if err := patchCommand(ctx, client, w, cmd); err != nil {
		return "", err
	}
	var said string
	var cleared time.Time
	err = wait.PollUntilContextTimeout(ctx, commandPoll, commandTimeout, true, func(ctx context.Context) (bool, error) {
		a, err := annotationsOf(ctx, client, w)
		if err != nil {
			return false, nil
		}
		if _, pending := a[contract.AnnotationCommand]; pending {
			return false, nil
		}
		if cleared.IsZero() {
			cleared = time.Now()
		}
		said = commandEvent(commandEvents(ctx, client, w), cmd, sent, seen)
		// Events are sent asynchronously (and may be dropped by the
		// recorder's rate limit): after a while, say what the status says.
		return said != "" || time.Since(cleared) > eventGrace, nil
	})
	if err != nil {
		return "", fmt.Errorf("the controller did not act on %s within %s (is the daemon running?); the command stays on %s %s", cmd, commandTimeout, w.kindName(), w.Primary)
	}
	if said == "" {
		now, err := find(ctx, client, ns, name)
		if err != nil {
			return "", err
		}
		said = fmt.Sprintf("%s: done; %s is %s: %s", cmd, name, now.Phase, now.Message)
	}
	return said, nil
}

// applies refuses a command that cannot apply to w as it is.
func applies(w Workload, cmd string) error {
	progressive := w.Strategy != contract.StrategyRolling
	switch cmd {
	case contract.CommandPromote, contract.CommandAbort:
		if !progressive {
			return fmt.Errorf("%s applies to blue-green and canary workloads; %s is %s", cmd, w.Name, w.Strategy)
		}
		if w.Phase == contract.PhaseHealthy || w.Phase == contract.PhaseDegraded {
			return fmt.Errorf("nothing to %s: %s is %s at revision %d", cmd, w.Name, w.Phase, w.Revision)
		}
	case contract.CommandRetry:
		if w.FailedHash == "" {
			return fmt.Errorf("nothing to retry: %s has no failed revision", w.Name)
		}
	case contract.CommandResume:
		if w.Phase != contract.PhasePaused {
			return fmt.Errorf("nothing to resume: %s is %s, not Paused", w.Name, w.Phase)
		}
	case contract.CommandPause:
		if w.Kind != "" && !progressive {
			return fmt.Errorf("pause applies to a StatefulSet or a DaemonSet rolled out by canary; %s %s is %s, and its own controller updates it", w.Kind, w.Name, w.Strategy)
		}
	default:
		return fmt.Errorf("unknown command %q (want promote, abort, retry, pause or resume)", cmd)
	}
	return nil
}

// commandEvents lists the Command Events about the object of w that
// takes commands; none when they cannot be read.
func commandEvents(ctx context.Context, client kubernetes.Interface, w Workload) []corev1.Event {
	list, err := client.CoreV1().Events(w.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": w.kindName(), "involvedObject.name": w.Primary, "reason": contract.ReasonCommand}.String()})
	if err != nil {
		return nil
	}
	return list.Items
}

// eventCounts is the count of each Event of events, by its uid.
func eventCounts(events []corev1.Event) map[types.UID]int32 {
	counts := make(map[types.UID]int32, len(events))
	for _, e := range events {
		counts[e.UID] = e.Count
	}
	return counts
}

// commandEvent returns the message of the newest of events for cmd since
// since that is not one of seen, the Events there were before the command
// (or one seen that has counted again since); "" when there is none yet.
// Two commands within a second are told apart so: the Events' times are
// in whole seconds.
func commandEvent(events []corev1.Event, cmd string, since time.Time, seen map[types.UID]int32) string {
	var newest *corev1.Event
	for i := range events {
		e := &events[i]
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if count, old := seen[e.UID]; old && e.Count <= count {
			continue
		}
		if at.Before(since.Truncate(time.Second)) || !strings.HasPrefix(e.Message, cmd) {
			continue
		}
		if newest == nil || at.After(newest.LastTimestamp.Time) {
			newest = e
		}
	}
	if newest == nil {
		return ""
	}
	return newest.Message
}
