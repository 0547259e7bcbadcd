package rollout

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/analysis"
	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/strategies"
	workloads "plimsoll.dev/plimsoll/workload"
)

// canary is the live state of a canary workload as read for one step.
type canary struct {
	ns, name       string
	w              *workload
	stable, canary *appsv1.Deployment
	service        *corev1.Service
}

// readCanary takes the Deployments and the Service of a canary workload
// from w; annotations (Git's, or the stable Deployment's) name the Service
// and the steps. An unnamed or missing Service, or steps that do not
// parse, are an input error.
func readCanary(w *workload, annotations map[string]string) (*canary, []strategies.Step, error) {
	cy := &canary{ns: w.ns, name: w.name, w: w, stable: w.deployment(""), canary: w.deployment(contract.SuffixCanary)}
	if annotations == nil {
		annotations = annotationsOf(cy.stable)
	}
	var err error
	if cy.service, err = serviceOf(w, annotations, contract.AnnotationService); err != nil {
		return cy, nil, err
	}
	steps, err := canarySteps(annotations)
	return cy, steps, err
}

// reconcileCanary reconciles a canary workload: with an intent that its
// Deployments do not hold yet, it intends what strategies.TakeCanary
// takes of it (intendCanary); then one step
// of the plan, whose writes carry the intent too.
func (c *Controller) reconcileCanary(ctx context.Context, w *workload, in intent) error {
	var git map[string]string
	if in.git != nil {
		git = in.git.Annotations
	}
	cy, steps, err := readCanary(w, git)
	if err != nil {
		return c.markInvalid(ctx, w, err, git, cy.stable, cy.canary)
	}
	if in.git != nil {
		take, changed, err := c.intendCanary(ctx, cy, in)
		if err != nil {
			return err
		}
		if !take.Steps(changed) {
			return nil
		}
		if changed {
			// Plan the first step from what intendCanary intends: its
			// writes go out with the plan's.
			if cy, steps, err = readCanary(w, git); err != nil {
				return err
			}
		}
	}
	return c.stepCanary(ctx, cy, steps)
}

