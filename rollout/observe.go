package rollout

import (
	"context"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/strategies"
)

// serviceNameLabel names, on an EndpointSlice, the Service it belongs to.
const serviceNameLabel = discoveryv1.LabelServiceName

// view is what the informers of one namespace (or of all) hold.
type view struct {
	// index finds a workload's Deployments, ReplicaSets and pods, and a
	// Service's users and EndpointSlices (see byWorkload, byService).
	index    indexes
	deploys  appslisters.DeploymentLister
	services corelisters.ServiceLister
	// analyses are the ConfigMaps labelled plimsoll.dev/analysis.
	analyses corelisters.ConfigMapLister
	// autoscalers are the HorizontalPodAutoscalers (autoscaling/v2).
	autoscalers autoscalinglisters.HorizontalPodAutoscalerLister
	// statefulSets and daemonSets are those the sync applied.
	statefulSets appslisters.StatefulSetLister
	daemonSets   appslisters.DaemonSetLister
}

// viewOf finds the informers that hold namespace ns: its own, or those of
// every namespace; ok is false when the controller does not watch it.
func (c *Controller) viewOf(ns string) (v view, ok bool) {
	if v, ok = c.views[ns]; !ok {
		v, ok = c.views[metav1.NamespaceAll]
	}
	return v, ok
}

// watches reports whether the controller follows namespace ns.
func (c *Controller) watches(ns string) bool {
	_, ok := c.viewOf(ns)
	return ok
}

// workload is the observed state of one workload, read from the caches
// for one reconcile: every Deployment labelled with it (by name), the
// ReplicaSets and pods labelled with it, and the Services its Deployments'
// annotations (or Git's) name, with the pods their EndpointSlices hold as
// ready. Nothing in it may be changed: it is the caches' own objects.
type workload struct {
	ns, name string
	deploys  map[string]*appsv1.Deployment
	rsets    []*appsv1.ReplicaSet
	pods     []*corev1.Pod
	services map[string]*corev1.Service
	// ready holds, by Service name, the pods its EndpointSlices list as
	// ready, sorted.
	ready map[string][]string
	// autoscalers are the HorizontalPodAutoscalers of the namespace that
	// target one of the workload's Deployments (<name> and its sides),
	// whether or not that Deployment exists.
	autoscalers []*autoscalingv2.HorizontalPodAutoscaler
	// intended holds, by name, the cached copy (nil: none) of each
	// Deployment of deploys that this reconcile means to write and has
	// not written yet (see intend).
	intended map[string]*appsv1.Deployment
}

// deployment returns the workload's Deployment name+suffix, nil when
// there is none.
func (w *workload) deployment(suffix string) *appsv1.Deployment {
	return w.deploys[w.name+suffix]
}

// lookup is a workload.Lookup over w's Deployments.
func (w *workload) lookup(name string) (*appsv1.Deployment, error) {
	return w.deploys[name], nil
}

// colorSuffixes are the suffixes of a blue-green workload's Deployments;
// sideSuffixes are those of every Deployment a workload runs besides
// <name>.
var (
	colorSuffixes = []string{contract.SuffixBlue, contract.SuffixGreen}
	sideSuffixes  = []string{contract.SuffixBlue, contract.SuffixGreen, contract.SuffixCanary}
)

// hasAny reports whether w has a Deployment of any of suffixes.
func (w *workload) hasAny(suffixes []string) bool {
	for _, s := range suffixes {
		if w.deployment(s) != nil {
			return true
		}
	}
	return false
}

// intend puts want in w in place of live (nil: want is to be created),
// as the API server would return it once written, without writing it:
// the plan that follows is made from it, and that plan's write of the
// Deployment carries both (see cached). Its generation moves on as the
// server's would for a change of spec, so the planners read it as not yet
// observed by the Deployment controller, as they read a Deployment just
// written; a change of labels and annotations alone keeps it.
func (w *workload) intend(live, want *appsv1.Deployment) {
	d := want.DeepCopy()
	switch {
	case live == nil:
		d.Generation, d.Status = 1, appsv1.DeploymentStatus{}
	case !equality.Semantic.DeepEqual(live.Spec, want.Spec):
		// A new spec: past what the Deployment controller observed, which
		// may be ahead of live's generation as presented (see
		// specGenerations.of: status writes since the spec changed last
		// are not counted). Read as observed, the old spec's conditions
		// (a progress deadline exceeded by the revision before) would
		// fail the new template before it goes out.
		d.Generation, d.Status = max(live.Generation, live.Status.ObservedGeneration)+1, *live.Status.DeepCopy()
	default:
		// Labels and annotations alone: written to the status
		// subresource, or with labels to the Deployment, neither of which
		// makes a new generation (see patchDeployment).
		d.Generation, d.Status = live.Generation, *live.Status.DeepCopy()
	}
	if w.intended == nil {
		w.intended = map[string]*appsv1.Deployment{}
	}
	w.intended[d.Name] = live
	w.deploys[d.Name] = d
}

