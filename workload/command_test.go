package workload

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plimsoll.dev/plimsoll/contract"
)

// TestApplies refuses the commands that cannot apply, with a reason.
func TestApplies(t *testing.T) {
	rolling := Workload{Name: "web", Strategy: contract.StrategyRolling, Phase: "Healthy", Revision: 3}
	paused := Workload{Name: "api", Strategy: contract.StrategyCanary, Phase: "Paused", Revision: 2}
	healthy := Workload{Name: "api", Strategy: contract.StrategyCanary, Phase: "Healthy", Revision: 2}
	failed := Workload{Name: "api", Strategy: contract.StrategyCanary, Phase: "Degraded", Revision: 2, FailedHash: "abc"}
	agent := Workload{Kind: KindDaemonSet, Name: "agent", Strategy: contract.StrategyRolling, Phase: "Progressing", Revision: 2}
	db := Workload{Kind: KindStatefulSet, Name: "db", Strategy: contract.StrategyCanary, Phase: "Progressing", Revision: 2}
	tests := []struct {
		w    Workload
		cmd  string
		want string // "" when it applies
	}{
		{paused, contract.CommandPromote, ""},
		{paused, contract.CommandAbort, ""},
		{paused, contract.CommandResume, ""},
		{rolling, contract.CommandPause, ""},
		{failed, contract.CommandRetry, ""},
		{rolling, contract.CommandPromote, "promote applies to blue-green and canary workloads; web is rolling"},
		{healthy, contract.CommandAbort, "nothing to abort: api is Healthy at revision 2"},
		{failed, contract.CommandPromote, "nothing to promote: api is Degraded at revision 2"},
		{healthy, contract.CommandRetry, "nothing to retry"},
		{healthy, contract.CommandResume, "nothing to resume: api is Healthy, not Paused"},
		{healthy, "restart", `unknown command "restart"`},
		{agent, contract.CommandPause, "pause applies to a StatefulSet or a DaemonSet rolled out by canary; DaemonSet agent is rolling"},
		{db, contract.CommandPause, ""},
	}
	for _, tt := range tests {
		t.Run(tt.w.Kind+" "+tt.w.Phase+" "+tt.cmd, func(t *testing.T) {
			err := applies(tt.w, tt.cmd)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestCommandEventIsNew picks the Command Event of this command, not one
// of the same second that was there before it was sent, nor one for
// another command; an Event seen before that counts again is this one.
func TestCommandEventIsNew(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 7, 12, 0, 5, 0, time.UTC))
	event := func(uid, message string, count int32) corev1.Event {
		return corev1.Event{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Message: message, Count: count, LastTimestamp: at}
	}
	before := []corev1.Event{event("a", "promote: moved on from step 2/5", 1), event("b", "pause: paused", 1)}
	seen := eventCounts(before)
	since := at.Add(-time.Second)
	if got := commandEvent(before, "promote", since, seen); got != "" {
		t.Errorf("with only the Events from before: %q, want none", got)
	}
	after := append(slices.Clone(before), event("c", "promote: moved on from step 4/5", 1))
	if got := commandEvent(after, "promote", since, seen); got != "promote: moved on from step 4/5" {
		t.Errorf("with a new Event: %q, want it", got)
	}
	again := []corev1.Event{event("a", "promote: moved on from step 2/5", 2), before[1]}
	if got := commandEvent(again, "promote", since, seen); got != "promote: moved on from step 2/5" {
		t.Errorf("with an Event counted again: %q, want it", got)
	}
}
