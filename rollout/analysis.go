package rollout

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/analysis"
	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// Measurer takes one measurement of a bound metric for a run;
// analysis.Measurer is the real one.
type Measurer interface {
	Measure(ctx context.Context, b analysis.Bound, run analysis.Run) strategies.Measurement
}

// judgement is a workload's analysis as one reconcile prepares it for the
// planner: the specs of its metrics, and the recorded run with the
// measurements that were due folded in.
type judgement struct {
	specs []strategies.MetricSpec
	run   *strategies.AnalysisRun
	// taken are the measurements of this reconcile, for the metrics.
	taken []strategies.Measurement
}

// judge finds the analyses annotations (primary's, or Git's) name in the cache,
// binds them to the revision (builtins) and, when the recorded run judges
// that revision and runs, takes the measurements that are due. A
// workload without analyses gets an empty judgement. An analysis that is
// named and not found, or does not bind, is an input error: the sync
// refuses such a commit, so it is one deleted or changed by hand since.
func (c *Controller) judge(ctx context.Context, primary *appsv1.Deployment, annotations map[string]string, run *strategies.AnalysisRun, b analysis.Builtins) (judgement, error) {
	j := judgement{run: run}
	names, err := analysis.Names(annotations)
	if err != nil || len(names) == 0 {
		return j, asInput(err)
	}
	args, err := analysis.Args(annotations)
	if err != nil {
		return j, asInput(err)
	}
	v, _ := c.viewOf(primary.Namespace)
	var templates []*analysis.Template
	for _, name := range names {
		cm, err := v.analyses.ConfigMaps(primary.Namespace).Get(name)
		if err != nil {
			// The cache may not hold it yet: the commit that names it
			// applied it a moment ago, and under load the watch lags the
			// workload's reconcile. The API server decides.
			cm, err = c.client.CoreV1().ConfigMaps(primary.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
				return j, fmt.Errorf("read analysis %s: %w", name, err)
			}
		}
		if err != nil || !hasLabel(cm, contract.LabelAnalysis) {
			return j, &inputError{fmt.Sprintf("analysis %s: no ConfigMap %s labelled %s in namespace %s", name, name, contract.LabelAnalysis, primary.Namespace)}
		}
		t, err := analysis.Parse(cm)
		if err != nil {
			return j, &inputError{fmt.Sprintf("analysis %s: %v", name, err)}
		}
		templates = append(templates, t)
	}
	bound, err := analysis.Bind(templates, args, b)
	if err != nil {
		return j, asInput(err)
	}
	for _, m := range bound {
		j.specs = append(j.specs, m.Spec)
	}
	if run == nil || run.Hash != b.Hash || run.Verdict != strategies.VerdictRunning {
		return j, nil
	}
	now := c.clock.Now()
	due, _ := run.Due(j.specs, now)
	owner := metav1.NewControllerRef(primary, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	for _, name := range due {
		for _, m := range bound {
			if m.Spec.Name != name {
				continue
			}
			at := analysis.Run{Namespace: primary.Namespace, Workload: b.Workload, Stage: run.Stage, Started: run.Started,
				Index: metricRun(run, name).Taken(), Owner: owner, Now: now}
			x := c.measurer.Measure(ctx, m, at)
			x.Metric = name
			if x.At.IsZero() {
				x.At = now
			}
			j.taken = append(j.taken, x)
		}
	}
	recorded := run.Record(j.specs, j.taken)
	j.run = &recorded
	return j, nil
}

// metricRun is the tally of the metric named name in r.
func metricRun(r *strategies.AnalysisRun, name string) strategies.MetricRun {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m
		}
	}
	return strategies.MetricRun{Name: name}
}

// asInput makes err, when there is one, an input error.
func asInput(err error) error {
	if err == nil {
		return nil
	}
	return &inputError{err.Error()}
}

// reportAnalysis tells of an analysis run that changed: a metric sample
// per measurement taken, and an Event when the run started or reached its
// verdict.
func (c *Controller) reportAnalysis(ctx context.Context, obj *appsv1.Deployment, before, after *strategies.AnalysisRun, taken []strategies.Measurement, specs []strategies.MetricSpec) {
	for _, x := range taken {
		c.metrics.measured(obj.Namespace, x)
	}
	if after == nil || (before != nil && before.Stage == after.Stage && before.Hash == after.Hash && before.Verdict == after.Verdict) {
		return
	}
	switch after.Verdict {
	case strategies.VerdictRunning:
		c.eventFor(ctx, obj, corev1.EventTypeNormal, ReasonAnalysis, fmt.Sprintf("%s: analysis started", after.Stage))
		return
	case strategies.VerdictFailed, strategies.VerdictInconclusive:
		c.eventFor(ctx, obj, corev1.EventTypeWarning, ReasonAnalysis, fmt.Sprintf("%s: %s", after.Stage, after.Summary(specs)))
	default:
		c.eventFor(ctx, obj, corev1.EventTypeNormal, ReasonAnalysis, fmt.Sprintf("%s: %s", after.Stage, after.Summary(specs)))
	}
	c.metrics.judged(after.Verdict)
}

// noMeasurer is the Measurer of a controller configured without one.
type noMeasurer struct{}

// Measure says that nothing can measure.
func (noMeasurer) Measure(_ context.Context, _ analysis.Bound, run analysis.Run) strategies.Measurement {
	return strategies.Measurement{Outcome: strategies.OutcomeError, Message: "no analysis providers are configured", At: run.Now}
}

// judgeRolling prepares the verification of a rolling workload's revision
// of hash (see judge) while it is not Healthy or its run runs; annotations
// name the analyses. A workload with no live Deployment has nothing to
// verify.
func (c *Controller) judgeRolling(ctx context.Context, live *appsv1.Deployment, annotations map[string]string, recorded strategies.Status, hash string) (judgement, error) {
	if live == nil {
		return judgement{}, nil
	}
	run := strategies.DecodeRun(live.Annotations[contract.AnnotationAnalysisRun])
	if !strategies.Judging(recorded, hash, run) {
		return judgement{run: run}, nil
	}
	return c.judge(ctx, live, annotations, run, analysis.Builtins{Workload: live.Name, Namespace: live.Namespace,
		Service: annotations[contract.AnnotationService], Revision: recorded.Revision, Hash: hash, StableHash: recorded.StableHash})
}

// setRun records run on d, or removes the record for none.
func setRun(d *appsv1.Deployment, run *strategies.AnalysisRun) {
	if v := strategies.EncodeRun(run); v != "" {
		setAnnotation(&d.ObjectMeta, contract.AnnotationAnalysisRun, v)
		return
	}
	delete(d.Annotations, contract.AnnotationAnalysisRun)
}

// hasLabel reports whether obj carries label key, whatever its value.
func hasLabel(obj metav1.Object, key string) bool {
	_, ok := obj.GetLabels()[key]
	return ok
}
