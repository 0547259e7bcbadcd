package apply

import (
	"hash/fnv"
	"maps"
	"slices"
	gosync "sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/contract"
)

// metaHashKey is where a watched object's slimmed copy keeps the hash of
// its labels and annotations (see slim).
const metaHashKey = "plimsoll.dev/metadata-hash"

// Scope is one resource in one namespace ("" for a cluster-scoped
// resource): what the plan lists once to read the live objects, and what
// a Watch follows.
type Scope struct {
	Resource  schema.GroupVersionResource
	Namespace string
}

// Watch follows, with one metadata-only watch per scope, every object a
// sync labelled, so that a poll of an unchanged commit can tell without a
// request whether anything the sync wrote has changed since it last
// looked. It counts changes; it keeps, per object, only its name,
// resourceVersion, generation and a hash of its labels and annotations.
//
// A change is what a sync would have to look at again: an object created
// or deleted, its labels or annotations changed, or its spec (its
// generation moved; for kinds without a generation, any new
// resourceVersion). A status written by a controller (a Deployment's
// replicas, an autoscaler's metrics) moves neither, so it is no change.
type Watch struct {
	client   metadata.Interface
	selector string

	mu      gosync.Mutex
	scopes  map[Scope]*scopeWatch
	changes atomic.Uint64
}

// scopeWatch is the informer of one scope and how to stop it.
type scopeWatch struct {
	informer cache.SharedIndexInformer
	stop     chan struct{}
}

// NewWatch returns a Watch of the objects labelled with sync syncName. It
// follows nothing until Follow.
func NewWatch(client metadata.Interface, syncName string) *Watch {
	return &Watch{client: client, selector: contract.LabelSync + "=" + syncName, scopes: map[Scope]*scopeWatch{}}
}

// Follow watches exactly scopes from now on: it starts a watch for each
// scope it does not follow yet and stops those of scopes no longer given.
func (w *Watch) Follow(scopes []Scope) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s, sw := range w.scopes {
		if !slices.Contains(scopes, s) {
			close(sw.stop)
			delete(w.scopes, s)
		}
	}
	for _, s := range scopes {
		if _, ok := w.scopes[s]; ok {
			continue
		}
		informer := metadatainformer.NewFilteredMetadataInformer(w.client, s.Resource, s.Namespace, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.LabelSelector = w.selector }).Informer()
		_ = informer.SetTransform(slim) // only fails once started
		_, _ = informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(_ any, initial bool) {
				if !initial { // the first list is where a Mark starts from
					w.changes.Add(1)
				}
			},
			UpdateFunc: func(old, obj any) { w.updated(old, obj) },
			DeleteFunc: func(any) { w.changes.Add(1) },
		})
		sw := &scopeWatch{informer: informer, stop: make(chan struct{})}
		w.scopes[s] = sw
		go informer.Run(sw.stop)
	}
}

// WatchMark is a moment of a Watch: the changes counted so far and the
// scopes whose watch was listening then.
type WatchMark struct {
	changes   uint64
	listening map[Scope]bool
}

// Mark returns the moment now. A sync takes it before it reads the live
// objects: whatever changes after that, even during the sync, counts
// against it.
func (w *Watch) Mark() WatchMark {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := WatchMark{changes: w.changes.Load(), listening: map[Scope]bool{}}
	for s, sw := range w.scopes {
		if sw.informer.HasSynced() {
			m.listening[s] = true
		}
	}
	return m
}

// Unchanged reports whether nothing in scopes has changed since m: each
// was listening at m and still is, and no change was counted since. A
// scope that began listening after m could have missed a change (an
// object deleted before its first list), so it does not count.
func (w *Watch) Unchanged(m WatchMark, scopes []Scope) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range scopes {
		if _, ok := w.scopes[s]; !ok || !m.listening[s] {
			return false
		}
	}
	return w.changes.Load() == m.changes
}

// Stop stops every watch.
func (w *Watch) Stop() { w.Follow(nil) }

// updated counts an update that is a change (see Watch).
func (w *Watch) updated(old, obj any) {
	before, ok1 := old.(*metav1.PartialObjectMetadata)
	after, ok2 := obj.(*metav1.PartialObjectMetadata)
	switch {
	case !ok1 || !ok2:
		w.changes.Add(1)
	case before.ResourceVersion == after.ResourceVersion:
		// A relist that found the object as it was.
	case before.Annotations[metaHashKey] != after.Annotations[metaHashKey]:
		w.changes.Add(1)
	case after.Generation != 0 && before.Generation == after.Generation:
		// Its status moved, not its spec.
	default:
		w.changes.Add(1)
	}
}

// slim keeps of a watched object what a change is judged by: its
// identity, resourceVersion, generation, and a hash of its labels and
// annotations (in place of them: a last-applied-configuration annotation
// can be as large as the object).
func slim(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	h := fnv.New64a()
	for _, kv := range []map[string]string{m.Labels, m.Annotations} {
		for _, k := range slices.Sorted(maps.Keys(kv)) {
			h.Write([]byte(k))
			h.Write([]byte{0})
			h.Write([]byte(kv[k]))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
		Annotations: map[string]string{metaHashKey: string(h.Sum(nil))},
	}}, nil
}
