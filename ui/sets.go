package ui

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/workload"
)

// setKind is a kind of set the view shows as a workload: a StatefulSet or
// a DaemonSet that a sync applied, which carries its own status.
type setKind struct {
	// name is the workload's kind, workload.KindStatefulSet or
	// workload.KindDaemonSet.
	name string
	// cache is the view's kind of the objects.
	cache kind
	// route is the first part of the address of a page of one: a set's
	// name may also be a Deployment workload's, so it has its own.
	route string
}

// setKinds are the kinds of set, in the order a page lists them.
var setKinds = []setKind{
	{name: workload.KindStatefulSet, cache: kindStatefulSets, route: "statefulsets"},
	{name: workload.KindDaemonSet, cache: kindDaemonSets, route: "daemonsets"},
}

// setKindNamed is the kind of set of workload kind name.
func setKindNamed(name string) (setKind, bool) {
	i := slices.IndexFunc(setKinds, func(k setKind) bool { return k.name == name })
	if i < 0 {
		return setKind{}, false
	}
	return setKinds[i], true
}

// setKindAt is the kind of set whose pages' addresses start with route.
func setKindAt(route string) (setKind, bool) {
	i := slices.IndexFunc(setKinds, func(k setKind) bool { return k.route == route })
	if i < 0 {
		return setKind{}, false
	}
	return setKinds[i], true
}

// setPage is the page of one StatefulSet or DaemonSet.
type setPage struct {
	W      workload.Workload
	Commit link
	// Step is the canary's current step ("step 2/5"), "" for none.
	Step string
	// Set is the object's counts and update strategy.
	Set workload.TraceSet
	// Pods are the pods the set owns, by name; Ready counts the ready.
	Pods  []setPod
	Ready int
	// Services is a StatefulSet's Service (spec.serviceName) with its
	// ready endpoints; none for a DaemonSet.
	Services []workload.TraceService
	Timeline plot
	// History is the status changes the view saw, newest first: the
	// timeline's text.
	History []statusEntry
	Events  []eventLine
}

// setPod is a pod of a set and what its revision is to the set.
type setPod struct {
	workload.TracePod
	// Is is "update" for a StatefulSet's pod of the revision it rolls
	// out, "current" for one of the revision it rolls from; "" when the
	// set is not between two revisions.
	Is string
}

// setWorkloads describes the StatefulSets and DaemonSets of the caches as
// workloads.
func setWorkloads(v *view) []workload.Workload {
	var out []workload.Workload
	for _, sk := range setKinds {
		for _, obj := range list[metav1.Object](v, sk.cache, metav1.NamespaceAll) {
			out = append(out, workload.DescribeSet(sk.name, obj))
		}
	}
	return out
}

// statusAnnotations are the annotations of the cached object that carries
// w's status: its primary Deployment, or the set itself; ok is false when
// the caches do not hold it.
func statusAnnotations(v *view, w workload.Workload) (map[string]string, bool) {
	k := kindDeployments
	if sk, ok := setKindNamed(w.Kind); ok {
		k = sk.cache
	}
	obj, ok := get[metav1.Object](v, k, w.Namespace, w.Primary)
	if !ok {
		return nil, false
	}
	return obj.GetAnnotations(), true
}

// pathOf is the address of workload w's page.
func pathOf(w workload.Workload) string {
	if sk, ok := setKindNamed(w.Kind); ok {
		return "/" + sk.route + "/" + w.Namespace + "/" + w.Name
	}
	return workloadPath(w.Namespace, w.Name)
}

// historyKey is the key of a set's history among the workloads': kind,
// namespace and name, which no Deployment workload's namespace/name is.
func historyKey(kindName, ns, name string) string {
	return contract.SetTemplateKey(kindName, ns, name)
}

