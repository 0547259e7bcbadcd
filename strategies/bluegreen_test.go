package strategies

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
)

// delay30s is the scale-down delay of the tests, the default of
// plimsoll.dev/scale-down-delay.
const delay30s = 30 * time.Second

// blueGreenDesired is revision 4 of web with n replicas, a 30s scale-down
// delay and auto-rollback on.
func blueGreenDesired(n int32, autoPromote bool) BlueGreenDesired {
	return BlueGreenDesired{Desired: desiredN(n), AutoPromote: autoPromote, ScaleDownDelay: delay30s}
}

// colorDeploy is the Deployment web-<c> running tmpl, the color in its
// template as plimsoll writes it.
func colorDeploy(c Color, tmpl corev1.PodTemplateSpec, fs ...func(*appsv1.Deployment)) *appsv1.Deployment {
	return deployment(tmpl, append([]func(*appsv1.Deployment){
		named("web-" + string(c)), withTemplateLabel(contract.LabelColor, string(c))}, fs...)...)
}

// blueGreenCase is one PlanBlueGreen input: revision 4 of web with 4
// replicas and auto-promote unless desired says otherwise, planned at
// t0+now.
type blueGreenCase struct {
	name                   string
	desired                *BlueGreenDesired
	recorded               Status
	blue, green, legacy    *appsv1.Deployment
	active                 Color
	scaleDownAt            time.Time
	now                    time.Duration
	paused, promote, abort bool
	rsets                  []*appsv1.ReplicaSet
	pods                   map[Color][]Pod
	want                   blueGreenWant
	// rests says that the plan, once executed, is where the workload
	// stays until something changes: planning again changes nothing.
	rests bool
}

// blueGreenWant is the outcome of a plan. Revision 0 and hash "" stand for
// revision 4 and h4. Replicas and roles are those of the colors whose
// Deployment exists.
type blueGreenWant struct {
	phase           Phase
	words           []string
	revision        int64
	hash, failed    string
	replicas        map[Color]int32
	legacy          *int32
	active, preview Color
	roles           map[Color]Role
	scaleDownAt     time.Time
	requeue         time.Duration
	acted           string
}

// inputs returns the planner's arguments for c.
func (c blueGreenCase) inputs() (BlueGreenDesired, Status, BlueGreenObserved) {
	desired := blueGreenDesired(4, true)
	if c.desired != nil {
		desired = *c.desired
	}
	return desired, c.recorded, BlueGreenObserved{
		Blue: c.blue, Green: c.green, Legacy: c.legacy, Active: c.active, ScaleDownAt: c.scaleDownAt,
		Paused: c.paused, Promote: c.promote, Abort: c.abort, Now: at(c.now), ReplicaSets: c.rsets, Pods: c.pods,
	}
}

// existing keeps the entries of m whose color has a Deployment in o: what
// the plan asks of an absent color is moot.
func existing[V any](m map[Color]V, o BlueGreenObserved) map[Color]V {
	kept := map[Color]V{}
	for c, v := range m {
		if o.Deployment(c) != nil {
			kept[c] = v
		}
	}
	return kept
}

// checkBlueGreen compares plan with want, for the observed state o.
func checkBlueGreen(t *testing.T, plan BlueGreenPlan, desired BlueGreenDesired, o BlueGreenObserved, want blueGreenWant) {
	t.Helper()
	revision, hash := cmp.Or(want.revision, 4), cmp.Or(want.hash, h4)
	checkStatus(t, plan.Status, desired.Desired, want.phase, revision, hash, want.failed, want.words)
	if got := existing(plan.Replicas, o); !maps.Equal(got, existing(want.replicas, o)) {
		t.Errorf("replicas %v, want %v", got, want.replicas)
	}
	if !reflect.DeepEqual(plan.LegacyReplicas, want.legacy) {
		t.Errorf("legacy replicas %v, want %v", replicasOrNil(plan.LegacyReplicas), replicasOrNil(want.legacy))
	}
	if plan.Active != want.active || plan.Preview != want.preview {
		t.Errorf("active %q, preview %q; want active %q, preview %q", plan.Active, plan.Preview, want.active, want.preview)
	}
	if got := existing(plan.Roles, o); !maps.Equal(got, existing(want.roles, o)) {
		t.Errorf("roles %v, want %v", got, want.roles)
	}
	if !plan.ScaleDownAt.Equal(want.scaleDownAt) || plan.RequeueAfter != want.requeue {
		t.Errorf("scale down at %s, requeue after %s; want %s, %s", plan.ScaleDownAt, plan.RequeueAfter, want.scaleDownAt, want.requeue)
	}
	if want.acted == "" && plan.Acted != "" {
		t.Errorf("acted %q, want nothing", plan.Acted)
	}
	checkMessage(t, plan.Acted, []string{want.acted})
}

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

