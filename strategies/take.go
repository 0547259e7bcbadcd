package strategies

import (
	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/contract"
)

// StableIntent is what a canary workload's stable Deployment takes of
// Git's intent (see TakeCanary).
type StableIntent int

// The intents of a stable Deployment.
const (
	// StableKept takes Git's metadata and keeps the template it runs: a
	// new revision goes out through the canary.
	StableKept StableIntent = iota
	// StableCreated creates the stable from Git: the workload's first
	// revision serves from it at once.
	StableCreated
	// StableFromColor makes the stable from the blue-green color that
	// serves, its template and count: a switch from blue-green.
	StableFromColor
	// StableRestored puts Git's template back on a stable that runs Git's
	// revision and had its template changed by hand.
	StableRestored
	// StableUndone puts Git's template back on a stable whose template
	// was rewound by hand (`kubectl rollout undo`) from Git's revision,
	// promoted, to an earlier one: as the same revision, not through the
	// canary steps a new revision takes.
	StableUndone
)

// CanaryIntent is what a canary workload's <name>-canary Deployment takes
// of Git's intent (see TakeCanary).
type CanaryIntent int

// The intents of a canary Deployment.
const (
	// CanaryNone intends nothing: there is none and none is due, or it
	// is being deleted after a hand-over (a new one is made once it is
	// gone).
	CanaryNone CanaryIntent = iota
	// CanaryKept takes Git's metadata and keeps the template it runs:
	// Git's already, a revision refused, or the template a hand-over is
	// going through with.
	CanaryKept
	// CanaryGit takes Git's template: a new revision (made paused at 0
	// when there is no canary, see IdleCanary).
	CanaryGit
)

// CanaryHeld is what a canary workload holds when Git hands it an intent,
// as the executor reads it (see TakeCanary).
type CanaryHeld struct {
	// Recorded is the status the stable Deployment records (or the
	// ReplicaSet that `kubectl rollout undo` left the latest on); Colors
	// what each blue-green color the workload still has records (a zero
	// Status for one that does not parse).
	Recorded Status
	Colors   []Status
	// Stable and Canary are <name> and <name>-canary, nil when absent.
	Stable, Canary *appsv1.Deployment
	// ColorServes reports whether the active Service of the blue-green
	// workload this was selects one of its colors.
	ColorServes bool
	// StableRunsGit and CanaryRunsGit report whether each runs Git's
	// template (stamped with Git's hash and not changed by hand since).
	StableRunsGit, CanaryRunsGit bool
	// StableRewound reports whether the stable's template was put back by
	// hand to an earlier revision's; KeepsHandEdits whether Git's
	// Deployment or the stable carries plimsoll.dev/kubectl-edits: keep.
	StableRewound, KeepsHandEdits bool
	// Replicas is the count Git's Deployment asks for; Autoscaled the
	// stable's count when a HorizontalPodAutoscaler scales it, nil when
	// none does.
	Replicas   int32
	Autoscaled *int32
	// StableTrack is the plimsoll.dev/track label of the stable's pods,
	// "" for none: a new canary takes the other one (see OtherTrack).
	StableTrack string
	// Intake is how the take is made.
	Intake Intake
}

// Intake is how a take is made: by the daemon, which follows the rollout
// for as long as it takes, or by a one-shot sync (plimsoll sync --once),
// after which nothing follows it; and whether the workload's primary
// records a workload at rest (see Status.AtRest).
type Intake struct {
	Once, AtRest bool
}

// Steps reports whether the step of the plan follows a take that intends
// writes or none (intends): always for the daemon and for a take that
// writes (its writes go out with the step's); in a one-shot sync that
// takes nothing, only for a workload at rest, whose step repairs what
// was changed by hand, since nothing follows a one-shot sync to do it
// later. A rollout under way is the daemon's to follow.
func (in Intake) Steps(intends bool) bool {
	return intends || !in.Once || in.AtRest
}

