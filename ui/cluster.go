package ui

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	gosync "sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"plimsoll.dev/plimsoll/contract"
	"plimsoll.dev/plimsoll/workload"
)

// kind is one kind of object the view reads, through one informer per
// namespace it watches (or one for all).
type kind int

// The kinds the view reads.
const (
	kindDeployments kind = iota
	kindReplicaSets
	kindPods
	kindServices
	kindEndpointSlices
	kindSyncRecords
	kindAnalyses
	kindSyncEvents
	kindRolloutEvents
	kindStatefulSets
	kindDaemonSets
	kindSetPods
	numKinds
)

// source is what an informer of a kind lists and watches.
type source struct {
	// group, resource and what name the kind for access reviews and for
	// the notice of what the user may not read.
	group, resource, what string
	// labels and fields select the objects listed.
	labels, fields string
	informer       func(c kubernetes.Interface, ns string, ix cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer
	// index is the indexer's key of an object ("" for none).
	index func(obj any) string
}

// sources are the informers of each kind. Only the objects plimsoll
// labels are listed, but for Services and EndpointSlices (few, and
// trimmed) and Events, which are those of plimsoll's two components.
var sources = [numKinds]source{
	kindDeployments: {group: "apps", resource: "deployments", what: "Deployments", labels: contract.LabelWorkload, index: byWorkload,
		informer: func(c kubernetes.Interface, ns string, ix cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return appsinformers.NewFilteredDeploymentInformer(c, ns, 0, ix, tweak)
		}},
	kindReplicaSets: {group: "apps", resource: "replicasets", what: "ReplicaSets", labels: contract.LabelWorkload, index: byWorkload,
		informer: func(c kubernetes.Interface, ns string, ix cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return appsinformers.NewFilteredReplicaSetInformer(c, ns, 0, ix, tweak)
		}},
	kindPods: {resource: "pods", what: "pods", labels: contract.LabelWorkload, index: byWorkload,
		informer: func(c kubernetes.Interface, ns string, ix cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return coreinformers.NewFilteredPodInformer(c, ns, 0, ix, tweak)
		}},
	kindServices: {resource: "services", what: "Services",
		informer: func(c kubernetes.Interface, ns string, ix cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return coreinformers.NewFilteredServiceInformer(c, ns, 0, ix, tweak)
		}},
	kindEndpointSlices: {group: "discovery.k8s.io", resource: "endpointslices", what: "EndpointSlices",
		labels: discoveryv1.LabelServiceName, index: byService,
		informer: func(c kubernetes.Interface, ns string, ix cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return discoveryinformers.NewFilteredEndpointSliceInformer(c, ns, 0, ix, tweak)
		}},
	kindSyncRecords:   {resource: "configmaps", what: "the syncs' records (ConfigMaps)", labels: contract.LabelSync, informer: configMaps},
	kindAnalyses:      {resource: "configmaps", what: "analyses (ConfigMaps)", labels: contract.LabelAnalysis, informer: configMaps},
	kindSyncEvents:    {resource: "events", what: "Events", fields: "source=" + syncComponent, index: byInvolved, informer: events},
	kindRolloutEvents: {resource: "events", what: "Events", fields: "source=" + rolloutComponent, index: byInvolved, informer: events},
	// StatefulSets and DaemonSets carry no workload label: those a sync
	// applied are its workloads, as `plimsoll status` lists them.
	kindStatefulSets: {group: "apps", resource: "statefulsets", what: "StatefulSets", labels: contract.LabelSync,
		informer: func(c kubernetes.Interface, ns string, ix cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return appsinformers.NewFilteredStatefulSetInformer(c, ns, 0, ix, tweak)
		}},
	kindDaemonSets: {group: "apps", resource: "daemonsets", what: "DaemonSets", labels: contract.LabelSync,
		informer: func(c kubernetes.Interface, ns string, ix cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return appsinformers.NewFilteredDaemonSetInformer(c, ns, 0, ix, tweak)
		}},
	// The pods of sets carry no workload label either, but their
	// controllers label each with its revision, which a Deployment's pods
	// never have: the pods of every set, not of every workload, are held.
	kindSetPods: {resource: "pods", what: "pods", labels: appsv1.ControllerRevisionHashLabelKey, index: byController,
		informer: func(c kubernetes.Interface, ns string, ix cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
			return coreinformers.NewFilteredPodInformer(c, ns, 0, ix, tweak)
		}},
}

func configMaps(c kubernetes.Interface, ns string, ix cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	return coreinformers.NewFilteredConfigMapInformer(c, ns, 0, ix, tweak)
}

func events(c kubernetes.Interface, ns string, ix cache.Indexers, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	return coreinformers.NewFilteredEventInformer(c, ns, 0, ix, tweak)
}

// The index of each kind that has one.
const indexName = "ui"

// byWorkload indexes an object by namespace/workload label.
func byWorkload(obj any) string {
	m, ok := obj.(metav1.Object)
	if !ok || m.GetLabels()[contract.LabelWorkload] == "" {
		return ""
	}
	return m.GetNamespace() + "/" + m.GetLabels()[contract.LabelWorkload]
}

// byService indexes an EndpointSlice by namespace/Service.
func byService(obj any) string {
	m, ok := obj.(metav1.Object)
	if !ok || m.GetLabels()[discoveryv1.LabelServiceName] == "" {
		return ""
	}
	return m.GetNamespace() + "/" + m.GetLabels()[discoveryv1.LabelServiceName]
}

// byController indexes an object by the UID of its controller: a set's
// pods by their set.
func byController(obj any) string {
	m, ok := obj.(metav1.Object)
	if !ok {
		return ""
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		return string(ref.UID)
	}
	return ""
}

// byInvolved indexes an Event by namespace/name of the object it is about.
func byInvolved(obj any) string {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return ""
	}
	return e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
}

