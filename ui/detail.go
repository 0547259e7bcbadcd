package ui

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/workload"
)

// annotationChangeCause is what `kubectl rollout history` lists: the
// rollout controller sets "<short commit> <subject>" on a Deployment with
// each new template, and the Deployment controller copies it to the
// ReplicaSet it makes for it.
const annotationChangeCause = "kubernetes.io/change-cause"

// detailPage is the page of one workload.
type detailPage struct {
	W      workload.Workload
	Commit link
	// Step is the canary's current step ("step 2/5"), "" for none.
	Step      string
	Canary    *canaryView
	Colors    *colorsView
	Revisions []revisionRow
	Groups    []podGroup
	Services  []serviceView
	Runs      []runView
	Timeline  plot
	// History is the status changes the view saw, newest first: the
	// timeline's text.
	History []statusEntry
	Events  []eventLine
}

// canaryView is a canary's steps and the traffic its pods get.
type canaryView struct {
	Steps []stepView
	// Current is the step the rollout is at, from 1; 0 between rollouts.
	Current int
	Since   string
	// Weight is the share of serving pods the current step asks of the
	// canary, in percent.
	Weight int32
	// Served is the share the Service's ready endpoints give it:
	// ServedCanary of ServedTotal.
	Served                    string
	ServedCanary, ServedTotal int
	Service                   string
}

// stepView is one canary step.
type stepView struct {
	N     int
	Text  string
	State string // "done", "current" or "next"
}

// colorsView is a blue-green workload's two colors.
type colorsView struct {
	Colors []colorRow
	// Services says which color each steered Service selects.
	Services []serviceColor
}

// colorRow is one color of a blue-green workload.
type colorRow struct {
	Color, Deployment, Role, Revision, Hash, Image string
	Ready, Desired                                 int32
}

// serviceColor is a Service a blue-green workload steers and the color
// its selector names.
type serviceColor struct {
	Service, Role, Color string
}

// revisionRow is one ReplicaSet of a workload: a template it ran.
type revisionRow struct {
	Name, Deployment, Hash, Image string
	Commit                        link
	Subject                       string
	Ready, Desired                int32
	// Marks say what the template is to the workload: current, failed,
	// stable.
	Marks []string
	// Created orders the revisions, newest first.
	Created time.Time
}

// podGroup is the pods of one ReplicaSet.
type podGroup struct {
	ReplicaSet, Deployment, Role, Label string
	Pods                                []workload.TracePod
	Ready                               int
}

// serviceView is a Service the workload steers, its ready endpoints now
// and over time.
type serviceView struct {
	workload.TraceService
	Now     []groupCount
	Plot    plot
	Samples []endpointSample
}

// detailModel builds the page of workload ns/name from the caches; ok is
// false when it has no Deployment.
func (s *Server) detailModel(v *view, ns, name string) (detailPage, bool) {
	key := ns + "/" + name
	deploys := indexed[*appsv1.Deployment](v, kindDeployments, key)
	w, ok := workload.Describe(ns, name, deploys)
	if !ok {
		return detailPage{}, false
	}
	slices.SortFunc(deploys, func(a, b *appsv1.Deployment) int { return cmp.Compare(a.Name, b.Name) })
	rsets := indexed[*appsv1.ReplicaSet](v, kindReplicaSets, key)
	pods := indexed[*corev1.Pod](v, kindPods, key)
	repo := s.cfg.Repos[w.Sync]
	now := s.cfg.Clock.Now()
	primary := findDeployment(deploys, w.Primary)
	tr := workload.NewTrace(w, deploys, rsets, pods)
	for _, svc := range workload.ServiceNames(deploys) {
		obj, _ := get[*corev1.Service](v, kindServices, ns, svc)
		tr.Services = append(tr.Services, workload.NewTraceService(svc, obj,
			indexed[*discoveryv1.EndpointSlice](v, kindEndpointSlices, ns+"/"+svc)))
	}
	page := detailPage{W: w, Commit: commitLink(repo, w.Commit)}
	if primary != nil {
		page.Step = stepLabel(primary.Annotations)
	}
	switch w.Strategy {
	case contract.StrategyCanary:
		page.Canary = canaryOf(primary, tr, w.Name)
	case contract.StrategyBlueGreen:
		page.Colors = colorsOf(deploys, tr)
	}
	page.Revisions = revisionsOf(w, primary, rsets, repo)
	page.Groups = podGroupsOf(tr, rsets)
	for _, svc := range tr.Services {
		view := serviceView{TraceService: svc, Samples: v.hist.endpointHistory(ns + "/" + svc.Name)}
		if n := len(view.Samples); n > 0 {
			view.Now = view.Samples[n-1].Groups
		}
		view.Plot = endpointsPlot("endpoints-"+svc.Name, svc.Name, view.Samples, now)
		page.Services = append(page.Services, view)
	}
	statuses, runs := v.hist.workloadHistory(key)
	page.Runs = s.runsOf(v, w, primary, runs)
	var events []eventLine
	for _, d := range deploys {
		events = append(events, eventsAbout(v, kindRolloutEvents, "Deployment", ns, d.Name, recentWorkloadEvents, repo)...)
	}
	slices.SortFunc(events, func(a, b eventLine) int { return b.At.Compare(a.At) })
	page.Events = events[:min(len(events), recentWorkloadEvents)]
	page.Timeline = timelinePlot(w.Revision, statuses, page.Events, now)
	for i := len(statuses) - 1; i >= 0; i-- {
		page.History = append(page.History, statuses[i])
	}
	return page, true
}