// CanaryTake is what a canary workload takes of Git's intent.
type CanaryTake struct {
	// Status is the status to record and Decision the revision's (see
	// TakeRevision).
	Status   Status
	Decision RevisionDecision
	// From is the strategy the workload switches from (contract's
	// strategy names), "" when it was a canary already.
	From string
	// FreshState drops what the previous strategy recorded besides the
	// status (a step, a pause, a run): it means nothing here. FirstStep
	// starts the steps afresh: a new revision.
	FreshState, FirstStep bool
	Stable                StableIntent
	Canary                CanaryIntent
	// CanaryCause reports whether the canary takes the commit as its
	// change cause: not when its template is Git's revision changed by
	// hand, which is the same revision.
	CanaryCause bool
	// Replicas is the workload's count, recorded in its state: the
	// autoscaler's when one scales the stable, which the steps share out
	// between the stable and the canary, else Git's.
	Replicas int32
	// CanaryReplicas and CanaryTrack are the count and the
	// plimsoll.dev/track label of a canary that takes Git's template:
	// the live canary's, or 0 pods and the other track than the stable's
	// for a new one, which CanaryPaused makes paused, idle until its
	// revision's first step (see IdleCanary).
	CanaryReplicas int32
	CanaryTrack    string
	CanaryPaused   bool
	// ResumeStable takes the stable out of a pause: a rolling workload's
	// spec.paused would hold its pods from taking the serving label for
	// ever, and a canary pauses by its own steps and commands.
	ResumeStable bool
	// Intake is how the take was made (see Steps).
	Intake Intake
}

// Steps reports whether the plan's step follows the take, which intends
// writes or none (see Intake.Steps).
func (t CanaryTake) Steps(intends bool) bool { return t.Intake.Steps(intends) }

// TakeCanary decides what a canary workload's Deployments take of Git's
// template of hash, from commit: which template and state each keeps, and
// the status of the take. A blue-green workload switching to canary
// serves from its active color until the stable, made from that color's
// template, is ready; its revisions count on from the colors'.
func TakeCanary(held CanaryHeld, hash, commit string) CanaryTake {
	var take CanaryTake
	role := Role(annotationsOf(held.Stable)[contract.AnnotationRole])
	switch {
	case held.ColorServes && len(held.Colors) > 0 && role != RoleStable:
		take.From = contract.StrategyBlueGreen
	case role == RolePrimary:
		take.From = contract.StrategyRolling
	}
	recorded := held.Recorded
	if len(held.Colors) > 0 && (take.From == contract.StrategyBlueGreen || held.Stable == nil) {
		recorded = Latest(recorded, held.Colors)
	}
	take.FreshState = take.From != ""
	take.Status, take.Decision = TakeRevision(recorded, hash, commit)
	take.FirstStep = take.Decision.Action == RevisionNew

	switch {
	case take.From == contract.StrategyBlueGreen:
		take.Stable = StableFromColor
	case held.Stable == nil:
		take.Stable = StableCreated
	case hashOf(held.Stable) == hash && !held.StableRunsGit:
		take.Stable = StableRestored
	case take.From != contract.StrategyRolling && held.StableRewound &&
		Undone(held.Stable, recorded, hash, held.KeepsHandEdits):
		take.Stable = StableUndone
	}

	take.Replicas = held.Replicas
	if held.Autoscaled != nil {
		take.Replicas = *held.Autoscaled
	}
	take.ResumeStable, take.Intake = take.From == contract.StrategyRolling, held.Intake
	take.Canary, take.CanaryCause = canaryIntent(held, take.Decision, hash)
	if live := held.Canary; take.Canary == CanaryGit && live != nil {
		take.CanaryReplicas, take.CanaryTrack = liveReplicas(live), live.Spec.Template.Labels[contract.LabelTrack]
	} else if take.Canary == CanaryGit {
		take.CanaryTrack, take.CanaryPaused = OtherTrack(held.StableTrack), true
	}
	return take
}

// canaryIntent is what the canary takes of Git's template of hash, and
// whether the commit is its change cause.
func canaryIntent(held CanaryHeld, decision RevisionDecision, hash string) (intent CanaryIntent, cause bool) {
	live := held.Canary
	switch {
	case live != nil && live.DeletionTimestamp != nil:
		return CanaryNone, false
	case live != nil && live.Spec.Paused && !IdleCanary(live):
		// Paused by a hand-over (see planHandOver), which goes through
		// with the template it has; a new revision's template goes to
		// the canary made after it.
		return CanaryKept, false
	case decision.Action != RevisionRefused && !held.CanaryRunsGit:
		return CanaryGit, hashOf(live) != hash
	case live != nil:
		return CanaryKept, false
	}
	return CanaryNone, false
}