// view is the running part of the web view: its informers, what the user
// may not read, the histories and the change feed. It is made when the
// first page is asked for and stopped after a while without one (see
// Server).
type view struct {
	// scopes are the namespaces watched, metav1.NamespaceAll for all.
	scopes []string
	// informers holds, for each kind, one informer per scope (nil where
	// the user may not read the kind).
	informers [numKinds][]cache.SharedIndexInformer
	// denied says what the user may not read, one line each.
	denied []string
	// recording is set once every informer has listed: the histories
	// start from a whole picture, not from the first objects of a list
	// (a Service's endpoints before its pods are known).
	recording atomic.Bool
	hist      *histories
	changes   *changes
	synced    chan struct{}
	stop      context.CancelFunc
	done      gosync.WaitGroup
}

// startView checks what the client may read in each scope, starts an
// informer for each kind it may, and returns at once; synced is closed
// once every informer has listed.
func startView(ctx context.Context, client kubernetes.Interface, scopes []string, clk clock.PassiveClock, log *slog.Logger) *view {
	ctx, cancel := context.WithCancel(ctx)
	v := &view{scopes: scopes, changes: newChanges(), synced: make(chan struct{}), stop: cancel}
	v.hist = newHistories(clk)
	var hasSynced []cache.InformerSynced
	for k := range numKinds {
		v.informers[k] = make([]cache.SharedIndexInformer, len(scopes))
		for i, ns := range scopes {
			src := sources[k]
			if why := mayRead(ctx, client, src, ns); why != "" {
				if !slices.Contains(v.denied, why) {
					v.denied = append(v.denied, why)
				}
				continue
			}
			inf := newInformer(client, src, ns)
			if _, err := inf.AddEventHandler(v.handler(k)); err != nil {
				log.Error("watch for the web view", "kind", src.what, "err", err)
				continue
			}
			v.informers[k][i] = inf
			hasSynced = append(hasSynced, inf.HasSynced)
			v.done.Add(1)
			go func() {
				defer v.done.Done()
				inf.RunWithContext(ctx)
			}()
		}
	}
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), hasSynced...) {
			v.recording.Store(true)
			v.recordAll()
			close(v.synced)
		}
	}()
	return v
}

// close stops the informers and waits for them.
func (v *view) close() {
	v.stop()
	v.done.Wait()
}

