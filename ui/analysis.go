package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"plimsoll.dev/plimsoll/analysis"
	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/workload"
)

// runView is one analysis run of a workload: its verdict, and each metric
// with its measurements beside its conditions.
type runView struct {
	Stage, Hash, Verdict string
	Started              time.Time
	// Current is true for the run the workload records now (its counts
	// are the controller's); the others are earlier runs the view saw.
	Current bool
	Metrics []metricView
}

// metricView is one metric of a run.
type metricView struct {
	Name string
	// Tally is the controller's count of the metric's measurements (the
	// current run only).
	Tally *strategies.MetricRun
	// Success and Failure are the conditions, their arguments given;
	// Provider and Query say what is measured (a Prometheus query; a web
	// check's or a Job's details are not shown: their headers may hold
	// credentials).
	Success, Failure, Provider, Query, Timing string
	Points                                    []measurement
	Plot                                      plot
}

// metricDoc is what a metric's analysis document says of it.
type metricDoc struct {
	success, failure, provider, query, timing string
}

// runsOf is the analysis runs of workload w, newest first: the one its
// Deployments record (with the controller's counts) and the earlier ones
// the view saw, each metric with the measurements the view saw.
func (s *Server) runsOf(v *view, w workload.Workload, primary *appsv1.Deployment, runs []runHistory) []runView {
	current := w.Analysis
	if current != nil && current.Hash != "" {
		runs = noteRun(runs, *current)
	}
	docs := metricDocs(v, w, primary)
	out := make([]runView, 0, len(runs))
	for _, r := range runs {
		rv := runView{Stage: r.Stage, Hash: r.Hash, Started: r.Started, Verdict: "seen"}
		var tallies []strategies.MetricRun
		if current != nil && current.Stage == r.Stage && current.Hash == r.Hash && current.Started.Equal(r.Started) {
			rv.Current, rv.Verdict, tallies = true, string(current.Verdict), current.Metrics
		}
		names := make([]string, 0, len(r.Points)+len(tallies))
		for _, t := range tallies {
			names = append(names, t.Name)
		}
		for name := range r.Points {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		for _, name := range names {
			d := docs[name]
			m := metricView{Name: name, Success: d.success, Failure: d.failure, Provider: d.provider, Query: d.query,
				Timing: d.timing, Points: r.Points[name]}
			if i := slices.IndexFunc(tallies, func(t strategies.MetricRun) bool { return t.Name == name }); i >= 0 {
				m.Tally = &tallies[i]
			}
			m.Plot = measurementsPlot("run-"+r.Hash+"-"+r.Stage+"-"+name, name, m.Points, d.success, d.failure, r.Started)
			rv.Metrics = append(rv.Metrics, m)
		}
		out = append(out, rv)
	}
	slices.SortFunc(out, func(a, b runView) int { return cmp.Or(b.Started.Compare(a.Started), cmp.Compare(a.Stage, b.Stage)) })
	return out
}

// metricDocs reads the analyses the workload's primary Deployment names
// from their ConfigMaps, binds them with its arguments as the controller
// does for its revision, and returns what each metric's document says,
// by "<analysis>/<metric>". An analysis that cannot be read or bound
// shows its conditions as written.
func metricDocs(v *view, w workload.Workload, primary *appsv1.Deployment) map[string]metricDoc {
	out := map[string]metricDoc{}
	if primary == nil {
		return out
	}
	names, err := analysis.Names(primary.Annotations)
	if err != nil {
		return out
	}
	var templates []*analysis.Template
	for _, name := range names {
		cm, ok := get[*corev1.ConfigMap](v, kindAnalyses, w.Namespace, name)
		if !ok {
			continue
		}
		if t, err := analysis.Parse(cm); err == nil {
			templates = append(templates, t)
		}
	}
	metrics := map[string]analysis.Metric{}
	for _, t := range templates {
		for _, m := range t.Metrics {
			metrics[m.Spec.Name] = m
		}
	}
	args, _ := analysis.Args(primary.Annotations)
	builtins := analysis.Builtins{Workload: w.Name, Namespace: w.Namespace, Revision: w.Revision, Hash: w.TemplateHash,
		StableHash: primary.Annotations[contract.AnnotationStableHash],
		Service:    cmp.Or(primary.Annotations[contract.AnnotationService], primary.Annotations[contract.AnnotationActiveService])}
	if bound, err := analysis.Bind(templates, args, builtins); err == nil {
		for _, b := range bound {
			metrics[b.Spec.Name] = b.Metric
		}
	}
	for name, m := range metrics {
		d := metricDoc{success: m.SuccessCondition, failure: m.FailureCondition, timing: timing(m.Spec)}
		switch {
		case m.Prometheus != nil:
			d.provider, d.query = "Prometheus query", m.Prometheus.Query
		case m.Web != nil:
			d.provider = "web check"
		case m.Job != nil:
			d.provider = "Job"
		}
		out[name] = d
	}
	return out
}

// timing says when a metric is measured and what decides it: "3
// measurements, 20s apart, the first after 10s; the 1st failed
// measurement fails it, the 1st inconclusive one makes it inconclusive,
// the 5th error in a row fails it".
func timing(s strategies.MetricSpec) string {
	return fmt.Sprintf("%d measurements, %s apart, the first after %s; the %s failed measurement fails it, "+
		"the %s inconclusive one makes it inconclusive, the %s error in a row fails it",
		s.Count, s.Interval, s.InitialDelay, ordinal(s.FailureLimit+1), ordinal(s.InconclusiveLimit+1), ordinal(s.ConsecutiveErrorLimit+1))
}

// ordinal is 1st, 2nd, 3rd, 4th... 11th, 12th, 13th, 21st.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