// TestPlanBlueGreenIsIdempotent executes each resting plan of
// blueGreenCases the way the controller does and plans again from what it
// left, as a restarted controller would: the second plan records the same
// status and scale-down time, keeps the Service where it is and scales
// nothing, whether the Deployment controller has observed the write of the
// first plan yet or not.
func TestPlanBlueGreenIsIdempotent(t *testing.T) {
	for _, tt := range blueGreenCases() {
		if !tt.rests {
			continue
		}
		for _, caughtUp := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, Deployment controller caught up %v", tt.name, caughtUp), func(t *testing.T) {
				desired, recorded, o := tt.inputs()
				first := PlanBlueGreen(desired, recorded, o)
				if again := PlanBlueGreen(desired, recorded, o); !reflect.DeepEqual(again, first) {
					t.Fatalf("the same inputs planned twice differ:\n %+v\n %+v", first, again)
				}
				o = executeBlueGreen(first, recorded, o, caughtUp)
				second := PlanBlueGreen(desired, first.Status, o)
				if first.RequeueAfter == waitForEndpoints {
					// executeBlueGreen made the scale-down the first plan held
					// back until after the swap: nothing is left to wait for.
					first.RequeueAfter = 0
				}
				if second.Status != first.Status {
					t.Errorf("second plan records\n %+v\nafter\n %+v", second.Status, first.Status)
				}
				if (second.Active != "" && second.Active != o.Active) || !second.ScaleDownAt.Equal(first.ScaleDownAt) ||
					second.RequeueAfter != first.RequeueAfter || second.Acted != "" {
					t.Errorf("second plan: active %q, scale down at %s, requeue %s, acted %q; after active %q, %s, %s",
						second.Active, second.ScaleDownAt, second.RequeueAfter, second.Acted, o.Active, first.ScaleDownAt, first.RequeueAfter)
				}
				for c, n := range existing(second.Replicas, o) {
					if n != liveReplicas(o.Deployment(c)) {
						t.Errorf("second plan scales %s from %d to %d", c, liveReplicas(o.Deployment(c)), n)
					}
				}
				if l := second.LegacyReplicas; l != nil && (o.Legacy == nil || *l != liveReplicas(o.Legacy)) {
					t.Errorf("second plan scales the legacy Deployment to %d", *l)
				}
			})
		}
	}
}

// executeBlueGreen returns o after the controller executed plan on top of
// recorded: counts written, the Service swapped, the scale-down time
// recorded and the commands cleared. Every write bumps a color's
// generation (status and scale-down time are annotations of every color).
// With caughtUp, the Deployment controller has observed them all and every
// pod asked for is available; without, each color's status stays as it
// was. A color's progress condition stays as it was.
func executeBlueGreen(plan BlueGreenPlan, recorded Status, o BlueGreenObserved, caughtUp bool) BlueGreenObserved {
	annotated := plan.Status != recorded || !plan.ScaleDownAt.Equal(o.ScaleDownAt)
	write := func(d *appsv1.Deployment, n int32, scales, stamped bool) *appsv1.Deployment {
		if d == nil || (!stamped && (!scales || n == liveReplicas(d))) {
			return d
		}
		d = d.DeepCopy()
		d.Generation++
		if scales {
			withSpecReplicas(n)(d)
		}
		if caughtUp {
			withPods(liveReplicas(d), liveReplicas(d), liveReplicas(d), liveReplicas(d))(d)
			d.Status.ObservedGeneration = d.Generation
		}
		return d
	}
	b, okB := plan.Replicas[ColorBlue]
	g, okG := plan.Replicas[ColorGreen]
	o.Blue, o.Green = write(o.Blue, b, okB, annotated), write(o.Green, g, okG, annotated)
	if plan.LegacyReplicas != nil {
		o.Legacy = write(o.Legacy, *plan.LegacyReplicas, true, false)
	}
	if plan.Active != "" {
		o.Active = plan.Active
	}
	o.ScaleDownAt = plan.ScaleDownAt
	o.Promote, o.Abort = false, false
	return o
}

