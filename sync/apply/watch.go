package apply

import (
	"hash/fnv"
	"maps"
	"slices"
	gosync "sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/contract"
)

// Where a watched object's slimmed copy keeps what it is judged by (see
// Watches.slim).
const (
	// metaHashKey keeps the hash of its labels and annotations.
	metaHashKey = "plimsoll.dev/metadata-hash"
	// writersHashKey keeps the hash of the managed-fields entries of
	// every writer of the object itself but the steering manager.
	writersHashKey = "plimsoll.dev/writers-hash"
	// steeringHashKey keeps the hash of the steering manager's entry.
	steeringHashKey = "plimsoll.dev/steering-hash"
)

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
// resourceVersion, generation, its sync label, a hash of its labels and
// annotations and two hashes of its managed fields (see Watches.slim).
//
// A change is what a sync would have to look at again: an object created
// or deleted, its labels or annotations changed, or its spec (its
// generation moved; for kinds without a generation, any new
// resourceVersion). A status written by a controller (a Deployment's
// replicas, an autoscaler's metrics) moves neither, so it is no change.
// Nor is a write of the steering manager alone (the rollout controller's:
// a Service's selector swapped to the new color, an autoscaler turned to
// it), which a sync keeps as it is (see keepSelectorKeys): its
// managed-fields entry moved and no other writer's did. Over a blue-green
// rollout of 300 workloads, polled every 2 s, each swap made the next
// poll a full sync: about 100 of them, each rendering, listing and
// comparing every object to find nothing to write.
//
// A Watch is one sync's view of a Watches, which the syncs of one daemon
// share: one watch per scope however many syncs write there.
type Watch struct {
	hub  *Watches
	sync string
}

// Watches is the watches of every sync of a daemon: one informer per
// scope that some sync follows, each counting the changes of every sync
// by the objects' plimsoll.dev/sync label.
type Watches struct {
	client   metadata.Interface
	selector string
	// steering is the field manager whose writes alone are no change.
	steering string

	mu      gosync.Mutex
	scopes  map[Scope]*scopeWatch
	changes map[string]*atomic.Uint64
}

// scopeWatch is the informer of one scope, the syncs that follow it, and
// how to stop it.
type scopeWatch struct {
	informer cache.SharedIndexInformer
	users    map[string]bool
	stop     chan struct{}
}

// NewWatch returns a Watch of the objects labelled with sync syncName,
// alone, to which a write of field manager steering alone is no change
// (see Watch). It follows nothing until Follow.
func NewWatch(client metadata.Interface, syncName, steering string) *Watch {
	return newWatches(client, contract.LabelSync+"="+syncName, steering).For(syncName)
}

// NewWatches returns the Watches of every object labelled
// plimsoll.dev/sync, to be shared by the syncs of a daemon (see For),
// to which a write of field manager steering alone is no change.
func NewWatches(client metadata.Interface, steering string) *Watches {
	return newWatches(client, contract.LabelSync, steering)
}

// newWatches returns Watches of the objects selector selects.
func newWatches(client metadata.Interface, selector, steering string) *Watches {
	return &Watches{client: client, selector: selector, steering: steering,
		scopes: map[Scope]*scopeWatch{}, changes: map[string]*atomic.Uint64{}}
}

// For returns the Watch of sync name.
func (ws *Watches) For(name string) *Watch {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.changes[name] == nil {
		ws.changes[name] = &atomic.Uint64{}
	}
	return &Watch{hub: ws, sync: name}
}

// counter returns the change count of sync name; nil for a sync no Watch
// is for. The caller holds no lock.
func (ws *Watches) counter(name string) *atomic.Uint64 {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.changes[name]
}

// changed counts a change of the object obj, for the sync that labelled
// it; for every sync when obj tells none (a tombstone without its
// object).
func (ws *Watches) changed(obj any) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		if c := ws.counter(m.Labels[contract.LabelSync]); c != nil {
			c.Add(1)
		}
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, c := range ws.changes {
		c.Add(1)
	}
}

