package strategies

import (
	"slices"
	"strings"

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

// PodOf reports whether pod is named like a pod of Deployment deploy. A
// Deployment's pods are named "<deploy>-<template hash>-<suffix>", neither
// part with a dash, so the pods of web are told from those of web-blue:
// PodOf("web-7d9c556656-w9rcx", "web") is true,
// PodOf("web-blue-7d9c556656-w9rcx", "web") false.
func PodOf(pod, deploy string) bool {
	rest, ok := strings.CutPrefix(pod, deploy+"-")
	return ok && strings.Count(rest, "-") == 1
}

// Unneeded reports whether the pods of Deployment deploy may go, given
// ready, the ready endpoints of the Service it carried traffic for: none
// of them is deploy's, or at least keep are another's. A selector written
// a moment before may not have reached the endpoints yet, and deleting
// the pods they still hold would leave the Service short until they do.
// Worked through with keep 4: endpoints holding 4 pods of web-blue and
// none of web keep web-blue; once they hold web's 4 as well, it may go.
func Unneeded(ready []string, deploy string, keep int32) bool {
	var mine, others int32
	for _, pod := range ready {
		if PodOf(pod, deploy) {
			mine++
		} else {
			others++
		}
	}
	return mine == 0 || others >= keep
}