// TestPlanBlueGreenScaledByHand: the active color scaled by hand from
// Git's 2 to 5 goes back to 2 in the next plan, its pods being endpoints:
// 5 serve, 3 go, 2 stay, Git's count. The phase says so until it has.
func TestPlanBlueGreenScaledByHand(t *testing.T) {
	desired := blueGreenDesired(2, true)
	recorded := Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4, Message: "revision 4 (commit def5678) on blue: 2/2 available"}
	blue := colorDeploy(ColorBlue, podtemplate.Stamp(v4), withSpecReplicas(5), withPods(5, 5, 5, 5))
	green := colorDeploy(ColorGreen, podtemplate.Stamp(v3), withSpecReplicas(0), withPods(0, 0, 0, 0))
	var endpoints []string
	for i := range 5 {
		endpoints = append(endpoints, fmt.Sprintf("web-blue-7d9c556656-p%d", i))
	}
	plan := PlanBlueGreen(desired, recorded, BlueGreenObserved{Blue: blue, Green: green, Active: ColorBlue, ActiveEndpoints: endpoints, Now: t0})
	if plan.Status.Phase != PhaseProgressing || plan.Status.Message != "revision 4 (commit def5678) on blue: scaling from 5 back to 2 replicas" {
		t.Errorf("status %s %q, want Progressing, scaling back to 2", plan.Status.Phase, plan.Status.Message)
	}
	var scaled *int32
	for _, a := range plan.Actions {
		if a.Kind == ActionWrite && a.Deployment == contract.SuffixBlue {
			scaled = a.Replicas
		}
	}
	if scaled == nil || *scaled != 2 {
		t.Errorf("blue written with replicas %v, want 2; actions %+v", scaled, plan.Actions)
	}
}

// TestPlanBlueGreenRetargetsAutoscaler: the HPA scales the color that
// serves. On an HPA still on <name> (from before the switch to
// blue-green) or on the other color, the plan points it at the active
// color, after any swap; one on it already, or no HPA, is left alone.
func TestPlanBlueGreenRetargetsAutoscaler(t *testing.T) {
	desired := blueGreenDesired(2, true)
	recorded := Status{Phase: PhaseHealthy, Revision: 4, Hash: h4, Commit: commitV4, Message: "revision 4 (commit def5678) on blue: 2/2 available"}
	blue := colorDeploy(ColorBlue, podtemplate.Stamp(v4), withSpecReplicas(2), withPods(2, 2, 2, 2))
	green := colorDeploy(ColorGreen, podtemplate.Stamp(v3), withSpecReplicas(0), withPods(0, 0, 0, 0))
	endpoints := []string{"web-blue-7d9c556656-p0", "web-blue-7d9c556656-p1"}
	tests := []struct {
		name        string
		autoscaled  bool
		scaleTarget string
		want        []string // the Deployments retargeted to
	}{
		{"on <name>", true, "", []string{contract.SuffixBlue}},
		{"on the other color", true, contract.SuffixGreen, []string{contract.SuffixBlue}},
		{"on the active color", true, contract.SuffixBlue, nil},
		{"no autoscaler", false, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanBlueGreen(desired, recorded, BlueGreenObserved{Blue: blue, Green: green, Active: ColorBlue, ActiveEndpoints: endpoints,
				Autoscaled: tt.autoscaled, ScaleTarget: tt.scaleTarget, Now: t0})
			var got []string
			for _, a := range plan.Actions {
				if a.Kind == ActionRetarget {
					got = append(got, a.Deployment)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("retargeted to %q, want %q; actions %+v", got, tt.want, plan.Actions)
			}
		})
	}
}
