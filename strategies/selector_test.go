package strategies

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// podWith is a pod of web with the given labels besides app=web, Ready
// or not.
func podWith(name string, isReady bool, extra ...string) *corev1.Pod {
	l := map[string]string{"app": "web"}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	status := corev1.ConditionFalse
	if isReady {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
}

// podsOf is n pods named prefix-0.. with the given readiness and labels.
func podsOf(prefix string, n int, isReady bool, extra ...string) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, podWith(fmt.Sprintf("%s-%d", prefix, i), isReady, extra...))
	}
	return pods
}

// names are the names of pods.
func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// TestGuardSelector refuses every selector a planner could ask for that
// would leave a Service with fewer ready endpoints than its strategy
// keeps, and lets through every one that keeps them: 4 replicas.
func TestGuardSelector(t *testing.T) {
	const color, serving = contract.LabelColor, contract.LabelServing
	app := map[string]string{"app": "web"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"app": "web"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	stable := podsOf("web-s", 4, true, serving, "true")
	blue := podsOf("web-blue-b", 4, true, color, "blue")
	green := podsOf("web-green-g", 4, true, color, "green")
	greenHalf := append(podsOf("web-green-g", 2, true, color, "green"), podsOf("web-green-h", 2, false, color, "green")...)
	deleting := podsOf("web-green-d", 4, true, color, "green")
	for _, p := range deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	all := func(sets ...[]*corev1.Pod) []*corev1.Pod {
		var out []*corev1.Pod
		for _, s := range sets {
			out = append(out, s...)
		}
		return out
	}
	for _, tt := range []struct {
		name          string
		current, next map[string]string
		endpoints     []string
		pods          []*corev1.Pod
		promise       int32
		safe          bool
	}{
		{"canary to blue-green keeping the serving key: no pod carries both", with(serving, "true"), with(serving, "true", color, "blue"),
			names(stable), all(stable, blue), 4, false},
		{"canary to blue-green dropping the serving key", with(serving, "true"), with(color, "blue"), names(stable), all(stable, blue), 4, true},
		{"blue-green to canary keeping the color key", with(color, "blue"), with(color, "blue", serving, "true"), names(blue), all(stable, blue), 4, false},
		{"blue-green to canary dropping the color key", with(color, "blue"), with(serving, "true"), names(blue), all(stable, blue), 4, true},
		{"swap to a color of 2 ready pods out of 4", with(color, "blue"), with(color, "green"), names(blue), all(blue, greenHalf), 4, false},
		{"swap to a color whose pods are being deleted", with(color, "blue"), with(color, "green"), names(blue), all(blue, deleting), 4, false},
		{"swap to a color at full size", with(color, "blue"), with(color, "green"), names(blue), all(blue, green), 4, true},
		{"swap to a color with no pod", with(color, "blue"), with(color, "green"), names(blue), blue, 4, false},
		{"select serving pods before any carries the label", app, with(serving, "true"), names(blue), blue, 4, false},
		{"select serving pods once the stable carries it", app, with(serving, "true"), names(stable), stable, 4, true},
		{"a first revision: nothing serves yet", app, with(color, "blue"), nil, greenHalf, 4, true},
		{"fewer serve than promised: the selector keeps them", with(color, "blue"), with(color, "green"), []string{"a", "b"}, greenHalf, 4, true},
		{"fewer serve than promised: the selector would drop one", with(color, "blue"), with(color, "green"), []string{"a", "b", "c"}, greenHalf, 4, false},
		{"a key dropped: the selector only widens", with(color, "blue"), app, names(blue), nil, 4, true},
		{"every key dropped: selects nothing", app, map[string]string{}, names(blue), blue, 4, false},
		{"a preview Service keeps nothing", with(color, "blue"), with(color, "green"), names(blue), greenHalf, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			check := GuardSelector(tt.current, tt.next, tt.endpoints, tt.pods, tt.promise)
			if check.Safe() != tt.safe {
				t.Errorf("%v -> %v: safe %v (%s), want %v", tt.current, tt.next, check.Safe(), check, tt.safe)
			}
		})
	}
}

// TestMovedOver: a Service carries a strategy's traffic once its selector
// has that strategy's key and not the other's.
func TestMovedOver(t *testing.T) {
	for _, tc := range []struct {
		target   string
		selector map[string]string
		want     bool
	}{
		{contract.StrategyBlueGreen, map[string]string{"app": "web", contract.LabelColor: "blue"}, true},
		{contract.StrategyBlueGreen, map[string]string{"app": "web", contract.LabelColor: "blue", contract.LabelServing: "true"}, false},
		{contract.StrategyBlueGreen, map[string]string{"app": "web", contract.LabelServing: "true"}, false},
		{contract.StrategyCanary, map[string]string{"app": "web", contract.LabelServing: "true"}, true},
		{contract.StrategyCanary, map[string]string{"app": "web", contract.LabelColor: "green"}, false},
		{contract.StrategyCanary, map[string]string{"app": "web"}, false},
	} {
		if got := MovedOver(tc.target, tc.selector); got != tc.want {
			t.Errorf("MovedOver(%s, %v) = %v, want %v", tc.target, tc.selector, got, tc.want)
		}
	}
}
