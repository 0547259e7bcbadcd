package rollout

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/analysis"
	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/internal/podtemplate"
	"plimsoll.dev/plimsoll/strategies"
)

// blueGreen is the live state of a blue-green workload as read for one
// step.
type blueGreen struct {
	ns, name        string
	w               *workload
	blue, green     *appsv1.Deployment
	legacy          *appsv1.Deployment
	active, preview *corev1.Service
}

func (bg *blueGreen) deployment(c strategies.Color) *appsv1.Deployment {
	if c == strategies.ColorGreen {
		return bg.green
	}
	return bg.blue
}

// live is the color the active Service selects, "" before the first
// color goes live: what the planner reads as serving. The role
// annotation that workload.Serving reads is written by the same plan as
// the selector (strategies.BlueGreenPlan.Roles).
func (bg *blueGreen) live() strategies.Color {
	if bg.active == nil {
		return ""
	}
	return strategies.Color(bg.active.Spec.Selector[contract.LabelColor])
}

// primary is the Deployment whose annotations carry the workload's state
// and commands (see strategies.BlueGreenCarrier).
func (bg *blueGreen) primary() *appsv1.Deployment {
	return strategies.BlueGreenCarrier(bg.live(), bg.blue, bg.green, bg.legacy)
}

// color is the Deployment of color c, nil for no color or none.
func (bg *blueGreen) color(c strategies.Color) *appsv1.Deployment {
	switch c {
	case strategies.ColorBlue:
		return bg.blue
	case strategies.ColorGreen:
		return bg.green
	}
	return nil
}

// colorOf is the color of Deployment d, one of bg's colors by its name;
// "" for none.
func (bg *blueGreen) colorOf(d *appsv1.Deployment) strategies.Color {
	for _, c := range []strategies.Color{strategies.ColorBlue, strategies.ColorGreen} {
		if d != nil && d.Name == bg.name+c.Suffix() {
			return c
		}
	}
	return ""
}

// previewColor is the color bg's preview Service selects, "" for none or
// no preview Service.
func (bg *blueGreen) previewColor() strategies.Color {
	if bg.preview == nil {
		return ""
	}
	return strategies.Color(bg.preview.Spec.Selector[contract.LabelColor])
}

// readBlueGreen takes the Deployments and Services of a blue-green
// workload from w; annotations (Git's, or the primary's) name the
// Services. A Service that is unnamed or missing is an input error.
func readBlueGreen(w *workload, annotations map[string]string) (*blueGreen, error) {
	bg := &blueGreen{ns: w.ns, name: w.name, w: w,
		blue: w.deployment(contract.SuffixBlue), green: w.deployment(contract.SuffixGreen), legacy: w.deployment("")}
	if annotations == nil {
		annotations = annotationsOf(bg.primary())
	}
	var err error
	if bg.active, err = serviceOf(w, annotations, contract.AnnotationActiveService); err != nil {
		return bg, err
	}
	if annotations[contract.AnnotationPreviewService] != "" {
		if bg.preview, err = serviceOf(w, annotations, contract.AnnotationPreviewService); err != nil {
			return bg, err
		}
	}
	return bg, nil
}

// reconcileBlueGreen reconciles a blue-green workload: with an intent
// that its Deployments do not hold yet, it intends what
// strategies.TakeBlueGreen takes of it (intendBlueGreen);
// then one step of the plan, whose writes carry the intent too.
func (c *Controller) reconcileBlueGreen(ctx context.Context, w *workload, in intent) error {
	var git map[string]string
	if in.git != nil {
		git = in.git.Annotations
	}
	bg, err := readBlueGreen(w, git)
	if err != nil {
		return c.markInvalid(ctx, w, err, git, bg.blue, bg.green)
	}
	if in.git != nil {
		take, changed, err := c.intendBlueGreen(ctx, bg, in)
		if err != nil {
			return err
		}
		if !take.Steps(changed) {
			return nil
		}
		if changed {
			// Plan the first step from what intendBlueGreen intends: its
			// writes go out with the plan's.
			if bg, err = readBlueGreen(w, git); err != nil {
				return err
			}
		}
	}
	return c.stepBlueGreen(ctx, bg)
}

