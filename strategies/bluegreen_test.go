package strategies

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// swapCases take revision 4 of web with n replicas from blue (active,
// revision 3) to green and scale blue down 30s after the swap.
func swapCases(n int32) []blueGreenCase {
	manual := blueGreenDesired(n, false)
	blue := colorDeploy(ColorBlue, v3, sized(n))
	green := colorDeploy(ColorGreen, v4, sized(n))
	// blueScaling asks for 0 pods, the Deployment controller not having
	// reported it since.
	blueScaling := colorDeploy(ColorBlue, v3, withSpecReplicas(0), withPods(n, n, n, n))
	goingOut := blueGreenWant{phase: PhaseProgressing, replicas: map[Color]int32{ColorBlue: n, ColorGreen: n},
		active: ColorBlue, preview: ColorGreen, roles: map[Color]Role{ColorBlue: RoleActive, ColorGreen: RolePreview}}
	with := func(w blueGreenWant, words ...string) blueGreenWant { w.words = words; return w }
	swapped := blueGreenWant{phase: PhaseProgressing, words: []string{"revision 4 (commit def5678) serves from green", "blue scales down at 12:00:30"},
		replicas: map[Color]int32{ColorBlue: n, ColorGreen: n}, active: ColorGreen, preview: ColorGreen,
		roles: map[Color]Role{ColorGreen: RoleActive, ColorBlue: RoleIdle}, scaleDownAt: at(delay30s), requeue: delay30s}
	settled := blueGreenWant{phase: PhaseProgressing, replicas: map[Color]int32{ColorGreen: n}, active: ColorGreen, preview: ColorGreen,
		roles: map[Color]Role{ColorGreen: RoleActive, ColorBlue: RoleIdle}, scaleDownAt: at(delay30s)}
	afterDelay := settled
	afterDelay.replicas = map[Color]int32{ColorGreen: n, ColorBlue: 0}
	afterDelay.words = []string{"scaling blue down"}
	paused := with(goingOut, "ready on green", "waiting for promote")
	paused.phase = PhasePaused
	promoted := swapped
	promoted.acted = "promoted green"
	waiting := settled
	waiting.words, waiting.requeue = []string{"blue scales down at 12:00:30"}, 20*time.Second
	lagged := settled
	lagged.scaleDownAt, lagged.words = time.Time{}, []string{"revision 4 (commit def5678) serves from green; scaling blue down"}
	// greenLagging runs n available pods the Deployment controller has
	// yet to report.
	greenLagging := colorDeploy(ColorGreen, v4, withSpecReplicas(n), withPods(n, n, 0, 0))
	healthy := settled
	healthy.phase, healthy.scaleDownAt = PhaseHealthy, time.Time{}
	healthy.words = []string{fmt.Sprintf("revision 4 (commit def5678) on green: %d/%d available", n, n)}

	return []blueGreenCase{
		{
			name:     "green carries revision 4 at 0 pods: both colors go to N, traffic stays on blue",
			recorded: progressing4, blue: blue, green: colorDeploy(ColorGreen, v4, sized(0)), active: ColorBlue,
			want: with(goingOut, fmt.Sprintf("on green: waiting for %d available", n)),
		},
		{
			name:     "green N-1 of N available: no swap, and the same line as at 0",
			recorded: progressing4, blue: blue, green: colorDeploy(ColorGreen, v4, withSpecReplicas(n), withPods(n, n, n-1, n-1), rolling), active: ColorBlue,
			want: with(goingOut, fmt.Sprintf("on green: waiting for %d available", n)),
		},
		{
			name:     "green N/N/N but its latest spec not observed: no swap, the recorded message stands",
			recorded: withMessage(progressing4, "revision 4 on green: 1/N available"), blue: blue,
			green: colorDeploy(ColorGreen, v4, sized(n), withGeneration(3, 2)), active: ColorBlue,
			want: with(goingOut, "revision 4 on green: 1/N available"),
		},
		{
			name:     "green N available but one pod of an older template left: no swap",
			recorded: progressing4, blue: blue, green: colorDeploy(ColorGreen, v4, withSpecReplicas(n), withPods(n+1, n, n, n), rolling), active: ColorBlue,
			want: with(goingOut, "on green"),
		},
		{
			name:     "green fully available, auto-promote: the active Service swaps to green; blue stays at N for 30s",
			recorded: progressing4, blue: blue, green: green, active: ColorBlue,
			want: swapped, rests: true,
		},
		{
			name:    "green fully available, auto-promote off: Paused until promote",
			desired: &manual, recorded: progressing4, blue: blue, green: green, active: ColorBlue,
			want: paused, rests: true,
		},
		{
			name:    "green fully available, auto-promote off, promote: swap",
			desired: &manual, recorded: progressing4, blue: blue, green: green, active: ColorBlue, promote: true,
			want: promoted, rests: true,
		},
		{
			name:     "10s after the swap: blue keeps its pods; plan again in 20s",
			recorded: progressing4, blue: blue, green: green, active: ColorGreen, scaleDownAt: at(delay30s), now: 10 * time.Second,
			want: waiting, rests: true,
		},
		{
			name:     "the delay ran out: blue to 0",
			recorded: progressing4, blue: blue, green: green, active: ColorGreen, scaleDownAt: at(delay30s), now: delay30s,
			want: afterDelay,
		},
		{
			name:     "blue asks for 0 pods but one still runs: not Healthy yet",
			recorded: progressing4, blue: colorDeploy(ColorBlue, v3, withSpecReplicas(0), withPods(1, 1, 1, 1)), green: green,
			active: ColorGreen, scaleDownAt: at(delay30s), now: 40 * time.Second, pods: map[Color][]Pod{ColorBlue: {serving("b0")}},
			want: afterDelay,
		},
		{
			name:     "blue asks for 0, its ReplicaSet observed that and still counts its pods, none left in the caches: Healthy",
			recorded: progressing4, blue: blueScaling, green: green, active: ColorGreen, scaleDownAt: at(delay30s), now: 40 * time.Second,
			rsets: []*appsv1.ReplicaSet{ownRS(blueScaling, "web-blue-5f6d7c8b9a", 0, n, n)},
			pods:  map[Color][]Pod{ColorBlue: {servingDeleting("b0")}},
			want:  healthy,
		},
		{
			name:     "blue asks for 0, its ReplicaSet observed that, one pod still running: not Healthy yet",
			recorded: progressing4, blue: blueScaling, green: green, active: ColorGreen, scaleDownAt: at(delay30s), now: 40 * time.Second,
			rsets: []*appsv1.ReplicaSet{ownRS(blueScaling, "web-blue-5f6d7c8b9a", 0, n, n)},
			pods:  map[Color][]Pod{ColorBlue: {serving("b0")}},
			want:  afterDelay,
		},
		{
			name:     "blue asks for 0, its ReplicaSet not yet observing that, no pod in the caches: not Healthy yet",
			recorded: progressing4, blue: blueScaling, green: green, active: ColorGreen, scaleDownAt: at(delay30s), now: 40 * time.Second,
			rsets: []*appsv1.ReplicaSet{func() *appsv1.ReplicaSet {
				rs := ownRS(blueScaling, "web-blue-5f6d7c8b9a", 0, n, n)
				rs.Generation = 4
				return rs
			}()},
			want: afterDelay,
		},
		{
			name:     "blue runs no pod, green's pods all available but not yet reported by the Deployment controller: the scale-down's line stays",
			recorded: progressing4, blue: colorDeploy(ColorBlue, v3, sized(0)), green: greenLagging, active: ColorGreen, scaleDownAt: at(delay30s), now: 40 * time.Second,
			rsets: []*appsv1.ReplicaSet{ownRS(greenLagging, "web-green-7d9c556656", n, n, n)},
			want:  lagged,
		},
		{
			name:     "blue runs no pod: Healthy, no scale-down pending",
			recorded: progressing4, blue: colorDeploy(ColorBlue, v3, sized(0)), green: green, active: ColorGreen, scaleDownAt: at(delay30s), now: 40 * time.Second,
			want: healthy, rests: true,
		},
		{
			name:     "revision 4 not recorded yet, green fully available: swap as revision 4",
			recorded: Status{Phase: PhaseHealthy, Revision: 3, Hash: h3, Commit: commitV3}, blue: blue, green: green, active: ColorBlue,
			want: swapped,
		},
	}
}