// Undone reports whether Deployment d, which ran Git's revision of hash
// (recorded says so, and not failed), now carries another template that
// the controller stamped, the template of an earlier revision: put back
// by hand with `kubectl rollout undo`, or an old manifest applied with
// kubectl. A template changed in place keeps Git's stamp. Not undone: a
// workload Degraded (a rollback, or a retry, puts other templates back
// itself), an unstamped template (adopted as it runs), and a Deployment
// that keeps hand edits (plimsoll.dev/kubectl-edits: keep on it or on
// Git's).
func Undone(d *appsv1.Deployment, recorded Status, hash string, keepsHandEdits bool) bool {
	if d == nil || recorded.Hash != hash || recorded.FailedHash == hash || recorded.Phase == PhaseDegraded || keepsHandEdits {
		return false
	}
	stamp := d.Spec.Template.Annotations[contract.AnnotationTemplateHash]
	return stamp != "" && stamp != hash
}

// Latest returns the status of the latest revision among recorded and
// colors: a workload switching from blue-green counts its revisions on
// from its colors'.
func Latest(recorded Status, colors []Status) Status {
	for _, st := range colors {
		if st.Revision > recorded.Revision {
			recorded = st
		}
	}
	return recorded
}

func annotationsOf(d *appsv1.Deployment) map[string]string {
	if d == nil {
		return nil
	}
	return d.Annotations
}

// ColorIntent is what a blue-green workload's color Deployment takes of
// Git's intent (see TakeBlueGreen).
type ColorIntent int

// The intents of a color Deployment.
const (
	// ColorNone intends nothing: the color has no Deployment, and Git's
	// revision does not go to it.
	ColorNone ColorIntent = iota
	// ColorKept takes Git's metadata and keeps the template it runs.
	ColorKept
	// ColorGit takes Git's template: the revision goes out on this color
	// (made at 0 when it has no Deployment; its plan scales it up).
	ColorGit
)

// BlueGreenHeld is what a blue-green workload holds when Git hands it an
// intent, as the executor reads it (see TakeBlueGreen).
type BlueGreenHeld struct {
	// Recorded is the status the workload's primary records (or the
	// ReplicaSet that `kubectl rollout undo` left the latest on).
	Recorded Status
	// Blue and Green are <name>-blue and <name>-green, Legacy <name> (a
	// rolling or canary workload's, before it switched), nil when absent.
	Blue, Green, Legacy *appsv1.Deployment
	// Active is the color the active Service selects, "" for none.
	Active Color
	// BlueRunsGit and GreenRunsGit report whether each color runs Git's
	// template (stamped with Git's hash and not changed by hand since).
	BlueRunsGit, GreenRunsGit bool
	// ActiveRewound reports whether the active color's template was put
	// back by hand to an earlier revision's; KeepsHandEdits whether Git's
	// Deployment or the active color carries plimsoll.dev/kubectl-edits:
	// keep.
	ActiveRewound, KeepsHandEdits bool
	// Replicas is the count Git's Deployment asks for; Autoscaled the
	// count that serves when a HorizontalPodAutoscaler scales the
	// workload, nil when none does or its count is not known yet.
	Replicas   int32
	Autoscaled *int32
	// Scaled reports whether an autoscaler names a Deployment of the
	// workload, and ScaleTarget the suffix of the one it names: "" for
	// <name>, or a color's.
	Scaled      bool
	ScaleTarget string
	// Intake is how the take is made.
	Intake Intake
}

