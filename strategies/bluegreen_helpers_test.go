package strategies

import (
	"cmp"
	"maps"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/contract"
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