// newInformer is an informer of src in namespace ns, its objects trimmed.
func newInformer(client kubernetes.Interface, src source, ns string) cache.SharedIndexInformer {
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	if src.index != nil {
		indexers[indexName] = func(obj any) ([]string, error) {
			if key := src.index(obj); key != "" {
				return []string{key}, nil
			}
			return nil, nil
		}
	}
	inf := src.informer(client, ns, indexers, func(o *metav1.ListOptions) { o.LabelSelector, o.FieldSelector = src.labels, src.fields })
	if err := inf.SetTransform(trim); err != nil {
		panic(fmt.Sprintf("set the web view's cache transform: %v", err)) // a new informer takes one
	}
	return inf
}

// mayRead says why the client may not list and watch src in namespace ns
// (metav1.NamespaceAll: in every one), "" when it may. A review that
// cannot be made counts as allowed: the informer then says what fails.
func mayRead(ctx context.Context, client kubernetes.Interface, src source, ns string) string {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: src.group, Resource: src.resource}}}
		got, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil || got.Status.Allowed {
			continue
		}
		where := "in namespace " + ns
		if ns == metav1.NamespaceAll {
			where = "in every namespace"
		}
		return fmt.Sprintf("%s %s: you may not %s them", src.what, where, verb)
	}
	return ""
}

// handler keeps the histories and tells the change feed of every change
// to an object of kind k.
func (v *view) handler(k kind) cache.ResourceEventHandler {
	changed := func(obj any, deleted bool) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		switch {
		case !v.recording.Load():
		case k == kindDeployments:
			v.recordWorkload(m.GetNamespace(), m.GetLabels()[contract.LabelWorkload])
		case k == kindStatefulSets:
			v.recordSet(workload.KindStatefulSet, m.GetNamespace(), m.GetName())
		case k == kindDaemonSets:
			v.recordSet(workload.KindDaemonSet, m.GetNamespace(), m.GetName())
		case k == kindEndpointSlices:
			v.recordEndpoints(m.GetNamespace(), m.GetLabels()[discoveryv1.LabelServiceName])
		case k == kindServices && deleted:
			v.hist.forgetService(m.GetNamespace() + "/" + m.GetName())
		}
		v.changes.add(m.GetNamespace())
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(obj, false) },
		UpdateFunc: func(_, obj any) { changed(obj, false) },
		DeleteFunc: func(obj any) { changed(obj, true) },
	}
}

// list returns the cached objects of kind k in namespace ns (all the view
// watches for metav1.NamespaceAll), typed.
func list[T any](v *view, k kind, ns string) []T {
	var out []T
	for i, scope := range v.scopes {
		inf := v.informers[k][i]
		if inf == nil || (ns != metav1.NamespaceAll && scope != metav1.NamespaceAll && scope != ns) {
			continue
		}
		var items []any
		if ns == metav1.NamespaceAll {
			items = inf.GetStore().List()
		} else {
			items, _ = inf.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
		}
		out = appendTyped(out, items)
	}
	return out
}

// indexed returns the cached objects of kind k whose index key is key
// (namespace/name of a workload, Service or Event subject, the UID of a
// set), typed.
func indexed[T any](v *view, k kind, key string) []T {
	var out []T
	for _, inf := range v.informers[k] {
		if inf == nil {
			continue
		}
		items, _ := inf.GetIndexer().ByIndex(indexName, key)
		out = appendTyped(out, items)
	}
	return out
}

// get returns the cached object of kind k named ns/name.
func get[T any](v *view, k kind, ns, name string) (T, bool) {
	var zero T
	for _, inf := range v.informers[k] {
		if inf == nil {
			continue
		}
		if obj, ok, _ := inf.GetStore().GetByKey(ns + "/" + name); ok {
			if t, ok := obj.(T); ok {
				return t, true
			}
		}
	}
	return zero, false
}

// reads reports whether the view reads kind k at all.
func (v *view) reads(k kind) bool {
	return slices.ContainsFunc(v.informers[k], func(inf cache.SharedIndexInformer) bool { return inf != nil })
}

func appendTyped[T any](out []T, items []any) []T {
	for _, item := range items {
		if t, ok := item.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// ReadsEverywhere reports whether client may list and watch Deployments
// in every namespace: `plimsoll ui` then shows them all.
func ReadsEverywhere(ctx context.Context, client kubernetes.Interface) bool {
	return mayRead(ctx, client, sources[kindDeployments], metav1.NamespaceAll) == ""
}