// BlueGreenTake is what a blue-green workload takes of Git's intent.
type BlueGreenTake struct {
	// Status is the status to record and Decision the revision's (see
	// TakeRevision).
	Status   Status
	Decision RevisionDecision
	// From is the strategy whose Deployment <name> still serves the
	// workload that switches to blue-green (contract's strategy names):
	// it serves until the first color takes over, no longer the primary.
	// "" when there is none.
	From string
	// FreshState drops what was recorded besides the status (a canary's
	// step, pause or run): no color exists yet, blue-green starts afresh.
	FreshState bool
	// Undone reports that the active color's template was put back by
	// hand from Git's revision (see Undone): Git's goes out again, to the
	// other color, and swaps in as any revision does.
	Undone bool
	// Target is the color Git's template goes to, or runs on (see
	// TargetColor); Blue and Green what each color takes. TargetCause
	// reports whether the target takes the commit as its change cause:
	// not when its template is Git's revision changed by hand, which is
	// the same revision.
	Target      Color
	Blue, Green ColorIntent
	TargetCause bool
	// Replicas is the workload's count, recorded in its state: the one
	// that serves when an autoscaler scales the workload, else Git's.
	// TargetReplicas is the count of the target color when it takes Git's
	// template: its own, or 0 for a new one, which its plan scales up.
	Replicas, TargetReplicas int32
	// Retarget reports that an autoscaler names another Deployment than
	// the active color (one Git has just added, naming <name>): the step
	// points it there.
	Retarget bool
	// Intake is how the take was made (see Steps).
	Intake Intake
	// Actions are the writes of the take made at once, before the plan
	// that follows: <name> of a workload switching from rolling or canary
	// (From) becomes idle (see ActionMetadata), no longer the primary.
	Actions []Action
}

// Steps reports whether the plan's step follows the take, which intends
// writes or none (see Intake.Steps): also in a one-shot sync that takes
// nothing, for an autoscaler to retarget, since nothing follows the sync
// to do it later.
func (t BlueGreenTake) Steps(intends bool) bool { return t.Retarget || t.Intake.Steps(intends) }

// Intent returns what color c takes.
func (t BlueGreenTake) Intent(c Color) ColorIntent {
	if c == ColorGreen {
		return t.Green
	}
	return t.Blue
}

// TakeBlueGreen decides what a blue-green workload's Deployments take of
// Git's template of hash, from commit: the color it goes to and the
// status of the take; every other color Deployment takes Git's
// metadata only.
func TakeBlueGreen(held BlueGreenHeld, hash, commit string) BlueGreenTake {
	var take BlueGreenTake
	switch Role(annotationsOf(held.Legacy)[contract.AnnotationRole]) {
	case RolePrimary:
		take.From = contract.StrategyRolling
	case RoleStable:
		take.From = contract.StrategyCanary
	}
	if take.From != "" {
		take.Actions = []Action{{Kind: ActionMetadata, Deployment: "", Role: RoleIdle}}
	}
	take.FreshState = held.Blue == nil && held.Green == nil
	take.Status, take.Decision = TakeRevision(held.Recorded, hash, commit)
	o := BlueGreenObserved{Blue: held.Blue, Green: held.Green, Active: held.Active}
	if active := o.Deployment(held.Active); held.Active != "" && active != nil {
		take.Undone = held.ActiveRewound && Undone(active, held.Recorded, hash, held.KeepsHandEdits)
	}
	take.Target = ColorBlue
	if take.Decision.Action != RevisionRefused {
		take.Target = TargetColor(hash, o)
	}
	runsGit := map[Color]bool{ColorBlue: held.BlueRunsGit, ColorGreen: held.GreenRunsGit}
	for _, c := range []Color{ColorBlue, ColorGreen} {
		intent, live := ColorNone, o.Deployment(c)
		switch {
		case c == take.Target && take.Decision.Action != RevisionRefused && !runsGit[c]:
			intent, take.TargetCause = ColorGit, hashOf(live) != hash
		case live != nil:
			intent = ColorKept
		}
		if c == ColorGreen {
			take.Green = intent
		} else {
			take.Blue = intent
		}
	}
	take.Replicas, take.Intake = held.Replicas, held.Intake
	if held.Autoscaled != nil {
		take.Replicas = *held.Autoscaled
	}
	if live := o.Deployment(take.Target); live != nil && take.Intent(take.Target) == ColorGit {
		take.TargetReplicas = liveReplicas(live)
	}
	take.Retarget = held.Active != "" && held.Scaled && held.ScaleTarget != held.Active.Suffix()
	return take
}
