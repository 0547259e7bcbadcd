package strategies

import (
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// ReadyPods returns the pods that a Service's EndpointSlices hold as ready
// endpoints, sorted and without repeats. An endpoint without a ready
// condition counts as ready, as the EndpointSlice API defines it; an
// endpoint that is not a pod counts for nothing.
func ReadyPods(endpointSlices []*discoveryv1.EndpointSlice) []string {
	var pods []string
	for _, s := range endpointSlices {
		for _, e := range s.Endpoints {
			if (e.Conditions.Ready == nil || *e.Conditions.Ready) && e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
				pods = append(pods, e.TargetRef.Name)
			}
		}
	}
	slices.Sort(pods)
	return slices.Compact(pods)
}