// intendBlueGreen builds the colors of a blue-green workload's intake as
// strategies.TakeBlueGreen decides it from what the workload holds, and
// chooses nothing itself: the
// Git template to the color it targets, with the commit as its change
// cause (so that `kubectl rollout history` of the color lists commits),
// Git's metadata to every color, and the status of the take. The
// colors are intended (see workload.intend), and written by the plan that
// follows, as a canary's are (see intendCanary); only the Deployment a
// rolling workload ran, no longer its primary, is written at once. It
// reports whether anything is to be written.
func (c *Controller) intendBlueGreen(ctx context.Context, bg *blueGreen, in intent) (strategies.BlueGreenTake, bool, error) {
	git := in.git
	desired := podtemplate.Hash(git.Spec.Template)
	recordedAt := recordedAnnotations(bg.primary(), bg.w.rsets)
	recorded, err := strategies.ReadStatus(recordedAt)
	if err != nil {
		return strategies.BlueGreenTake{}, false, err
	}
	active := bg.color(bg.live())
	_, scaled := bg.w.autoscaler(bg.name, bg.name+contract.SuffixBlue, bg.name+contract.SuffixGreen)
	held := strategies.BlueGreenHeld{Recorded: recorded,
		Blue: bg.blue, Green: bg.green, Legacy: bg.legacy, Active: bg.live(),
		BlueRunsGit:    c.runsGit(bg.blue, git, desired),
		GreenRunsGit:   c.runsGit(bg.green, git, desired),
		ActiveRewound:  active != nil && c.rewoundByHand(active, bg.w.rsets),
		KeepsHandEdits: active != nil && keepsHandEdits(git, active),
		Replicas:       specReplicas(git),
		Scaled:         scaled != "", ScaleTarget: strings.TrimPrefix(scaled, bg.name),
		Intake: strategies.Intake{Once: c.once.Load(), AtRest: recordedAtRest(bg.primary())},
	}
	if n, ok := blueGreenCount(bg); ok {
		held.Autoscaled = &n
	}
	take := strategies.TakeBlueGreen(held, desired, in.commit)

	changed := false
	if take.From != "" {
		// A rolling or canary workload switching to blue-green: <name>
		// serves (with the canary's pods) until the first color takes
		// over, and is no longer the primary; what Git dropped of its
		// metadata goes, as it goes from the colors.
		if err := c.execute(ctx, &execution{w: bg.w, git: git}, take.Actions); err != nil {
			return take, false, err
		}
		changed = true
		c.eventSwitching(ctx, bg.legacy, take.From, contract.StrategyBlueGreen, fmt.Sprintf("%s serves until the first color is ready", bg.legacy.Name))
	}
	state := readState(recordedAt)
	if take.FreshState {
		state = workloadState{}
	}
	state.Replicas = take.Replicas
	if take.Undone {
		c.templateRestored(ctx, active, "on "+string(bg.live().Other()))
	}
	for _, color := range []strategies.Color{strategies.ColorBlue, strategies.ColorGreen} {
		live := bg.deployment(color)
		var want *appsv1.Deployment
		switch take.Intent(color) {
		case strategies.ColorGit:
			want = derived(git, git.Name+color.Suffix(), map[string]string{contract.LabelColor: string(color)}, git.Spec.Template, take.TargetReplicas)
			if live != nil {
				want.ObjectMeta = c.refreshed(live, git).ObjectMeta
			}
			if take.TargetCause {
				setAnnotation(&want.ObjectMeta, AnnotationChangeCause, changeCause(in.commit, in.subject))
			}
		case strategies.ColorKept:
			want = c.refreshed(live, git)
		default:
			continue
		}
		stamp(want, state.annotations(take.Status), strategies.Role(annotationsOf(live)[contract.AnnotationRole]))
		if live != nil && holds(live, want) && !c.restoring(live, want) {
			continue
		}
		bg.w.intend(live, want)
		changed = true
	}
	return take, changed, nil
}