// cached returns what a write of d, one of w's Deployments, goes against:
// d itself, or for an intended one (see intend) the cached copy it stands
// in for, nil when it is to be created.
func (w *workload) cached(d *appsv1.Deployment) *appsv1.Deployment {
	if live, ok := w.intended[d.Name]; ok && w.deploys[d.Name] == d {
		return live
	}
	return d
}

// observe reads workload ns/name from the caches. serviceKeys' values in
// annotations (Git's, or else those of the workload's Deployments) name
// the Services to read.
func (c *Controller) observe(ns, name string, annotations map[string]string) *workload {
	w := &workload{ns: ns, name: name, deploys: map[string]*appsv1.Deployment{},
		services: map[string]*corev1.Service{}, ready: map[string][]string{}}
	v, ok := c.viewOf(ns)
	if !ok {
		return w
	}
	key := ns + "/" + name
	for _, d := range indexed[*appsv1.Deployment](v.index.deploys, byWorkload, key) {
		w.deploys[d.Name] = c.specs.of(c.written.newest(d))
	}
	for _, d := range c.written.recent(ns, name, name+contract.SuffixCanary, name+contract.SuffixBlue, name+contract.SuffixGreen) {
		if w.deploys[d.Name] == nil && d.Labels[contract.LabelWorkload] == name {
			w.deploys[d.Name] = c.specs.of(d)
		}
	}
	w.rsets = indexed[*appsv1.ReplicaSet](v.index.rsets, byWorkload, key)
	w.pods = indexed[*corev1.Pod](v.index.pods, byWorkload, key)
	for i, p := range w.pods {
		w.pods[i] = c.labelled.newest(p)
	}
	slices.SortFunc(w.pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if v.autoscalers != nil {
		list, _ := v.autoscalers.HorizontalPodAutoscalers(ns).List(labels.Everything())
		w.autoscalers = ofWorkload(list, name)
	}
	names := map[string]bool{}
	collect := func(a map[string]string) {
		for _, key := range serviceKeys {
			if a[key] != "" {
				names[a[key]] = true
			}
		}
	}
	collect(annotations)
	for _, d := range w.deploys {
		collect(d.Annotations)
	}
	for svc := range names {
		if s, err := v.services.Services(ns).Get(svc); err == nil {
			w.services[svc] = c.steered.newest(s)
		}
		w.ready[svc] = strategies.ReadyPods(indexed[*discoveryv1.EndpointSlice](v.index.slices, byService, ns+"/"+svc))
	}
	return w
}

// lookUpMissing reads from the API server the Services that Git's
// annotations name and the cache does not hold: one the sync created a
// moment ago may not have reached the informer when the handoff queues the
// workload. Only a Service missing from the cache costs a request; one
// that does not exist stays missing, and is refused as bad input.
func (c *Controller) lookUpMissing(ctx context.Context, w *workload, annotations map[string]string) {
	for _, key := range serviceKeys {
		name := annotations[key]
		if name == "" || w.services[name] != nil {
			continue
		}
		if svc, err := c.client.CoreV1().Services(w.ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			w.services[name] = svc
		}
	}
}

// serviceKeys are the annotations that name a Service a strategy steers.
var serviceKeys = []string{contract.AnnotationActiveService, contract.AnnotationPreviewService, contract.AnnotationService}

// serviceUsers returns the keys of the workloads of namespace ns whose
// Deployments name Service service in their annotations.
func (c *Controller) serviceUsers(ns, service string) []string {
	v, ok := c.viewOf(ns)
	if !ok {
		return nil
	}
	var keys []string
	for _, d := range indexed[*appsv1.Deployment](v.index.deploys, byService, ns+"/"+service) {
		if key := d.Namespace + "/" + d.Labels[contract.LabelWorkload]; !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// podStates returns the pods as the planners see them, those for which
// keep holds.
func podStates(pods []*corev1.Pod, keep func(p *corev1.Pod) bool) []strategies.Pod {
	var out []strategies.Pod
	for _, p := range pods {
		if keep(p) {
			out = append(out, podState(p))
		}
	}
	return out
}

// podState is p as the planners see it.
func podState(p *corev1.Pod) strategies.Pod {
	ready, since := strategies.PodReadiness(p)
	serving := p.Labels[contract.LabelServing] == "true"
	return strategies.Pod{Name: p.Name, Ready: ready, NotReadySince: since, Serving: serving, Hash: p.Annotations[contract.AnnotationTemplateHash],
		Deleting: p.DeletionTimestamp != nil, Unlabelled: !serving && p.Annotations[contract.AnnotationServed] == "true",
		Orphan: metav1.GetControllerOf(p) == nil}
}