// canaryOf is the steps of canary workload name and the traffic its canary
// gets, read from its stable Deployment (the primary) and the Service its
// strategy steers.
func canaryOf(stable *appsv1.Deployment, tr workload.Trace, name string) *canaryView {
	if stable == nil {
		return nil
	}
	a := stable.Annotations
	c := &canaryView{Service: a[contract.AnnotationService]}
	if since, err := time.Parse(time.RFC3339, a[contract.AnnotationStepSince]); err == nil {
		c.Since = since.UTC().Format(timeLayout) + " UTC"
	}
	steps, err := strategies.ParseSteps(cmp.Or(a[contract.AnnotationSteps], strategies.DefaultSteps))
	if err != nil {
		return c
	}
	c.Current, _ = strconv.Atoi(a[contract.AnnotationStep])
	if tr.Workload.Phase == contract.PhaseHealthy || tr.Workload.Phase == contract.PhaseDegraded {
		c.Current = 0 // between rollouts: no step is current
	}
	for i, st := range steps {
		sv := stepView{N: i + 1, Text: stepText(st), State: "next"}
		switch {
		case c.Current == 0:
			sv.State = ""
		case i+1 < c.Current:
			sv.State = "done"
		case i+1 == c.Current:
			sv.State = "current"
		}
		if !st.Pause && i+1 <= c.Current {
			c.Weight = st.Weight
		}
		c.Steps = append(c.Steps, sv)
	}
	for _, svc := range tr.Services {
		if svc.Name != c.Service {
			continue
		}
		c.ServedTotal = len(svc.ReadyPods)
		canary := canaryPodNames(tr, name+contract.SuffixCanary)
		for _, p := range svc.ReadyPods {
			if canary[p] {
				c.ServedCanary++
			}
		}
	}
	c.Served = percent(c.ServedCanary, c.ServedTotal)
	return c
}

// canaryPodNames returns the names of tr's pods that a ReplicaSet of the
// canary Deployment canary controls, or that nothing controls (a
// canary's, being handed over). A pod's name is its maker's: one the
// canary made and handed over to the stable Deployment is the stable's.
func canaryPodNames(tr workload.Trace, canary string) map[string]bool {
	sets := map[string]bool{}
	for _, d := range tr.Deployments {
		if d.Name == canary {
			for _, rs := range d.ReplicaSets {
				sets[rs.Name] = true
			}
		}
	}
	names := map[string]bool{}
	for _, p := range tr.Pods {
		if sets[p.ReplicaSet] || (p.ReplicaSet == "" && strategies.PodOf(p.Name, canary)) {
			names[p.Name] = true
		}
	}
	return names
}

// stepText is a step as the steps annotation writes it.
func stepText(st strategies.Step) string {
	switch {
	case !st.Pause:
		return strconv.Itoa(int(st.Weight)) + "%"
	case st.Duration == 0:
		return "pause (until promoted)"
	}
	return "pause " + st.Duration.String()
}

// percent is n of total in percent, rounded down: 1 of 4 is "25%", 1 of 3
// "33%"; "-" without any.
func percent(n, total int) string {
	if total == 0 {
		return "-"
	}
	return strconv.Itoa(n*100/total) + "%"
}