// Follow watches exactly scopes for the sync from now on: it starts a
// watch for each scope no sync follows yet and stops those that no sync
// follows any more.
func (w *Watch) Follow(scopes []Scope) {
	ws := w.hub
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for s, sw := range ws.scopes {
		if !slices.Contains(scopes, s) {
			delete(sw.users, w.sync)
			if len(sw.users) == 0 {
				close(sw.stop)
				delete(ws.scopes, s)
			}
		}
	}
	for _, s := range scopes {
		if sw, ok := ws.scopes[s]; ok {
			sw.users[w.sync] = true
			continue
		}
		informer := metadatainformer.NewFilteredMetadataInformer(ws.client, s.Resource, s.Namespace, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.LabelSelector = ws.selector }).Informer()
		_ = informer.SetTransform(ws.slim) // only fails once started
		_, _ = informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if !initial { // the first list is where a Mark starts from
					ws.changed(obj)
				}
			},
			UpdateFunc: func(old, obj any) { ws.updated(old, obj) },
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				ws.changed(obj)
			},
		})
		sw := &scopeWatch{informer: informer, users: map[string]bool{w.sync: true}, stop: make(chan struct{})}
		ws.scopes[s] = sw
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
	ws := w.hub
	ws.mu.Lock()
	defer ws.mu.Unlock()
	m := WatchMark{changes: ws.changes[w.sync].Load(), listening: map[Scope]bool{}}
	for s, sw := range ws.scopes {
		if sw.informer.HasSynced() {
			m.listening[s] = true
		}
	}
	return m
}

// Unchanged reports whether nothing in scopes has changed since m: each
// was listening at m and still is, and no change of the sync was counted
// since. A scope that began listening after m could have missed a change
// (an object deleted before its first list), so it does not count.
func (w *Watch) Unchanged(m WatchMark, scopes []Scope) bool {
	ws := w.hub
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, s := range scopes {
		if _, ok := ws.scopes[s]; !ok || !m.listening[s] {
			return false
		}
	}
	return ws.changes[w.sync].Load() == m.changes
}

// Stop stops following: the watches that no other sync follows stop.
func (w *Watch) Stop() { w.Follow(nil) }

// updated counts an update that is a change (see Watch), for the sync
// the object was labelled by and, when its label changed, the one it is
// labelled by now.
func (ws *Watches) updated(old, obj any) {
	before, ok1 := old.(*metav1.PartialObjectMetadata)
	after, ok2 := obj.(*metav1.PartialObjectMetadata)
	switch {
	case !ok1 || !ok2:
		ws.changed(obj)
	case before.ResourceVersion == after.ResourceVersion:
		// A relist that found the object as it was.
	case before.Annotations[metaHashKey] != after.Annotations[metaHashKey]:
		ws.changed(after)
		if before.Labels[contract.LabelSync] != after.Labels[contract.LabelSync] {
			ws.changed(before)
		}
	case before.Annotations[writersHashKey] == after.Annotations[writersHashKey] &&
		before.Annotations[steeringHashKey] != after.Annotations[steeringHashKey]:
		// The steering manager wrote it, and no one else.
	case after.Generation != 0 && before.Generation == after.Generation:
		// Its status moved, not its spec.
	default:
		ws.changed(after)
	}
}

// slim keeps of a watched object what a change is judged by: its
// identity, resourceVersion, generation, its sync label, a hash of its
// labels and annotations (in place of them: a
// last-applied-configuration annotation can be as large as the object),
// and two hashes of its managed-fields entries of the object itself (not
// of its status or scale): the steering manager's, and everyone else's.
// An entry moves whenever its manager changes a value it owns (its time)
// or comes to own other fields.
func (ws *Watches) slim(obj any) (any, error) {
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
	writers, steering := fnv.New64a(), fnv.New64a()
	for _, e := range m.ManagedFields {
		if e.Subresource != "" {
			continue
		}
		w := writers
		if e.Manager == ws.steering {
			w = steering
		}
		var at string
		if e.Time != nil {
			at = e.Time.UTC().Format(time.RFC3339)
		}
		for _, part := range []string{e.Manager, string(e.Operation), e.APIVersion, at, e.FieldsV1.GetRawString()} {
			w.Write([]byte(part))
			w.Write([]byte{0})
		}
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
		Labels: map[string]string{contract.LabelSync: m.Labels[contract.LabelSync]},
		Annotations: map[string]string{metaHashKey: string(h.Sum(nil)),
			writersHashKey: string(writers.Sum(nil)), steeringHashKey: string(steering.Sum(nil))},
	}}, nil
}
