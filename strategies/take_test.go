package strategies

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
)

// stamped is Deployment web running a template stamped with hash, in
// role (none for ""), its annotations otherwise empty.
func stamped(hash string, role Role, opts ...func(*appsv1.Deployment)) *appsv1.Deployment {
	t := webTemplate("registry.example/web:" + hash)
	t.Annotations = map[string]string{contract.AnnotationTemplateHash: hash}
	d := deployment(t, opts...)
	if role != "" {
		d.Annotations = map[string]string{contract.AnnotationRole: string(role)}
	}
	return d
}

func deleting(d *appsv1.Deployment) { d.DeletionTimestamp = &metav1.Time{} }

// onTrack labels d's pods with track.
func onTrack(track string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Labels[contract.LabelTrack] = track }
}
func idle(d *appsv1.Deployment) { d.Spec.Paused, d.Spec.Replicas = true, ptrTo(int32(0)) }

// checkHandOver fails t unless a take decided action for revision and
// records that revision.
func checkHandOver(t *testing.T, st Status, d RevisionDecision, revision int64, action RevisionAction) {
	t.Helper()
	if d.Action != action || d.Revision != revision || st.Revision != revision {
		t.Errorf("decision %v of revision %d, status revision %d; want %v of revision %d",
			d.Action, d.Revision, st.Revision, action, revision)
	}
}