// intendCanary builds the Deployments of a canary workload's intake as
// strategies.TakeCanary decides it from what the workload holds, and
// chooses nothing itself: the stable Deployment is
// created from Git when absent (or from the color that serves, on a
// switch from blue-green), else gets Git's metadata; the Git template
// goes to <name>-canary with the commit as its change cause; every
// Deployment gets the status of the take. It writes nothing: what
// changes is intended (see workload.intend), and written by the plan that
// follows, in the same write as the first step. Writing the handoff
// first cost a write of each Deployment per revision, and the Deployment
// controller two of its own for each. It reports whether anything is to
// be written.
func (c *Controller) intendCanary(ctx context.Context, cy *canary, in intent) (strategies.CanaryTake, bool, error) {
	git, commit, subject := in.git, in.commit, in.subject
	desired := podtemplate.Hash(git.Spec.Template)
	recordedAt := recordedAnnotations(cy.stable, cy.w.rsets)
	recorded, err := strategies.ReadStatus(recordedAt)
	if err != nil {
		return strategies.CanaryTake{}, false, err
	}
	fromColor := servingColor(cy.w)
	held := strategies.CanaryHeld{Recorded: recorded, Stable: cy.stable, Canary: cy.canary,
		ColorServes:    fromColor != nil,
		StableRunsGit:  cy.stable != nil && c.runsGit(cy.stable, git, desired),
		CanaryRunsGit:  c.runsGit(cy.canary, git, desired),
		StableRewound:  cy.stable != nil && c.rewoundByHand(cy.stable, cy.w.rsets),
		KeepsHandEdits: cy.stable != nil && keepsHandEdits(git, cy.stable),
		Colors:         colorStatuses(cy.w),
		Replicas:       specReplicas(git),
		StableTrack:    annotatedTemplate(cy.stable).Labels[contract.LabelTrack],
		Intake:         strategies.Intake{Once: c.once.Load(), AtRest: recordedAtRest(cy.stable)}}
	if n, ok := cy.w.autoscaledCount(cy.stable); ok {
		held.Autoscaled = &n
	}
	take := strategies.TakeCanary(held, desired, commit)

	state := readState(recordedAt)
	if take.FreshState {
		state = workloadState{}
	}
	state.Replicas = take.Replicas
	if take.FirstStep {
		state.Step, state.StepSince = 0, time.Time{}
	}
	annotations := state.annotations(take.Status)

	var stable *appsv1.Deployment
	switch take.Stable {
	case strategies.StableFromColor:
		stable = stableFromColor(c.refreshed(cy.stable, git), git, fromColor, state.Replicas)
		c.eventSwitching(ctx, fromColor, contract.StrategyBlueGreen, contract.StrategyCanary,
			fmt.Sprintf("%s serves until %s, made from its template, is ready", fromColor.Name, git.Name))
	case strategies.StableCreated:
		stable = derived(git, git.Name, nil, servingTemplate(git), state.Replicas)
		setAnnotation(&stable.ObjectMeta, AnnotationChangeCause, changeCause(commit, subject))
	case strategies.StableRestored:
		// Git's revision serves, its template changed by hand: Git's
		// goes out again, as the promotion wrote it.
		stable = c.refreshed(cy.stable, git)
		stable.Spec.Template = strategies.WorkloadTemplate(servingTemplate(git), git.Name)
	case strategies.StableUndone:
		// `kubectl rollout undo` rewinds the annotations too; the change
		// cause goes back to the revision's.
		stable = c.refreshed(cy.stable, git)
		stable.Spec.Template = strategies.WorkloadTemplate(servingTemplate(git), git.Name)
		setAnnotation(&stable.ObjectMeta, AnnotationChangeCause, recordedAt[AnnotationChangeCause])
		c.templateRestored(ctx, cy.stable, "")
	default:
		stable = c.refreshed(cy.stable, git)
	}
	if take.ResumeStable {
		stable.Spec.Paused = false
	}
	if take.From == contract.StrategyRolling {
		c.eventSwitching(ctx, cy.stable, contract.StrategyRolling, contract.StrategyCanary,
			fmt.Sprintf("%s becomes the stable Deployment", cy.stable.Name))
	}
	changed := false
	stamp(stable, annotations, strategies.RoleStable)
	if cy.stable == nil || !holds(cy.stable, stable) || c.restoring(cy.stable, stable) {
		cy.w.intend(cy.stable, stable)
		changed = true
	}

	var want *appsv1.Deployment
	switch live := cy.canary; take.Canary {
	case strategies.CanaryGit:
		want = derived(git, git.Name+contract.SuffixCanary, map[string]string{contract.LabelTrack: take.CanaryTrack}, canaryTemplate(git), take.CanaryReplicas)
		if live != nil {
			want.ObjectMeta = c.refreshed(live, git).ObjectMeta
		}
		if take.CanaryPaused {
			want.Spec.Paused = true
		}
		if take.CanaryCause {
			setAnnotation(&want.ObjectMeta, AnnotationChangeCause, changeCause(commit, subject))
		}
	case strategies.CanaryKept:
		want = c.refreshed(live, git)
	}
	if want != nil {
		stamp(want, annotations, strategies.RoleCanary)
		if cy.canary == nil || !holds(cy.canary, want) || c.restoring(cy.canary, want) {
			cy.w.intend(cy.canary, want)
			changed = true
		}
	}
	return take, changed, nil
}

