package rollout

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// The informers' indexes. A lister's List with a label selector walks
// every object of the namespace: with 1,000 workloads in one namespace
// (1,000 Deployments, 2,000 ReplicaSets, 10,000 pods) each reconcile
// matched 13,000 label sets, and the reconciles that 20,000 pod events
// bring made the controller burn a core. An index finds a workload's
// objects in one map read.
const (
	// byWorkload indexes Deployments, ReplicaSets and pods by
	// "<namespace>/<plimsoll.dev/workload>".
	byWorkload = "workload"
	// byService indexes Deployments by the Services their annotations
	// name (see serviceKeys), and EndpointSlices by the Service they
	// belong to: "<namespace>/<Service>".
	byService = "service"
)

// labelIndex returns the index function that files an object under
// "<namespace>/<value of label>", and nowhere without the label:
// plimsoll.dev/workload for byWorkload, the EndpointSlice's Service name
// for byService.
func labelIndex(label string) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil
		}
		value := m.GetLabels()[label]
		if value == "" {
			return nil, nil
		}
		return []string{m.GetNamespace() + "/" + value}, nil
	}
}

// steeredIndex is the byService index function of Deployments: the
// Services a Deployment's annotations name.
func steeredIndex(obj any) ([]string, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, key := range serviceKeys {
		if name := d.Annotations[key]; name != "" {
			keys = append(keys, d.Namespace+"/"+name)
		}
	}
	return keys, nil
}

// indexes are the indexers of one view's informers.
type indexes struct {
	deploys, rsets, pods, slices cache.Indexer
}

// addIndexers adds indexers to an informer not yet started; it fails only
// on a started one, or on a name given twice, both a defect.
func addIndexers(informer cache.SharedIndexInformer, indexers cache.Indexers) {
	if err := informer.AddIndexers(indexers); err != nil {
		panic(fmt.Sprintf("add the rollout controller's indexes: %v", err))
	}
}

// indexed returns the objects of type T that indexer holds under key in
// index; the caches' own objects, not to be changed.
func indexed[T any](indexer cache.Indexer, index, key string) []T {
	objs, _ := indexer.ByIndex(index, key)
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
