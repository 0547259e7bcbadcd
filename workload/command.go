package workload

import (
	"context"
	"fmt"
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
// workload name, waits until the controller clears it, and returns what
// the controller said it did (the message of its Command Event). A command
// that cannot apply to the workload is refused without being set: promote
// and abort on a rolling workload, promote or abort with nothing going out,
// retry without a failed revision, resume of a workload not paused.
func SendCommand(ctx context.Context, client kubernetes.Interface, ns, name, cmd string) (string, error) {
	w, err := Get(ctx, client, ns, name)
	if err != nil {
		return "", err
	}
	if err := applies(w, cmd); err != nil {
		return "", err
	}
	sent := time.Now().Add(-time.Second)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.AnnotationCommand, cmd)
	if _, err := client.AppsV1().Deployments(ns).Patch(ctx, w.Primary, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("set %s=%s on Deployment %s: %w", contract.AnnotationCommand, cmd, w.Primary, err)
	}
	var said string
	var cleared time.Time
	err = wait.PollUntilContextTimeout(ctx, commandPoll, commandTimeout, true, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, w.Primary, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if _, pending := d.Annotations[contract.AnnotationCommand]; pending {
			return false, nil
		}
		if cleared.IsZero() {
			cleared = time.Now()
		}
		said = commandEvent(ctx, client, ns, w.Primary, cmd, sent)
		// Events are sent asynchronously (and may be dropped by the
		// recorder's rate limit): after a while, say what the status says.
		return said != "" || time.Since(cleared) > eventGrace, nil
	})
	if err != nil {
		return "", fmt.Errorf("the controller did not act on %s within %s (is the daemon running?); the command stays on Deployment %s", cmd, commandTimeout, w.Primary)
	}
	if said == "" {
		now, err := Get(ctx, client, ns, name)
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
	default:
		return fmt.Errorf("unknown command %q (want promote, abort, retry, pause or resume)", cmd)
	}
	return nil
}

// commandEvent returns the message of the newest Command Event about
// Deployment name for cmd since since, "" when there is none yet.
func commandEvent(ctx context.Context, client kubernetes.Interface, ns, name, cmd string, since time.Time) string {
	list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "Deployment", "involvedObject.name": name, "reason": contract.ReasonCommand}.String()})
	if err != nil {
		return ""
	}
	var newest *corev1.Event
	for i := range list.Items {
		e := &list.Items[i]
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if at.Before(since.Truncate(time.Second)) || len(e.Message) < len(cmd) || e.Message[:len(cmd)] != cmd {
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
