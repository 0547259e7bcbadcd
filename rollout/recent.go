package rollout

import (
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// recentWrites remembers the objects of one kind the controller wrote, as
// the API server returned them, until the informer's cache holds them or a
// later version: a reconcile that runs before the watch event arrives then
// plans from what it wrote, not from the copy before, and its next write
// does not fail on a stale resourceVersion. It is kept for Deployments,
// the Services whose selectors the strategies patch, and the pods they
// label: a blue-green reconcile a moment after the swap must not read the
// active Service as it was before the controller patched it, and plan the
// swap again.
//
// Resource versions are compared as the integers the API server hands out
// (as client-go's IntegerResourceVersionMutationCache does); one that is
// not an integer leaves the cache's copy in use. An object whose watch
// event never comes (a pod deleted meanwhile) is dropped after ttl.
type recentWrites[T object] struct {
	clock clock.PassiveClock
	ttl   time.Duration
	mu    sync.Mutex
	byKey map[string]recentWrite[T]
	// swept is when entries older than ttl were last dropped.
	swept time.Time
}

// object is what recentWrites holds: a pointer to an API object.
type object interface {
	comparable
	metav1.Object
}

type recentWrite[T any] struct {
	obj T
	at  time.Time
}

func newRecentWrites[T object](clk clock.PassiveClock, ttl time.Duration) *recentWrites[T] {
	return &recentWrites[T]{clock: clk, ttl: ttl, byKey: map[string]recentWrite[T]{}, swept: clk.Now()}
}

// wrote remembers obj, as returned by a write, trimmed as the cache
// trims it (obj is changed in place).
func (r *recentWrites[T]) wrote(obj T) {
	var none T
	if obj == none {
		return
	}
	trimInPlace(obj)
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.swept) > r.ttl {
		for key, w := range r.byKey {
			if now.Sub(w.at) > r.ttl {
				delete(r.byKey, key)
			}
		}
		r.swept = now
	}
	r.byKey[obj.GetNamespace()+"/"+obj.GetName()] = recentWrite[T]{obj: obj, at: now}
}

// forget drops what is remembered of object ns/name (deleted).
func (r *recentWrites[T]) forget(ns, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byKey, ns+"/"+name)
}

// newest returns cached, or the object written after it when that is
// newer.
func (r *recentWrites[T]) newest(cached T) T {
	key := cached.GetNamespace() + "/" + cached.GetName()
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.byKey[key]
	if !ok {
		return cached
	}
	if r.clock.Since(w.at) > r.ttl || w.obj.GetUID() != cached.GetUID() ||
		!newer(w.obj.GetResourceVersion(), cached.GetResourceVersion()) {
		delete(r.byKey, key)
		return cached
	}
	return w.obj
}

// recent returns those of the objects ns/names written recently, for
// those the cache does not hold yet.
func (r *recentWrites[T]) recent(ns string, names ...string) []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []T
	for _, name := range names {
		if w, ok := r.byKey[ns+"/"+name]; ok && r.clock.Since(w.at) <= r.ttl {
			out = append(out, w.obj)
		}
	}
	return out
}

// newer reports whether resource version a is later than b.
func newer(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x > y
}
