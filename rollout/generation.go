package rollout

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// specGenerations remembers, for each Deployment the controller wrote,
// the first generation that carries the spec of its current one, as far
// as the controller's own writes tell.
//
// On a Deployment a change of annotations bumps metadata.generation, so
// each status write leaves the Deployment controller a generation behind
// until it syncs the Deployment again, and the planners, which trust its
// counts only once it has observed the latest generation, wait for it.
// The wait is for nothing: a status write changes no field of the spec,
// and the counts the Deployment controller reported for generation 7 hold
// for generation 8 when 8 only added annotations. With 100 workloads
// rolling, that controller's queue runs some 30 s behind, and each step of
// every canary waited those 30 s once or twice.
//
// A write that changes no field of the spec records that the generation
// it produced (8) has the spec of the one it was made over (7, or what
// that one was known to equal in turn); observe then presents the
// Deployment with generation 7, and the planners read it as observed once
// the Deployment controller has observed 7. A write by anyone else (the
// HPA's scale, kubectl) makes a generation the controller did not record:
// it is taken as it is.
type specGenerations struct {
	mu sync.Mutex
	by map[string]specGeneration
}

// specGeneration is what a write of one Deployment left: its uid, the
// generation the write produced, and the first generation with the same
// spec.
type specGeneration struct {
	uid        types.UID
	generation int64
	spec       int64
}

func newSpecGenerations() *specGenerations {
	return &specGenerations{by: map[string]specGeneration{}}
}

// wrote records out, as the API server returned it from a write over
// live (as the controller observed it, see of).
func (s *specGenerations) wrote(live, out *appsv1.Deployment) {
	if live == nil || out == nil || live.UID != out.UID {
		return
	}
	spec := out.Generation
	if equality.Semantic.DeepEqual(live.Spec, out.Spec) {
		spec = min(live.Generation, out.Generation)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.by[out.Namespace+"/"+out.Name] = specGeneration{uid: out.UID, generation: out.Generation, spec: spec}
}

// forget drops what is remembered of Deployment ns/name (deleted).
func (s *specGenerations) forget(ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.by, ns+"/"+name)
}

// of returns d as the planners are to read it: with the first generation
// that carries its spec when a write of the controller's says so (a copy;
// d is the cache's), else d itself. The API server ignores the generation
// a write sends, so a write made from the copy is the write made from d.
func (s *specGenerations) of(d *appsv1.Deployment) *appsv1.Deployment {
	s.mu.Lock()
	g, ok := s.by[d.Namespace+"/"+d.Name]
	s.mu.Unlock()
	if !ok || g.uid != d.UID || g.generation != d.Generation || g.spec >= d.Generation {
		return d
	}
	d = d.DeepCopy()
	d.Generation = g.spec
	return d
}