// TestTakeCanary: what each Deployment of a canary workload takes of Git's
// template (hash "h2", commit V4) for each state the workload can be in
// when Git hands it over.
func TestTakeCanary(t *testing.T) {
	const git = "h2"
	healthy1 := Status{Revision: 1, Hash: "h1", Commit: commitV1, Phase: PhaseHealthy}
	healthy2 := Status{Revision: 2, Hash: git, Commit: commitV3, Phase: PhaseHealthy}
	for _, tc := range []struct {
		name string
		held CanaryHeld
		want CanaryTake // Status and Decision: see revision
		// revision is the revision the take records, and its action.
		revision int64
		action   RevisionAction
	}{
		{name: "first revision: the stable from Git, an idle canary made for the next",
			held: CanaryHeld{},
			want: CanaryTake{FirstStep: true, Stable: StableCreated, Canary: CanaryGit, CanaryCause: true,
				CanaryTrack: contract.TrackCanary, CanaryPaused: true},
			revision: 1, action: RevisionNew},
		{name: "a new revision goes to the idle canary; the stable keeps its template",
			held: CanaryHeld{Recorded: healthy1, Stable: stamped("h1", RoleStable), Canary: stamped("h1", RoleCanary, idle),
				StableRunsGit: false, CanaryRunsGit: false, Replicas: 4},
			want:     CanaryTake{FirstStep: true, Stable: StableKept, Canary: CanaryGit, CanaryCause: true, Replicas: 4},
			revision: 2, action: RevisionNew},
		{name: "Git's revision held: both kept",
			held: CanaryHeld{Recorded: healthy2, Stable: stamped(git, RoleStable), Canary: stamped(git, RoleCanary, idle),
				StableRunsGit: true, CanaryRunsGit: true},
			want:     CanaryTake{Stable: StableKept, Canary: CanaryKept},
			revision: 2, action: RevisionSame},
		{name: "the stable's template changed by hand: Git's goes back on it",
			held: CanaryHeld{Recorded: healthy2, Stable: stamped(git, RoleStable), Canary: stamped(git, RoleCanary, idle),
				StableRunsGit: false, CanaryRunsGit: true},
			want:     CanaryTake{Stable: StableRestored, Canary: CanaryKept},
			revision: 2, action: RevisionSame},
		{name: "the canary's template changed by hand mid-rollout: Git's again, as the same revision",
			held: CanaryHeld{Recorded: Status{Revision: 2, Hash: git, Phase: PhaseProgressing}, Stable: stamped("h1", RoleStable),
				Canary: stamped(git, RoleCanary, onTrack(contract.TrackCanaryNext)), StableRunsGit: false, CanaryRunsGit: false},
			want: CanaryTake{Stable: StableKept, Canary: CanaryGit, CanaryCause: false,
				CanaryReplicas: liveReplicasN, CanaryTrack: contract.TrackCanaryNext},
			revision: 2, action: RevisionSame},
		{name: "kubectl rollout undo of the promoted stable: Git's back as the same revision",
			held: CanaryHeld{Recorded: healthy2, Stable: stamped("h1", RoleStable), Canary: stamped(git, RoleCanary, idle),
				StableRewound: true, CanaryRunsGit: true},
			want:     CanaryTake{Stable: StableUndone, Canary: CanaryKept},
			revision: 2, action: RevisionSame},
		{name: "rewound, but hand edits are kept: the stable keeps what runs",
			held: CanaryHeld{Recorded: healthy2, Stable: stamped("h1", RoleStable), Canary: stamped(git, RoleCanary, idle),
				StableRewound: true, KeepsHandEdits: true, CanaryRunsGit: true},
			want:     CanaryTake{Stable: StableKept, Canary: CanaryKept},
			revision: 2, action: RevisionSame},
		{name: "rewound while Degraded: a rollback's own, not undone",
			held: CanaryHeld{Recorded: Status{Revision: 2, Hash: git, Phase: PhaseDegraded}, Stable: stamped("h1", RoleStable),
				Canary: stamped(git, RoleCanary, idle), StableRewound: true, CanaryRunsGit: true},
			want:     CanaryTake{Stable: StableKept, Canary: CanaryKept},
			revision: 2, action: RevisionSame},
		{name: "a refused revision: the canary keeps what it runs",
			held: CanaryHeld{Recorded: Status{Revision: 2, Hash: "h1", FailedHash: git, Phase: PhaseDegraded},
				Stable: stamped("h1", RoleStable), Canary: stamped("h1", RoleCanary, idle)},
			want:     CanaryTake{Stable: StableKept, Canary: CanaryKept},
			revision: 2, action: RevisionRefused},
		{name: "a refused revision and no canary: none is made",
			held: CanaryHeld{Recorded: Status{Revision: 2, Hash: "h1", FailedHash: git, Phase: PhaseDegraded},
				Stable: stamped("h1", RoleStable)},
			want:     CanaryTake{Stable: StableKept, Canary: CanaryNone},
			revision: 2, action: RevisionRefused},
		{name: "a canary paused by its hand-over goes through with its template",
			held: CanaryHeld{Recorded: Status{Revision: 2, Hash: "h1", Phase: PhaseProgressing}, Stable: stamped("h1", RoleStable),
				Canary: stamped("h1", RoleCanary, paused)},
			want:     CanaryTake{FirstStep: true, Stable: StableKept, Canary: CanaryKept},
			revision: 3, action: RevisionNew},
		{name: "a canary deleted after its hand-over: the next is made once it is gone",
			held:     CanaryHeld{Recorded: healthy1, Stable: stamped("h1", RoleStable), Canary: stamped("h1", RoleCanary, deleting)},
			want:     CanaryTake{FirstStep: true, Stable: StableKept, Canary: CanaryNone},
			revision: 2, action: RevisionNew},
		{name: "from rolling: the primary becomes the stable, its state dropped",
			held: CanaryHeld{Recorded: healthy1, Stable: stamped("h1", RolePrimary), StableRewound: true, StableTrack: contract.TrackCanary},
			want: CanaryTake{From: contract.StrategyRolling, FreshState: true, FirstStep: true, Stable: StableKept, Canary: CanaryGit, CanaryCause: true,
				CanaryTrack: contract.TrackCanaryNext, CanaryPaused: true, ResumeStable: true},
			revision: 2, action: RevisionNew},
		{name: "from blue-green: the stable made from the color that serves, revisions counting on from the colors",
			held: CanaryHeld{Colors: []Status{{Revision: 3, Hash: "h1", Phase: PhaseHealthy}, {}},
				ColorServes: true, Replicas: 4, Autoscaled: ptrTo(int32(6))},
			want: CanaryTake{From: contract.StrategyBlueGreen, FreshState: true, FirstStep: true, Stable: StableFromColor, Canary: CanaryGit, CanaryCause: true,
				CanaryTrack: contract.TrackCanary, CanaryPaused: true, Replicas: 6},
			revision: 4, action: RevisionNew},
		{name: "the switch from blue-green done: the stable is the stable, not remade",
			held: CanaryHeld{Recorded: healthy2, Colors: []Status{{Revision: 1, Hash: "h0"}}, ColorServes: true,
				Stable: stamped(git, RoleStable), Canary: stamped(git, RoleCanary, idle), StableRunsGit: true, CanaryRunsGit: true},
			want:     CanaryTake{Stable: StableKept, Canary: CanaryKept},
			revision: 2, action: RevisionSame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TakeCanary(tc.held, git, commitV4)
			checkHandOver(t, got.Status, got.Decision, tc.revision, tc.action)
			if got.Status, got.Decision = (Status{}), (RevisionDecision{}); got != tc.want {
				t.Errorf("take\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestUndone: a template put back by hand from Git's revision to an
// earlier one's stamp is undone; not so for Git's own stamp, an
// unstamped template, another revision recorded, a failure, or kept edits.
func TestUndone(t *testing.T) {
	recorded := Status{Revision: 2, Hash: "h2", Phase: PhaseHealthy}
	unstamped := deployment(webTemplate("registry.example/web:v0"))
	for _, tc := range []struct {
		name     string
		d        *appsv1.Deployment
		recorded Status
		keeps    bool
		want     bool
	}{
		{"an earlier revision's stamp", stamped("h1", RoleStable), recorded, false, true},
		{"Git's stamp", stamped("h2", RoleStable), recorded, false, false},
		{"unstamped", unstamped, recorded, false, false},
		{"none", nil, recorded, false, false},
		{"another revision recorded", stamped("h1", RoleStable), Status{Revision: 3, Hash: "h3"}, false, false},
		{"Degraded", stamped("h1", RoleStable), Status{Revision: 2, Hash: "h2", Phase: PhaseDegraded}, false, false},
		{"failed", stamped("h1", RoleStable), Status{Revision: 2, Hash: "h2", FailedHash: "h2"}, false, false},
		{"hand edits kept", stamped("h1", RoleStable), recorded, true, false},
	} {
		if got := Undone(tc.d, tc.recorded, "h2", tc.keeps); got != tc.want {
			t.Errorf("%s: Undone = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// colored is stamped's Deployment as web-<c>.
func colored(c Color, hash string, role Role) *appsv1.Deployment {
	d := stamped(hash, role)
	d.Name = "web-" + string(c)
	return d
}

// TestTakeBlueGreen: which color Git's template (hash "h2", commit V4)
// goes to, and what each color takes, for each state a blue-green
// workload can be in when Git hands it over.
func TestTakeBlueGreen(t *testing.T) {
	const git = "h2"
	healthy1 := Status{Revision: 1, Hash: "h1", Commit: commitV1, Phase: PhaseHealthy}
	healthy2 := Status{Revision: 2, Hash: git, Commit: commitV3, Phase: PhaseHealthy}
	for _, tc := range []struct {
		name     string
		held     BlueGreenHeld
		want     BlueGreenTake // but Status and Decision: see revision
		revision int64
		action   RevisionAction
	}{
		{name: "first revision: blue made from Git",
			held:     BlueGreenHeld{},
			want:     BlueGreenTake{FreshState: true, Target: ColorBlue, Blue: ColorGit, TargetCause: true},
			revision: 1, action: RevisionNew},
		{name: "a new revision goes to the idle color",
			held:     BlueGreenHeld{Recorded: healthy1, Blue: colored(ColorBlue, "h1", RoleActive), Green: colored(ColorGreen, "h0", RoleIdle), Active: ColorBlue},
			want:     BlueGreenTake{Target: ColorGreen, Blue: ColorKept, Green: ColorGit, TargetCause: true, TargetReplicas: liveReplicasN},
			revision: 2, action: RevisionNew},
		{name: "Git's revision serves: both kept",
			held: BlueGreenHeld{Recorded: healthy2, Blue: colored(ColorBlue, "h1", RoleIdle), Green: colored(ColorGreen, git, RoleActive),
				Active: ColorGreen, GreenRunsGit: true},
			want:     BlueGreenTake{Target: ColorGreen, Blue: ColorKept, Green: ColorKept},
			revision: 2, action: RevisionSame},
		{name: "the active color's template changed by hand: Git's again, as the same revision",
			held: BlueGreenHeld{Recorded: healthy2, Blue: colored(ColorBlue, "h1", RoleIdle), Green: colored(ColorGreen, git, RoleActive),
				Active: ColorGreen},
			want:     BlueGreenTake{Target: ColorGreen, Blue: ColorKept, Green: ColorGit, TargetReplicas: liveReplicasN},
			revision: 2, action: RevisionSame},
		{name: "kubectl rollout undo of the active color: Git's goes out to the other",
			held: BlueGreenHeld{Recorded: healthy2, Blue: colored(ColorBlue, "h1", RoleIdle), Green: colored(ColorGreen, "h1", RoleActive),
				Active: ColorGreen, ActiveRewound: true},
			want:     BlueGreenTake{Undone: true, Target: ColorBlue, Blue: ColorGit, Green: ColorKept, TargetCause: true, TargetReplicas: liveReplicasN},
			revision: 2, action: RevisionSame},
		{name: "rewound, hand edits kept: not undone",
			held: BlueGreenHeld{Recorded: healthy2, Blue: colored(ColorBlue, "h1", RoleIdle), Green: colored(ColorGreen, "h1", RoleActive),
				Active: ColorGreen, ActiveRewound: true, KeepsHandEdits: true},
			want:     BlueGreenTake{Target: ColorBlue, Blue: ColorGit, Green: ColorKept, TargetCause: true, TargetReplicas: liveReplicasN},
			revision: 2, action: RevisionSame},
		{name: "a refused revision: no color takes it",
			held: BlueGreenHeld{Recorded: Status{Revision: 2, Hash: "h1", FailedHash: git, Phase: PhaseDegraded},
				Blue: colored(ColorBlue, "h1", RoleActive), Active: ColorBlue},
			want:     BlueGreenTake{Target: ColorBlue, Blue: ColorKept, Green: ColorNone},
			revision: 2, action: RevisionRefused},
		{name: "from rolling: <name> serves until blue takes over",
			held:     BlueGreenHeld{Recorded: healthy1, Legacy: stamped("h1", RolePrimary)},
			want:     BlueGreenTake{From: contract.StrategyRolling, FreshState: true, Target: ColorBlue, Blue: ColorGit, TargetCause: true},
			revision: 2, action: RevisionNew},
		{name: "from canary: the stable serves until blue takes over",
			held:     BlueGreenHeld{Recorded: healthy1, Legacy: stamped("h1", RoleStable)},
			want:     BlueGreenTake{From: contract.StrategyCanary, FreshState: true, Target: ColorBlue, Blue: ColorGit, TargetCause: true},
			revision: 2, action: RevisionNew},
		{name: "autoscaled: the count that serves, not Git's; an autoscaler on <name> is retargeted",
			held: BlueGreenHeld{Recorded: healthy2, Blue: colored(ColorBlue, "h1", RoleIdle), Green: colored(ColorGreen, git, RoleActive),
				Active: ColorGreen, GreenRunsGit: true, Replicas: 2, Autoscaled: ptrTo(int32(7)), Scaled: true, ScaleTarget: ""},
			want:     BlueGreenTake{Target: ColorGreen, Blue: ColorKept, Green: ColorKept, Replicas: 7, Retarget: true},
			revision: 2, action: RevisionSame},
		{name: "an autoscaler on the active color stays",
			held: BlueGreenHeld{Recorded: healthy2, Blue: colored(ColorBlue, "h1", RoleIdle), Green: colored(ColorGreen, git, RoleActive),
				Active: ColorGreen, GreenRunsGit: true, Replicas: 2, Scaled: true, ScaleTarget: contract.SuffixGreen},
			want:     BlueGreenTake{Target: ColorGreen, Blue: ColorKept, Green: ColorKept, Replicas: 2},
			revision: 2, action: RevisionSame},
		{name: "the switch under way: <name> idle, green carries Git's before any swap",
			held: BlueGreenHeld{Recorded: Status{Revision: 2, Hash: git, Phase: PhaseProgressing}, Legacy: stamped("h1", RoleIdle),
				Green: colored(ColorGreen, git, RolePreview), GreenRunsGit: true},
			want:     BlueGreenTake{Target: ColorGreen, Green: ColorKept},
			revision: 2, action: RevisionSame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TakeBlueGreen(tc.held, git, commitV4)
			checkHandOver(t, got.Status, got.Decision, tc.revision, tc.action)
			// <name> of a workload switching to blue-green, and no other,
			// becomes idle at once.
			var idle []Action
			if tc.want.From != "" {
				idle = []Action{{Kind: ActionMetadata, Deployment: "", Role: RoleIdle}}
			}
			if !reflect.DeepEqual(got.Actions, idle) {
				t.Errorf("actions %+v, want %+v", got.Actions, idle)
			}
			got.Status, got.Decision, got.Actions = Status{}, RevisionDecision{}, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("take\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestTakeSteps: a one-shot sync that takes nothing steps only a workload
// at rest (to repair what was changed by hand), or a blue-green one whose
// autoscaler is to be retargeted; the daemon, and a take that writes,
// always step.
func TestTakeSteps(t *testing.T) {
	for _, tc := range []struct {
		name            string
		in              Intake
		intends, retarg bool
		// blueGreen and canary are each take's answer; a canary has no
		// autoscaler to retarget at intake.
		blueGreen, canary bool
	}{
		{"daemon", Intake{}, false, false, true, true},
		{"once, writes", Intake{Once: true}, true, false, true, true},
		{"once, nothing to write, under way", Intake{Once: true}, false, false, false, false},
		{"once, nothing to write, at rest", Intake{Once: true, AtRest: true}, false, false, true, true},
		{"once, under way, autoscaler astray", Intake{Once: true}, false, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (BlueGreenTake{Intake: tc.in, Retarget: tc.retarg}).Steps(tc.intends); got != tc.blueGreen {
				t.Errorf("blue-green Steps = %v, want %v", got, tc.blueGreen)
			}
			if got := (CanaryTake{Intake: tc.in}).Steps(tc.intends); got != tc.canary {
				t.Errorf("canary Steps = %v, want %v", got, tc.canary)
			}
		})
	}
}