// colorsOf is the colors of a blue-green workload and what its Services
// select.
func colorsOf(deploys []*appsv1.Deployment, tr workload.Trace) *colorsView {
	c := &colorsView{}
	for _, d := range deploys {
		color := cmp.Or(d.Labels[contract.LabelColor], d.Spec.Template.Labels[contract.LabelColor])
		if color == "" {
			continue
		}
		row := colorRow{Color: color, Deployment: d.Name, Role: d.Annotations[contract.AnnotationRole],
			Revision: d.Annotations[contract.AnnotationRevision], Hash: d.Spec.Template.Annotations[contract.AnnotationTemplateHash],
			Ready: d.Status.ReadyReplicas, Desired: ptrValue(d.Spec.Replicas)}
		if len(d.Spec.Template.Spec.Containers) > 0 {
			row.Image = d.Spec.Template.Spec.Containers[0].Image
		}
		c.Colors = append(c.Colors, row)
		for _, key := range []string{contract.AnnotationActiveService, contract.AnnotationPreviewService} {
			svc := d.Annotations[key]
			if svc == "" || slices.ContainsFunc(c.Services, func(s serviceColor) bool { return s.Service == svc }) {
				continue
			}
			role := "active"
			if key == contract.AnnotationPreviewService {
				role = "preview"
			}
			c.Services = append(c.Services, serviceColor{Service: svc, Role: role, Color: selectedColor(tr, svc)})
		}
	}
	return c
}

// selectedColor is the color Service svc of a trace selects, "none"
// when its selector names none.
func selectedColor(tr workload.Trace, svc string) string {
	for _, s := range tr.Services {
		if s.Name != svc {
			continue
		}
		for part := range strings.SplitSeq(s.Selector, ",") {
			if v, ok := strings.CutPrefix(part, contract.LabelColor+"="); ok {
				return v
			}
		}
	}
	return "none"
}

// revisionsOf is every ReplicaSet of the workload, newest first, each
// with the commit its change cause names and what its template is to the
// workload.
func revisionsOf(w workload.Workload, primary *appsv1.Deployment, rsets []*appsv1.ReplicaSet, repo string) []revisionRow {
	stable := ""
	if primary != nil {
		stable = primary.Annotations[contract.AnnotationStableHash]
	}
	out := make([]revisionRow, 0, len(rsets))
	for _, rs := range rsets {
		row := revisionRow{Name: rs.Name, Hash: rs.Spec.Template.Annotations[contract.AnnotationTemplateHash],
			Ready: rs.Status.ReadyReplicas, Desired: ptrValue(rs.Spec.Replicas), Created: rs.CreationTimestamp.Time}
		if owner := metav1.GetControllerOf(rs); owner != nil {
			row.Deployment = owner.Name
		}
		if len(rs.Spec.Template.Spec.Containers) > 0 {
			row.Image = rs.Spec.Template.Spec.Containers[0].Image
		}
		commit, subject, _ := strings.Cut(rs.Annotations[annotationChangeCause], " ")
		row.Commit, row.Subject = commitLink(repo, commit), subject
		for _, m := range []struct {
			hash, mark string
		}{{w.TemplateHash, "current"}, {w.FailedHash, "failed"}, {stable, "stable"}} {
			if row.Hash != "" && row.Hash == m.hash {
				row.Marks = append(row.Marks, m.mark)
			}
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b revisionRow) int { return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.Name, b.Name)) })
	return out
}

// podGroupsOf groups the pods of a trace by ReplicaSet, each named by its
// Deployment, role and color or track.
func podGroupsOf(tr workload.Trace, rsets []*appsv1.ReplicaSet) []podGroup {
	groups := map[string]*podGroup{}
	for _, p := range tr.Pods {
		g, ok := groups[p.ReplicaSet]
		if !ok {
			g = &podGroup{ReplicaSet: cmp.Or(p.ReplicaSet, "(no ReplicaSet)")}
			for _, rs := range rsets {
				if rs.Name != p.ReplicaSet {
					continue
				}
				if owner := metav1.GetControllerOf(rs); owner != nil {
					g.Deployment = owner.Name
				}
				g.Label = cmp.Or(rs.Spec.Template.Labels[contract.LabelColor], rs.Spec.Template.Labels[contract.LabelTrack])
			}
			for _, d := range tr.Deployments {
				if d.Name == g.Deployment {
					g.Role = d.Role
				}
			}
			if g.Label == g.Role {
				g.Label = "" // a canary's track is its role
			}
			groups[p.ReplicaSet] = g
		}
		g.Pods = append(g.Pods, p)
		if p.Ready {
			g.Ready++
		}
	}
	out := make([]podGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b podGroup) int {
		return cmp.Or(cmp.Compare(a.Deployment, b.Deployment), cmp.Compare(a.ReplicaSet, b.ReplicaSet))
	})
	return out
}

// ptrValue is *p, or 0 when p is nil.
func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
