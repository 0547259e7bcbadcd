package strategies

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plimsoll.dev/plimsoll/contract"
)

// SelectorCheck is what GuardSelector found of a selector a plan asks a
// Service to take: how many ready pods the Service serves now, how many the
// new selector would select, and how many it must keep.
type SelectorCheck struct {
	// Have is the Service's ready endpoints now.
	Have int32
	// Would is the ready pods the new selector selects; for a selector that
	// only drops keys it is Have, which it cannot go below.
	Would int32
	// Need is the fewest ready pods the new selector may select: the
	// strategy's promise, or Have when fewer serve already.
	Need int32
}

// Safe reports whether the selector keeps what the Service must serve.
func (s SelectorCheck) Safe() bool { return s.Would >= s.Need }

// String says what the check found: "would select 0 ready pods, fewer
// than the 4 it must keep (4 serve now)".
func (s SelectorCheck) String() string {
	return fmt.Sprintf("would select %d ready pods, fewer than the %d it must keep (%d serve now)", s.Would, s.Need, s.Have)
}

// GuardSelector checks a Service selector before it is written: the
// Service selects current now and serves the ready pods endpoints (its
// EndpointSlices' ready endpoints); next is the selector a plan asks for;
// pods are the pods that next could select (the workload's, from the
// controller's caches); promise is the fewest ready endpoints the strategy
// keeps on this Service (its replica count for blue-green's active Service
// and canary's Service, 0 for a preview Service).
//
// The new selector must select at least min(promise, len(endpoints))
// ready pods that are not being deleted: never below the promise, and,
// where fewer serve already (a revision that failed on its own), never
// fewer than serve now. Worked through with 4 replicas:
//
//	blue-green swap to green, 4 green pods Ready:       4 >= min(4, 4), safe
//	swap to green with 2 of its 4 pods Ready:           2 <  4, refused
//	{app: web, serving: "true", color: blue}, where no
//	    pod carries both labels:                        0 <  4, refused
//	canary selecting serving pods, none labelled yet:   0 <  4, refused
//	a first revision, nothing serving yet:              0 >= min(4, 0), safe
//	a key dropped (the selector only widens):           safe, whatever the pods
//
// A selector that drops keys and adds none selects every pod it selected
// before, and more: it is safe without counting, so pods the caches do not
// hold (an adopted Deployment's, say) cannot make it look unsafe. An empty
// next selects nothing (a Service without a selector has no endpoints
// managed for it).
func GuardSelector(current, next map[string]string, endpoints []string, pods []*corev1.Pod, promise int32) SelectorCheck {
	have := int32(len(endpoints))
	check := SelectorCheck{Have: have, Would: have, Need: min(promise, have)}
	if widens(current, next) {
		return check
	}
	check.Would = 0
	if len(next) == 0 {
		return check
	}
	sel := labels.SelectorFromSet(next)
	for _, p := range pods {
		if ready, _ := PodReadiness(p); ready && p.DeletionTimestamp == nil && sel.Matches(labels.Set(p.Labels)) {
			check.Would++
		}
	}
	return check
}

// widens reports whether next keeps only entries of current: it selects
// every pod current selects.
func widens(current, next map[string]string) bool {
	if len(next) == 0 {
		return false
	}
	for k, v := range next {
		if cv, ok := current[k]; !ok || cv != v {
			return false
		}
	}
	return true
}

// MovedOver reports whether a Service's selector carries the traffic of
// strategy target (contract's names, blue-green or canary): it has
// target's key (plimsoll.dev/color, plimsoll.dev/serving) and not the
// other's. Only then may what the other strategy left be retired.
func MovedOver(target string, selector map[string]string) bool {
	key, old := TrafficKeys(target)
	return selector[key] != "" && selector[old] == ""
}

// TrafficKeys returns the selector key by which strategy target (blue-green
// or canary) steers a Service's traffic, and the other strategy's:
// plimsoll.dev/color and plimsoll.dev/serving for blue-green, the other
// way round for canary.
func TrafficKeys(target string) (key, other string) {
	if target == contract.StrategyCanary {
		return contract.LabelServing, contract.LabelColor
	}
	return contract.LabelColor, contract.LabelServing
}