// stepBlueGreen plans and executes one step of a blue-green workload:
// Deployments first (scale-ups, status), then the Services (the swap), and
// only then the scale-down of a color that lost traffic, once the active
// Service's endpoints no longer hold its pods.
func (c *Controller) stepBlueGreen(ctx context.Context, bg *blueGreen) error {
	ns, name := bg.ns, bg.name
	primary := bg.primary()
	switch {
	case primary == nil || primary == bg.legacy:
		return nil // the sink has not written a color yet
	case isPrimary(bg.legacy):
		return nil // switched back to rolling; the rolling reconcile retires the colors
	}
	recorded, err := strategies.ReadStatus(primary.Annotations)
	if err != nil {
		return err
	}
	state := readState(primary.Annotations)
	on := commandOn(primary, bg.blue, bg.green)
	cmd := readCommand(on, &recorded, &state)
	if n, ok := blueGreenCount(bg); ok {
		state.Replicas = n // the new color comes up to the count that serves
	}
	delay, err := scaleDownDelay(primary.Annotations)
	if err != nil {
		return c.markInvalid(ctx, bg.w, err, nil, bg.blue, bg.green)
	}
	replicas := state.Replicas
	desired := strategies.BlueGreenDesired{
		Desired: strategies.Desired{Hash: recorded.Hash, Replicas: &replicas,
			AutoRollback: autoRollback(primary.Annotations), Commit: recorded.Commit},
		AutoPromote:    primary.Annotations[contract.AnnotationAutoPromote] != "false",
		ScaleDownDelay: delay,
	}
	active := bg.live()
	j := judgement{run: state.Run}
	stable := ""
	if d := bg.color(active); d != nil {
		stable = podtemplate.LiveHash(d.Spec.Template)
	}
	if strategies.Judging(recorded, stable, state.Run) {
		j, err = c.judge(ctx, primary, primary.Annotations, state.Run, analysis.Builtins{Workload: name, Namespace: ns, Service: bg.active.Name,
			Revision: recorded.Revision, Hash: recorded.Hash, StableHash: stable})
		if err != nil {
			return c.markInvalid(ctx, bg.w, err, nil, bg.blue, bg.green)
		}
	}
	before := state.Run
	autoscaler, scaled := bg.w.autoscaler(name, name+contract.SuffixBlue, name+contract.SuffixGreen)
	plan := strategies.PlanBlueGreen(desired, recorded, strategies.BlueGreenObserved{
		Blue: bg.blue, Green: bg.green, Legacy: bg.legacy, Active: active, Serving: bg.colorOf(servingColor(bg.w)),
		Preview: bg.preview != nil, PreviewColor: bg.previewColor(),
		Pods: colorPods(bg.w), ReplicaSets: bg.w.rsets, ActiveEndpoints: bg.w.ready[bg.active.Name],
		ScaleDownAt: state.ScaleDownAt, Paused: state.Paused,
		Promote: cmd.Promote, Abort: cmd.Abort, Now: c.clock.Now(),
		Analysis: j.specs, Run: j.run,
		Autoscaled: autoscaler != nil, ScaleTarget: strings.TrimPrefix(scaled, name),
	})
	state.ScaleDownAt, state.Run = plan.ScaleDownAt, plan.Run
	out := outcome{cmd: cmd, acted: plan.Acted,
		rolledBack: newlyFailed(recorded, plan.Status) && desired.AutoRollback && !cmd.Abort}
	if plan.Pending {
		out.cmd = strategies.Commanded{} // no Event until it acts
	}
	x := &execution{w: bg.w, annotations: state.annotations(plan.Status), primary: primary, commandOn: on, command: cmd.Name,
		services:   map[strategies.ServiceRole]*corev1.Service{strategies.ServiceActive: bg.active, strategies.ServicePreview: bg.preview},
		autoscaler: autoscaler,
		written: func() {
			c.report(ctx, primary, contract.StrategyBlueGreen, recorded, plan.Status, out)
			c.reportAnalysis(ctx, primary, before, plan.Run, j.taken, j.specs)
		}}
	if err := c.execute(ctx, x, plan.Actions); err != nil {
		return err
	}
	if err := c.runRetirement(ctx, bg.w, contract.StrategyBlueGreen, c.steered.newest(bg.active), "", replicas, primary, contract.SuffixCanary); err != nil {
		return err
	}
	if plan.RequeueAfter > 0 {
		c.queue.AddAfter(ns+"/"+name, plan.RequeueAfter)
	}
	return nil
}

// blueGreenCount returns the count of the Deployment of bg that an HPA
// scales, and whether one scales the workload. Once a color is live that
// is the active color's count, whichever of <name>, blue and green the HPA
// names at this instant: between a swap and the retarget it still names
// the old color (brought up to the same count), and an HPA turned to a
// Deployment that runs nothing must not hand the active color Git's
// count, which would take the pods the HPA added out of the Service.
// Before the first swap it is the count of the Deployment the HPA
// targets (<name>, while it serves).
func blueGreenCount(bg *blueGreen) (int32, bool) {
	h, target := bg.w.autoscaler(bg.name+contract.SuffixBlue, bg.name+contract.SuffixGreen, bg.name)
	if h == nil {
		return 0, false
	}
	if d := bg.color(bg.live()); d != nil {
		return specReplicas(d), true
	}
	if d := bg.w.deploys[target]; d != nil {
		return specReplicas(d), true
	}
	return 0, false
}

// colorPods returns the pods of workload w by color.
func colorPods(w *workload) map[strategies.Color][]strategies.Pod {
	pods := map[strategies.Color][]strategies.Pod{}
	for _, p := range w.pods {
		if color := strategies.Color(p.Labels[contract.LabelColor]); color != "" {
			pods[color] = append(pods[color], podState(p))
		}
	}
	return pods
}
