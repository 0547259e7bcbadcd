package strategies

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"plimsoll.dev/plimsoll/contract"
)

// Retiring is what a workload that switched strategy still runs of the
// previous one, as the controller observes it (see PlanRetirement).
type Retiring struct {
	// Workload is the workload's name, Target the strategy it switched to
	// (contract's names).
	Workload, Target string
	// Carrier is the Service that carries Target's traffic, by name, and
	// CarrierSelector its selector; none for rolling, whose Services
	// select every pod of the workload.
	Carrier         string
	CarrierSelector map[string]string
	// Primary: a rolling workload's Deployment <name> is there and holds
	// the primary role; Phase is the phase its plan records. The switch
	// to rolling is carried once both say so: primary, and Healthy.
	Primary bool
	Phase   Phase
	// Left are the previous strategy's Deployments still there.
	Left []*appsv1.Deployment
	// Selectors are the selectors of the Services that Left's
	// annotations name, by name; a Service that does not exist is absent.
	// Ready are the ready endpoints' pods of each, by name.
	Selectors map[string]map[string]string
	Ready     map[string][]string
	// Keep is the workload's count: the ready endpoints a Service keeps.
	Keep int32
	// Serving are the canary pods labelled serving.
	Serving []string
}

// The Services a Deployment's annotations name, and the selector key the
// strategy that wrote them steered each by.
var steeredServices = []struct{ annotation, key string }{
	{contract.AnnotationActiveService, contract.LabelColor},
	{contract.AnnotationPreviewService, contract.LabelColor},
	{contract.AnnotationService, contract.LabelServing},
}

// PlanRetirement plans the retirement of what a previous strategy left of
// a workload (r.Left), the one place it is planned. It begins once the
// new strategy carries the traffic: a rolling workload's primary
// Healthy, or the Service of blue-green or canary moved over to its key
// (see MovedOver). Then, in order:
//
//  1. every other Service the left Deployments steered loses the previous
//     strategy's key (plimsoll.dev/color, plimsoll.dev/serving), so that
//     none is left selecting pods that go; for rolling, every one of them
//     loses it, and selects the primary's pods from then on;
//  2. for rolling, the canary pods leave traffic (the serving label
//     goes);
//  3. each left Deployment is deleted once the Service it carried traffic
//     for no longer needs its pods (see Unneeded); the others wait for
//     the endpoints, whose changes plan again.
//
// done reports whether every left Deployment goes with these actions:
// the switch is then complete.
func PlanRetirement(r Retiring) (actions []Action, done bool) {
	if len(r.Left) == 0 {
		return nil, false
	}
	rolling := r.Target == contract.StrategyRolling
	carried := r.Primary && r.Phase == PhaseHealthy
	if rolling && !carried || !rolling && !MovedOver(r.Target, r.CarrierSelector) {
		return nil, false
	}
	_, old := TrafficKeys(r.Target)
	type drop struct{ service, key string }
	var drops []drop
	canary := false
	for _, d := range r.Left {
		canary = canary || strings.HasSuffix(d.Name, contract.SuffixCanary)
		for _, s := range steeredServices {
			name, key := d.Annotations[s.annotation], old
			if rolling {
				key = s.key
			}
			selector, exists := r.Selectors[name]
			if name == "" || name == r.Carrier || !exists || selector[key] == "" || slices.Contains(drops, drop{name, key}) {
				continue
			}
			drops = append(drops, drop{name, key})
			actions = append(actions, Action{Kind: ActionSelect, ServiceName: name, Drop: []string{key}})
		}
	}
	if rolling && canary {
		for _, pod := range r.Serving {
			actions = append(actions, Action{Kind: ActionUnlabel, Pod: pod})
		}
	}
	done = true
	for _, d := range r.Left {
		svc := d.Annotations[contract.AnnotationActiveService]
		if svc == "" {
			svc = d.Annotations[contract.AnnotationService]
		}
		if !Unneeded(r.Ready[svc], d.Name, r.Keep) {
			done = false
			continue
		}
		actions = append(actions, Action{Kind: ActionDelete, Deployment: strings.TrimPrefix(d.Name, r.Workload)})
	}
	return actions, done
}

// Leaving is a workload whose Deployment left Git, as the controller
// reads it from the API server (see PlanRemoval).
type Leaving struct {
	// Workload is the workload's name; Deployments are all of its
	// Deployments, <name> among them.
	Workload    string
	Deployments []*appsv1.Deployment
	// Selectors are the selectors of the Services the Deployments'
	// annotations name, by name; a Service that does not exist is absent.
	Selectors map[string]map[string]string
}

// PlanRemoval plans the retirement of a workload whose Deployment left
// Git, of what it runs besides <name>, which the sync prunes like any
// object, in an order that never narrows a Service that stays in Git:
//
//  1. each Service the workload steered loses the keys a strategy adds
//     (plimsoll.dev/color, plimsoll.dev/serving), so that it selects every
//     pod of the workload (both colors, stable and canary) and of any
//     Deployment that replaces it in Git with the same labels: never
//     fewer ready endpoints than before;
//  2. then the colors and the canary Deployment are deleted, at once:
//     nothing of the workload is Git's to wait for.
func PlanRemoval(l Leaving) []Action {
	var actions []Action
	var services []string
	for _, d := range l.Deployments {
		for _, s := range steeredServices {
			if name := d.Annotations[s.annotation]; name != "" && !slices.Contains(services, name) {
				services = append(services, name)
			}
		}
	}
	slices.Sort(services)
	for _, name := range services {
		selector, exists := l.Selectors[name]
		if exists && (selector[contract.LabelColor] != "" || selector[contract.LabelServing] != "") {
			actions = append(actions, Action{Kind: ActionSelect, ServiceName: name, Drop: []string{contract.LabelColor, contract.LabelServing}})
		}
	}
	for _, d := range l.Deployments {
		if d.Name != l.Workload {
			actions = append(actions, Action{Kind: ActionDelete, Deployment: strings.TrimPrefix(d.Name, l.Workload)})
		}
	}
	return actions
}