// setModel builds the page of set ns/name of kind sk from the caches; ok
// is false when the caches hold no such set.
func (s *Server) setModel(v *view, sk setKind, ns, name string) (setPage, bool) {
	obj, ok := get[metav1.Object](v, sk.cache, ns, name)
	if !ok {
		return setPage{}, false
	}
	w := workload.DescribeSet(sk.name, obj)
	repo := s.cfg.Repos[w.Sync]
	now := s.cfg.Clock.Now()
	selector, service := setSelector(obj)
	tr := workload.NewSetTrace(w, obj, setPods(v, obj, selector))
	if service != "" {
		svc, _ := get[*corev1.Service](v, kindServices, ns, service)
		tr.Services = append(tr.Services, workload.NewTraceService(service, svc,
			indexed[*discoveryv1.EndpointSlice](v, kindEndpointSlices, ns+"/"+service)))
	}
	page := setPage{W: w, Commit: commitLink(repo, w.Commit), Step: stepLabel(obj.GetAnnotations()), Services: tr.Services}
	if tr.Set != nil {
		page.Set = *tr.Set
	}
	for _, p := range tr.Pods {
		page.Pods = append(page.Pods, setPod{TracePod: p, Is: revisionRole(page.Set, p.Revision)})
		if p.Ready {
			page.Ready++
		}
	}
	page.Events = eventsAbout(v, kindRolloutEvents, sk.name, ns, name, recentWorkloadEvents, repo)
	statuses, _ := v.hist.workloadHistory(historyKey(sk.name, ns, name))
	page.Timeline = timelinePlot(w.Revision, statuses, page.Events, now)
	for i := len(statuses) - 1; i >= 0; i-- {
		page.History = append(page.History, statuses[i])
	}
	return page, true
}

// setSelector is the pod selector of a StatefulSet or a DaemonSet, and a
// StatefulSet's Service (spec.serviceName, "" for none).
func setSelector(obj metav1.Object) (*metav1.LabelSelector, string) {
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		return o.Spec.Selector, o.Spec.ServiceName
	case *appsv1.DaemonSet:
		return o.Spec.Selector, ""
	}
	return nil, ""
}

// setPods are the cached pods that set obj's selector selects and that it
// controls: a pod relabelled out of the selector is one its controller
// lets go of. A selector that cannot be read, or is empty (the API server
// refuses such a set), selects none.
func setPods(v *view, obj metav1.Object, selector *metav1.LabelSelector) []*corev1.Pod {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || selector == nil || sel.Empty() {
		return nil
	}
	pods := indexed[*corev1.Pod](v, kindSetPods, string(obj.GetUID()))
	return slices.DeleteFunc(pods, func(p *corev1.Pod) bool { return !sel.Matches(labels.Set(p.Labels)) })
}

// revisionRole says what revision rev is to set s: "update" or "current"
// while a StatefulSet goes from one to the other, "" else (a DaemonSet's
// status names neither).
func revisionRole(s workload.TraceSet, rev string) string {
	if rev == "" || s.CurrentRevision == s.UpdateRevision {
		return ""
	}
	switch rev {
	case s.UpdateRevision:
		return "update"
	case s.CurrentRevision:
		return "current"
	}
	return ""
}

// recordSet notes the status of set ns/name of workload kind kindName as
// its annotations say now; a set that is gone is forgotten. A set steers
// no Service: its Service's endpoints are shown as they are, not kept.
func (v *view) recordSet(kindName, ns, name string) {
	sk, ok := setKindNamed(kindName)
	if !ok || name == "" {
		return
	}
	key := historyKey(kindName, ns, name)
	obj, ok := get[metav1.Object](v, sk.cache, ns, name)
	if !ok {
		v.hist.forgetWorkload(key)
		return
	}
	w := workload.DescribeSet(kindName, obj)
	entry := statusEntry{Revision: w.Revision, Phase: w.Phase, Step: obj.GetAnnotations()[contract.AnnotationStep], Message: w.Message}
	v.hist.noteWorkload(key, entry, nil, nil)
}