// blueGreenCases are swapCases at N = 1, 4 and 10, then the first
// rollout, the switch from rolling, abort, failure, refusal and pause at
// N = 4.
func blueGreenCases() []blueGreenCase {
	var cases []blueGreenCase
	for _, n := range []int32{1, 4, 10} {
		for _, c := range swapCases(n) {
			c.name = fmt.Sprintf("N=%d: %s", n, c.name)
			if c.desired == nil {
				c.desired = ptrTo(blueGreenDesired(n, true))
			}
			cases = append(cases, c)
		}
	}

	noRollback := blueGreenDesired(4, true)
	noRollback.AutoRollback = false
	healthy5 := Status{Phase: PhaseHealthy, Revision: 5, Hash: h5, FailedHash: h4, Commit: commitV5}
	blue3, blue4 := colorDeploy(ColorBlue, v3, sized(4)), colorDeploy(ColorBlue, v4, sized(4))
	manual4 := blueGreenDesired(4, false)
	green4 := colorDeploy(ColorGreen, v4, sized(4))
	greenHalf := colorDeploy(ColorGreen, v4, withSpecReplicas(4), withPods(4, 4, 2, 2), rolling)
	greenFailed := colorDeploy(ColorGreen, v4, withSpecReplicas(4), withPods(4, 4, 2, 2), timedOut)
	legacy := func(n int32) *appsv1.Deployment { return deployment(v3, sized(n)) } // Deployment web, rolling before
	both := func(b, g int32) map[Color]int32 { return map[Color]int32{ColorBlue: b, ColorGreen: g} }
	blueActive := map[Color]Role{ColorBlue: RoleActive, ColorGreen: RoleIdle}
	greenPreview := map[Color]Role{ColorBlue: RoleActive, ColorGreen: RolePreview}

	return append(cases, []blueGreenCase{
		{
			name:     "first rollout: no color active yet; blue takes revision 4 at 4",
			recorded: progressing4, blue: colorDeploy(ColorBlue, v4, sized(0)),
			want: blueGreenWant{phase: PhaseProgressing, words: []string{"on blue: waiting for 4 available"}, replicas: map[Color]int32{ColorBlue: 4},
				preview: ColorBlue, roles: map[Color]Role{ColorBlue: RolePreview}},
		},
		{
			name:     "first rollout: green already carries revision 4 (a restart): it stays the target",
			recorded: progressing4, green: colorDeploy(ColorGreen, v4, withSpecReplicas(4), withPods(4, 4, 1, 1), rolling),
			want: blueGreenWant{phase: PhaseProgressing, words: []string{"on green: waiting for 4 available"}, replicas: map[Color]int32{ColorGreen: 4},
				preview: ColorGreen, roles: map[Color]Role{ColorGreen: RolePreview}},
		},
		{
			name:     "first rollout: blue fully available: the active Service selects blue, nothing to scale down",
			recorded: progressing4, blue: blue4,
			want: blueGreenWant{phase: PhaseProgressing, words: []string{"serves from blue"}, replicas: map[Color]int32{ColorBlue: 4},
				active: ColorBlue, preview: ColorBlue, roles: map[Color]Role{ColorBlue: RoleActive}},
		},
		{
			name:    "first rollout, auto-promote off: nothing serves yet, so no promote is awaited",
			desired: &manual4, recorded: progressing4, blue: blue4,
			want: blueGreenWant{phase: PhaseProgressing, words: []string{"serves from blue"}, replicas: map[Color]int32{ColorBlue: 4},
				active: ColorBlue, preview: ColorBlue, roles: map[Color]Role{ColorBlue: RoleActive}},
		},
		{
			name:     "first rollout, swapped: Healthy",
			recorded: progressing4, blue: blue4, active: ColorBlue,
			want: blueGreenWant{phase: PhaseHealthy, words: []string{"on blue: 4/4 available"}, replicas: map[Color]int32{ColorBlue: 4},
				active: ColorBlue, preview: ColorBlue, roles: map[Color]Role{ColorBlue: RoleActive}},
			rests: true,
		},
		{
			name:     "switch from rolling: blue not available yet, web keeps serving",
			recorded: progressing4, legacy: legacy(4), blue: colorDeploy(ColorBlue, v4, withSpecReplicas(4), withPods(4, 4, 2, 2), rolling),
			want: blueGreenWant{phase: PhaseProgressing, words: []string{"on blue: waiting for 4 available"}, replicas: map[Color]int32{ColorBlue: 4},
				preview: ColorBlue, roles: map[Color]Role{ColorBlue: RolePreview}},
		},
		{
			name:     "switch from rolling: blue fully available: swap; web keeps its 4 pods for 30s",
			recorded: progressing4, legacy: legacy(4), blue: blue4,
			want: blueGreenWant{phase: PhaseProgressing, words: []string{"serves from blue", "web scales down at 12:00:30"},
				replicas: map[Color]int32{ColorBlue: 4}, active: ColorBlue, preview: ColorBlue, roles: map[Color]Role{ColorBlue: RoleActive},
				scaleDownAt: at(delay30s), requeue: delay30s},
			rests: true,
		},
		{
			name:     "switch from rolling, 10s after the swap: web keeps its pods",
			recorded: progressing4, legacy: legacy(4), blue: blue4, active: ColorBlue, scaleDownAt: at(delay30s), now: 10 * time.Second,
			want: blueGreenWant{phase: PhaseProgressing, words: []string{"web scales down at 12:00:30"}, replicas: map[Color]int32{ColorBlue: 4},
				active: ColorBlue, preview: ColorBlue, roles: map[Color]Role{ColorBlue: RoleActive}, scaleDownAt: at(delay30s), requeue: 20 * time.Second},
			rests: true,
		},
		{
			name:     "switch from rolling, the delay ran out: web to 0",
			recorded: progressing4, legacy: legacy(4), blue: blue4, active: ColorBlue, scaleDownAt: at(delay30s), now: delay30s,
			want: blueGreenWant{phase: PhaseProgressing, words: []string{"scaling web down"}, replicas: map[Color]int32{ColorBlue: 4}, legacy: ptrTo(int32(0)),
				active: ColorBlue, preview: ColorBlue, roles: map[Color]Role{ColorBlue: RoleActive}, scaleDownAt: at(delay30s)},
		},
		{
			name:     "switch from rolling, web at 0: Healthy",
			recorded: progressing4, legacy: legacy(0), blue: blue4, active: ColorBlue, scaleDownAt: at(delay30s), now: time.Minute,
			want: blueGreenWant{phase: PhaseHealthy, words: []string{"on blue: 4/4 available"}, replicas: map[Color]int32{ColorBlue: 4},
				active: ColorBlue, preview: ColorBlue, roles: map[Color]Role{ColorBlue: RoleActive}},
			rests: true,
		},
		{
			name:     "a restart between the swap and its record: the 30s start now",
			recorded: progressing4, blue: blue3, green: green4, active: ColorGreen,
			want: blueGreenWant{phase: PhaseProgressing, words: []string{"blue scales down at 12:00:30"}, replicas: map[Color]int32{ColorGreen: 4},
				active: ColorGreen, preview: ColorGreen, roles: map[Color]Role{ColorGreen: RoleActive, ColorBlue: RoleIdle},
				scaleDownAt: at(delay30s), requeue: delay30s},
			rests: true,
		},
		{
			name:     "abort before the swap: green to 0, traffic stays on blue",
			recorded: progressing4, blue: blue3, green: greenHalf, active: ColorBlue, abort: true,
			want: blueGreenWant{phase: PhaseDegraded, words: []string{"aborted revision 4", "traffic stays on blue"}, failed: h4,
				replicas: both(4, 0), active: ColorBlue, preview: ColorBlue, roles: blueActive, acted: "aborted revision 4"},
			rests: true,
		},
		{
			name:     "abort of revision 4 before its status was recorded: recorded as revision 4",
			recorded: Status{Phase: PhaseProgressing, Revision: 3, Hash: h3, Commit: commitV3}, blue: blue3, green: greenHalf, active: ColorBlue, abort: true,
			want: blueGreenWant{phase: PhaseDegraded, words: []string{"aborted revision 4"}, failed: h4,
				replicas: both(4, 0), active: ColorBlue, preview: ColorBlue, roles: blueActive, acted: "aborted revision 4"},
			rests: true,
		},
		{
			name:     "abort 10s after the swap, blue still at 4 and available: traffic back on blue in the same plan, green to 0",
			recorded: progressing4, blue: blue3, green: green4, active: ColorGreen, scaleDownAt: at(delay30s), now: 10 * time.Second, abort: true,
			want: blueGreenWant{phase: PhaseDegraded, words: []string{"revision 4 failed", "traffic back on blue"}, failed: h4,
				replicas: both(4, 0), active: ColorBlue, preview: ColorBlue, roles: blueActive, acted: "aborted revision 4",
				requeue: time.Second}, // green goes to 0 once the swap back is made
			rests: true,
		},
		{
			name:     "abort after the swap with blue down to 2 available: green keeps the traffic until blue is back at 4",
			recorded: progressing4, blue: colorDeploy(ColorBlue, v3, withSpecReplicas(4), withPods(4, 4, 2, 2)), green: green4,
			active: ColorGreen, scaleDownAt: at(delay30s), now: 10 * time.Second, abort: true,
			want: blueGreenWant{phase: PhaseDegraded, words: []string{"bringing blue back: waiting for 4 available"}, failed: h4,
				replicas: both(4, 4), active: ColorGreen, preview: ColorGreen, roles: map[Color]Role{ColorGreen: RoleActive, ColorBlue: RolePreview},
				scaleDownAt: at(delay30s), acted: "aborted revision 4"},
		},
		{
			name:     "abort once blue is scaled down: too late, and the Event says how to go back",
			recorded: progressing4, blue: colorDeploy(ColorBlue, v3, sized(0)), green: green4, active: ColorGreen, abort: true,
			want: blueGreenWant{phase: PhaseHealthy, words: []string{"on green: 4/4 available"}, replicas: map[Color]int32{ColorGreen: 4},
				active: ColorGreen, preview: ColorGreen, roles: map[Color]Role{ColorGreen: RoleActive, ColorBlue: RoleIdle},
				acted: "too late to abort: revision 4 is promoted; commit the previous revision to Git to go back"},
		},
		{
			name:     "green misses its progress deadline, auto-rollback on: green to 0, traffic stays on blue",
			recorded: progressing4, blue: blue3, green: greenFailed, active: ColorBlue,
			want: blueGreenWant{phase: PhaseDegraded, words: []string{"revision 4 failed on green", "progress deadline exceeded after 10s", "traffic stays on blue"},
				failed: h4, replicas: both(4, 0), active: ColorBlue, preview: ColorGreen, roles: greenPreview},
			rests: true,
		},
		{
			name:    "green misses its progress deadline, auto-rollback off: Degraded, green kept at 4",
			desired: &noRollback, recorded: progressing4, blue: blue3, green: greenFailed, active: ColorBlue,
			want: blueGreenWant{phase: PhaseDegraded, words: []string{"revision 4 failed on green", "auto-rollback is off"},
				failed: h4, replicas: both(4, 4), active: ColorBlue, preview: ColorGreen, roles: greenPreview},
			rests: true,
		},
		{
			name:    "first rollout failed with auto-rollback off: blue held at 4, no color active",
			desired: &noRollback, recorded: degraded4, blue: colorDeploy(ColorBlue, v4, withSpecReplicas(4), withPods(4, 4, 2, 2), timedOut),
			want: blueGreenWant{phase: PhaseDegraded, words: []string{degraded4.Message}, failed: h4, replicas: map[Color]int32{ColorBlue: 4},
				preview: ColorBlue, roles: map[Color]Role{ColorBlue: RolePreview}},
			rests: true,
		},
		{
			name:    "a failure held with auto-rollback off is undone by an abort",
			desired: &noRollback, recorded: degraded4, blue: blue3, green: greenFailed, active: ColorBlue, abort: true,
			want: blueGreenWant{phase: PhaseDegraded, words: []string{"aborted revision 4"}, failed: h4,
				replicas: both(4, 0), active: ColorBlue, preview: ColorBlue, roles: blueActive, acted: "aborted revision 4"},
			rests: true,
		},
		{
			name:     "Git asks for the failed template: not started, the recorded message stays",
			recorded: degraded4, blue: blue3, green: colorDeploy(ColorGreen, v4, sized(0), timedOut), active: ColorBlue,
			want: blueGreenWant{phase: PhaseDegraded, words: []string{degraded4.Message}, failed: h4,
				replicas: both(4, 0), active: ColorBlue, preview: ColorBlue, roles: blueActive},
			rests: true,
		},
		{
			name:     "Git goes back to a template that failed before: refused at revision 5, nothing started",
			recorded: healthy5, blue: colorDeploy(ColorBlue, v3, sized(0)), green: colorDeploy(ColorGreen, v5, sized(4)), active: ColorGreen,
			want: blueGreenWant{phase: PhaseDegraded, words: []string{"template " + h4 + " failed", "traffic stays on green", "not started again"},
				revision: 5, hash: h5, failed: h4, replicas: map[Color]int32{ColorGreen: 4, ColorBlue: 0},
				active: ColorGreen, preview: ColorGreen, roles: map[Color]Role{ColorGreen: RoleActive, ColorBlue: RoleIdle}},
			rests: true,
		},
		{
			name:     "pause command, green fully available: no swap",
			recorded: progressing4, blue: blue3, green: green4, active: ColorBlue, paused: true,
			want: blueGreenWant{phase: PhasePaused, words: []string{"ready on green", "paused"}, replicas: both(4, 4),
				active: ColorBlue, preview: ColorGreen, roles: greenPreview},
			rests: true,
		},
		{
			name:     "pause command, the delay ran out: blue is not scaled down",
			recorded: progressing4, blue: blue3, green: green4, active: ColorGreen, scaleDownAt: at(delay30s), now: 40 * time.Second, paused: true,
			want: blueGreenWant{phase: PhasePaused, words: []string{"paused before scaling blue down"}, replicas: map[Color]int32{ColorGreen: 4},
				active: ColorGreen, preview: ColorGreen, roles: map[Color]Role{ColorGreen: RoleActive, ColorBlue: RoleIdle}, scaleDownAt: at(delay30s)},
			rests: true,
		},
	}...)
}

func TestPlanBlueGreen(t *testing.T) {
	for _, tt := range blueGreenCases() {
		t.Run(tt.name, func(t *testing.T) {
			desired, recorded, o := tt.inputs()
			checkBlueGreen(t, PlanBlueGreen(desired, recorded, o), desired, o, tt.want)
		})
	}
}
