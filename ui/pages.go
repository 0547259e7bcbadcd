package ui

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
	"plimsoll.dev/plimsoll/workload"
)

// What the pages show of the past.
const (
	// recentSyncEvents is how many of a sync's Events its card lists.
	recentSyncEvents = 10
	// recentWorkloadEvents is how many of a workload's Events its page
	// lists.
	recentWorkloadEvents = 20
)

// eventCommit finds the commit a sync's Event names: "applied 3f2a9c1
// ...", "commit 3f2a9c1 held until ...".
var eventCommit = regexp.MustCompile(`^(?:applied|commit) ([0-9a-f]{7,40})\b`)

// page is one page of the view: the frame around its main part.
type page struct {
	Title string
	// Nav names the section of the navigation the page belongs to.
	Nav string
	// Live is the address of the page's live stream.
	Live string
	// Denied says what the user may not read, so is not shown.
	Denied []string
	// Main is the model of the main part, rendered by template Template.
	Main     any
	Template string
}

// syncsPage is the page of the syncs.
type syncsPage struct {
	Syncs []syncCard
	// Reads is false when the user may read no sync record.
	Reads bool
}

// syncCard is one sync on the syncs page.
type syncCard struct {
	workload.Sync
	Commit, Fetched link
	// Held is the message of a commit a window holds, Waits the prunes
	// that wait, each "" for none.
	Held, Waits string
	// Windows are the sync windows of the daemon that serves the view,
	// for its own sync.
	Windows []string
	// Workloads counts the workloads of the sync; Unhealthy those not
	// Healthy.
	Workloads, Unhealthy int
	Recent               []eventLine
}

// eventLine is one Event as a page lists it.
type eventLine struct {
	At      time.Time
	Warning bool
	Reason  string
	Message string
	Count   int32
	// Commit is the commit the message names, "" text for none.
	Commit link
}

// workloadsPage is the page of the workloads, by sync and namespace.
type workloadsPage struct {
	Groups []workloadGroup
	Reads  bool
}

// workloadGroup is the workloads of one sync in one namespace.
type workloadGroup struct {
	Sync, Namespace string
	Rows            []workloadRow
}

// workloadRow is one workload in the list.
type workloadRow struct {
	workload.Workload
	// KindName is the kind of its objects: Deployment, StatefulSet or
	// DaemonSet.
	KindName string
	Commit   link
	Path     string
	// Step is "step 2/5" for a canary between its steps, "" else.
	Step string
}