// stepCanary plans one step of a canary workload and executes the plan's
// actions in their order (see strategies.PlanCanary).
func (c *Controller) stepCanary(ctx context.Context, cy *canary, steps []strategies.Step) error {
	if cy.stable == nil || isPrimary(cy.stable) {
		return nil // not created yet, or switched back to rolling
	}
	recorded, err := strategies.ReadStatus(cy.stable.Annotations)
	if err != nil {
		return err
	}
	state := readState(cy.stable.Annotations)
	on := commandOn(cy.stable, cy.canary)
	cmd := readCommand(on, &recorded, &state)
	n, autoscaled := cy.w.autoscaledCount(cy.stable)
	if autoscaled {
		state.Replicas = n // the HPA's count is the workload's total
	}
	replicas := state.Replicas
	observed := strategies.CanaryObserved{
		Stable: cy.stable, Canary: cy.canary,
		ServiceSelectsServing: cy.service.Spec.Selector[contract.LabelServing] == "true",
		ServiceReady:          cy.w.ready[cy.service.Name],
		HasColors:             cy.w.hasAny(colorSuffixes),
		Step:                  state.Step, StepSince: state.StepSince, Paused: state.Paused,
		Promote: cmd.Promote, Abort: cmd.Abort, Now: c.clock.Now(),
	}
	all := func(*corev1.Pod) bool { return true }
	observed.Pods = podStates(cy.w.canaryPods(), all)
	observed.StablePods = podStates(cy.w.stablePods(), all)
	observed.ReplicaSets = cy.w.rsets
	// The last run stays recorded, for users to read, until the next
	// revision's first run replaces it.
	j := judgement{run: state.Run}
	observed.Run = state.Run
	if strategies.Judging(recorded, podtemplate.LiveHash(cy.stable.Spec.Template), state.Run) {
		j, err = c.judge(ctx, cy.stable, cy.stable.Annotations, state.Run, analysis.Builtins{Workload: cy.name, Namespace: cy.ns, Service: cy.service.Name,
			Revision: recorded.Revision, Hash: recorded.Hash, StableHash: podtemplate.LiveHash(cy.stable.Spec.Template)})
		if err != nil {
			return c.markInvalid(ctx, cy.w, err, nil, cy.stable, cy.canary)
		}
		observed.Analysis, observed.Run = j.specs, j.run
	}
	before := state.Run
	plan := strategies.PlanCanary(strategies.CanaryDesired{
		Desired: strategies.Desired{Hash: recorded.Hash, Replicas: &replicas,
			AutoRollback: autoRollback(cy.stable.Annotations), Commit: recorded.Commit},
		Steps: steps, Autoscaled: autoscaled,
	}, recorded, observed)
	state.Step, state.StepSince, state.Run = plan.Step, plan.StepSince, plan.Run
	x := &execution{w: cy.w, services: map[strategies.ServiceRole]*corev1.Service{strategies.ServiceCanary: cy.service},
		annotations: state.annotations(plan.Status), primary: cy.stable, commandOn: on, command: cmd.Name,
		written: func() {
			c.report(ctx, cy.stable, contract.StrategyCanary, recorded, plan.Status, outcome{cmd: cmd, acted: plan.Acted,
				rolledBack: newlyFailed(recorded, plan.Status) && autoRollback(cy.stable.Annotations) && !cmd.Abort})
			c.reportAnalysis(ctx, cy.stable, before, plan.Run, j.taken, j.specs)
		}}
	if err := c.execute(ctx, x, plan.Actions); err != nil {
		return err
	}
	if err := c.runRetirement(ctx, cy.w, contract.StrategyCanary, c.steered.newest(cy.service), "", replicas, cy.stable, colorSuffixes...); err != nil {
		return err
	}
	if plan.RequeueAfter > 0 {
		c.queue.AddAfter(cy.ns+"/"+cy.name, plan.RequeueAfter)
	}
	return nil
}

// canaryTemplate is Git's template as a canary Deployment runs it: its
// pods serve once Ready (plimsoll.dev/serving), and are marked as the
// controller's (plimsoll.dev/served), so that one taken out of traffic by
// hand stays out. A promotion hands them over to the stable Deployment
// as they are (see strategies.planHandOver).
func canaryTemplate(git *appsv1.Deployment) corev1.PodTemplateSpec {
	t := servingTemplate(git)
	setAnnotation(&t.ObjectMeta, contract.AnnotationServed, "true")
	return t
}

// servingColor returns the color Deployment of workload w that the
// active Service serves (see workloads.ActiveColor), nil when none does (a
// blue-green workload whose first color has not gone live).
func servingColor(w *workload) *appsv1.Deployment {
	d, _ := workloads.ActiveColor(w.name, w.lookup) // w.lookup never fails
	return d
}

// stableFromColor is the stable Deployment of canary workload git made
// from color, the blue-green color that serves: Git's Deployment with the
// color's template, without the color and labelled serving, keeping the
// color's stamp (the hash of the revision that runs) and change cause, at
// replicas. legacy is the Deployment <name> when one is left from before
// (at 0, blue-green's legacy Deployment) with Git's metadata (see
// refreshed), nil when there is none.
func stableFromColor(legacy, git, color *appsv1.Deployment, replicas int32) *appsv1.Deployment {
	t := *color.Spec.Template.DeepCopy()
	delete(t.Labels, contract.LabelColor)
	setLabel(&t.ObjectMeta, contract.LabelServing, "true")
	var stable *appsv1.Deployment
	if legacy == nil {
		stable = derived(git, git.Name, nil, t, replicas)
	} else {
		stable = legacy.DeepCopy()
		stable.Spec.Template = strategies.WorkloadTemplate(t, git.Name)
		stable.Spec.Replicas = &replicas
		stable.Spec.Paused = false
	}
	setAnnotation(&stable.Spec.Template.ObjectMeta, contract.AnnotationTemplateHash, podtemplate.LiveHash(color.Spec.Template))
	keepAnnotation(stable, color, AnnotationChangeCause)
	return stable
}