// syncsModel builds the syncs page from the caches.
func (s *Server) syncsModel(v *view) syncsPage {
	out := syncsPage{Reads: v.reads(kindSyncRecords)}
	workloads := s.workloads(v)
	for _, cm := range list[*corev1.ConfigMap](v, kindSyncRecords, metav1.NamespaceAll) {
		rec, ok := workload.SyncOf(cm)
		if !ok {
			continue
		}
		repo := s.cfg.Repos[rec.Name]
		card := syncCard{Sync: rec, Commit: commitLink(repo, rec.Commit), Fetched: commitLink(repo, rec.FetchedCommit),
			Windows: s.cfg.Windows[rec.Name]}
		if rec.Status == contract.SyncHeld {
			card.Held = rec.Message
		}
		for part := range strings.SplitSeq(rec.Message, "; ") {
			if strings.Contains(part, " prune waits: ") || strings.Contains(part, " prunes wait: ") {
				card.Waits = part
			}
		}
		for _, w := range workloads {
			if w.Sync == rec.Name {
				card.Workloads++
				if w.Phase != contract.PhaseHealthy {
					card.Unhealthy++
				}
			}
		}
		card.Recent = eventsAbout(v, kindSyncEvents, "", cm.Namespace, cm.Name, recentSyncEvents, repo)
		out.Syncs = append(out.Syncs, card)
	}
	slices.SortFunc(out.Syncs, func(a, b syncCard) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// workloadsModel builds the workloads page from the caches: a group per
// sync and namespace, sorted, the workloads of no sync last.
func (s *Server) workloadsModel(v *view) workloadsPage {
	out := workloadsPage{Reads: v.reads(kindDeployments) || v.reads(kindStatefulSets) || v.reads(kindDaemonSets)}
	groups := map[[2]string]*workloadGroup{}
	for _, w := range s.workloads(v) {
		key := [2]string{w.Sync, w.Namespace}
		g, ok := groups[key]
		if !ok {
			g = &workloadGroup{Sync: w.Sync, Namespace: w.Namespace}
			groups[key] = g
		}
		row := workloadRow{Workload: w, KindName: cmp.Or(w.Kind, "Deployment"), Commit: commitLink(s.cfg.Repos[w.Sync], w.Commit), Path: pathOf(w)}
		if w.Strategy == contract.StrategyCanary && w.Phase != contract.PhaseHealthy {
			if a, ok := statusAnnotations(v, w); ok {
				row.Step = stepLabel(a)
			}
		}
		g.Rows = append(g.Rows, row)
	}
	for _, g := range groups {
		out.Groups = append(out.Groups, *g)
	}
	slices.SortFunc(out.Groups, func(a, b workloadGroup) int {
		return cmp.Or(cmp.Compare(lastIfEmpty(a.Sync), lastIfEmpty(b.Sync)), cmp.Compare(a.Namespace, b.Namespace))
	})
	return out
}

// lastIfEmpty sorts "" (no sync) after every name.
func lastIfEmpty(s string) string {
	if s == "" {
		return "\uffff"
	}
	return s
}

// workloads describes every workload of the caches, its Deployments' and
// the StatefulSets and DaemonSets a sync applied, sorted by namespace,
// name and kind, as workload.List does from the API.
func (s *Server) workloads(v *view) []workload.Workload {
	groups := map[[2]string][]*appsv1.Deployment{}
	for _, d := range list[*appsv1.Deployment](v, kindDeployments, metav1.NamespaceAll) {
		key := [2]string{d.Namespace, d.Labels[contract.LabelWorkload]}
		groups[key] = append(groups[key], d)
	}
	var out []workload.Workload
	for key, deploys := range groups {
		if w, ok := workload.Describe(key[0], key[1], deploys); ok {
			out = append(out, w)
		}
	}
	out = append(out, setWorkloads(v)...)
	slices.SortFunc(out, func(a, b workload.Workload) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
	return out
}

// stepLabel is "step 2/5" for a canary at step 2 of 5, "" when it
// records no step; annotations are those of the object that carries its
// status (its stable Deployment, or the set).
func stepLabel(annotations map[string]string) string {
	step := annotations[contract.AnnotationStep]
	if step == "" {
		return ""
	}
	steps, err := strategies.ParseSteps(cmp.Or(annotations[contract.AnnotationSteps], strategies.DefaultSteps))
	if err != nil {
		return "step " + step
	}
	return "step " + step + "/" + strconv.Itoa(len(steps))
}

// eventsAbout is the newest Events of kind k about object ns/name of
// kind involved ("" for any), at most n, newest first; the commits they
// name link to repo's pages. A Deployment and a StatefulSet may share a
// name: an Event that names its object's kind counts for that kind only.
func eventsAbout(v *view, k kind, involved, ns, name string, n int, repo string) []eventLine {
	events := indexed[*corev1.Event](v, k, ns+"/"+name)
	out := make([]eventLine, 0, len(events))
	for _, e := range events {
		if involved != "" && e.InvolvedObject.Kind != "" && e.InvolvedObject.Kind != involved {
			continue
		}
		line := eventLine{At: eventTime(e), Warning: e.Type == corev1.EventTypeWarning, Reason: e.Reason, Message: e.Message, Count: e.Count}
		if m := eventCommit.FindStringSubmatch(e.Message); m != nil {
			line.Commit = commitLink(repo, m[1])
		}
		out = append(out, line)
	}
	slices.SortFunc(out, func(a, b eventLine) int {
		return cmp.Or(b.At.Compare(a.At), cmp.Compare(a.Message, b.Message))
	})
	return out[:min(len(out), n)]
}

// eventTime is when an Event last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// workloadPath is the address of a workload's page.
func workloadPath(ns, name string) string {
	return "/workloads/" + ns + "/" + name
}
